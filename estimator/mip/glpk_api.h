#pragma once
// The one door to GLPK (Debian: libglpk-dev): a mixed-integer program built column by
// column and row by row, solved by branch and cut, freed with its owner. The jobs scheduler's
// exact schedule and device placement's integer program share it.
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace shardcost::mip {

class MipProblem {
 public:
  MipProblem();
  ~MipProblem();
  MipProblem(const MipProblem&) = delete;
  MipProblem& operator=(const MipProblem&) = delete;

  // A column in [lo, hi] (hi = infinity: unbounded above), binary or continuous, with its
  // objective coefficient; returns its index.
  int add_column(double lo, double hi, bool binary, double objective);
  // A row lo <= sum(coef * column) <= hi (either side may be +-infinity).
  void add_row(const std::vector<std::pair<int, double>>& terms, double lo, double hi);

  // A known solution (a value per column, in the order they were added) handed to branch and
  // cut as its first incumbent; dropped here when it breaks a bound (GLPK would not check).
  void set_start(std::vector<double> values);

  enum class Status { optimal, feasible, none };
  // Minimises; none with `why` when no integer solution was found (infeasible, or the time
  // limit came first).
  Status minimise(double time_limit_s, std::string& why);
  // After minimise returned none: whether the program was proven to have no solution (not
  // merely none found in time).
  bool proven_infeasible() const;
  double value(int column) const;

  struct Impl;  // GLPK's state (its callback reaches it)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardcost::mip
