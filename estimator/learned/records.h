#pragma once
// What every fitted model's record shares: its cross-validation figures, and the strict
// readers of counts and figures (a damaged record is an InputError, never undefined
// behaviour or a crash).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace shardcost::learned {

// |predicted - measured| / measured over held-out rows.
struct CrossValidation {
  std::string split;  // "5-fold", "5-fold by (n, k)", "each size held out", ...
  size_t rows = 0;
  double median = 0, p90 = 0;
  // Some of the held-out (measured, predicted) seconds, every k-th, for report to draw.
  std::vector<std::pair<double, double>> held_out;
};

// The held-out pairs a record keeps per split, at most.
inline constexpr size_t kKeptHeldOut = 500;

// Held-out predictions as a cross-validation collects them.
class HeldOut {
 public:
  void add(double predicted_s, double measured_s);
  bool empty() const { return pairs_.empty(); }
  // Median and p90 |relative error| over all of them, and at most kKeptHeldOut pairs.
  CrossValidation summary(std::string split) const;

 private:
  std::vector<std::pair<double, double>> pairs_;  // measured, predicted
};

// A count: a whole non-negative number, never converted from anything else.
size_t count_of(const nlohmann::json&);
// A figure: a finite number.
double number_of(const nlohmann::json&);
nlohmann::json cv_json(const std::vector<CrossValidation>&);
std::vector<CrossValidation> cv_from(const nlohmann::json&);

}  // namespace shardcost::learned
