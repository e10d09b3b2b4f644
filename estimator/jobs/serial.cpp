// The serial schedule-generation scheme and the brute force over it.
#include <algorithm>
#include <numeric>
#include <utility>

#include "solver.h"

namespace shardcost::jobs {
namespace {

// GPUs in use over time: from each breakpoint's time until the next one's (the last holds
// until infinity).
class Profile {
 public:
  explicit Profile(int capacity) : capacity_(capacity) { points_.push_back({0.0, 0}); }

  // The earliest start at or after 0 where `gpus` fit for `seconds`: 0 or the end of a
  // placed job (where usage drops).
  double earliest(int gpus, double seconds) const {
    for (size_t i = 0; i < points_.size(); ++i) {
      const double t = points_[i].first;
      if (i > 0 && points_[i].second >= points_[i - 1].second) continue;  // usage did not drop
      if (fits(i, t + seconds, gpus)) return t;
    }
    return points_.back().first;  // after everything: the pool is empty
  }

  void add(double start, double end, int gpus) {
    const size_t a = split(start), b = split(end);
    for (size_t i = a; i < b; ++i) points_[i].second += gpus;
  }

 private:
  // Whether gpus fit from breakpoint i's time until `until`.
  bool fits(size_t i, double until, int gpus) const {
    for (size_t k = i; k < points_.size() && points_[k].first < until; ++k)
      if (points_[k].second + gpus > capacity_) return false;
    return true;
  }
  // The index of a breakpoint at time t, made if missing.
  size_t split(double t) {
    auto it =
        std::lower_bound(points_.begin(), points_.end(), t,
                         [](const std::pair<double, int>& p, double x) { return p.first < x; });
    if (it != points_.end() && it->first == t) return static_cast<size_t>(it - points_.begin());
    const int used = std::prev(it)->second;
    // (insert may move the points: the index comes from its result alone.)
    const auto at = points_.insert(it, {t, used});
    return static_cast<size_t>(std::distance(points_.begin(), at));
  }

  int capacity_;
  std::vector<std::pair<double, int>> points_;
};

}  // namespace

void evaluate(const Instance& in, Solution& s) {
  s.makespan = 0;
  s.completion = 0;
  for (size_t j = 0; j < in.jobs(); ++j) {
    const double end = s.end(in, j);
    s.makespan = std::max(s.makespan, end);
    s.completion += in.weight[j] * end;
  }
}

Solution serial_schedule(const Instance& in, const std::vector<size_t>& order,
                         const std::vector<int>& mode) {
  Profile profile(in.capacity);
  Solution s;
  s.mode = mode;
  s.start.assign(in.jobs(), 0);
  for (size_t j : order) {
    const Mode& m = in.modes[j][static_cast<size_t>(mode[j])];
    const double t = profile.earliest(m.gpus, m.seconds);
    s.start[j] = t;
    profile.add(t, t + m.seconds, m.gpus);
  }
  evaluate(in, s);
  return s;
}

Solution brute_force(const Instance& in, ScheduleObjective objective) {
  const size_t n = in.jobs();
  std::vector<int> mode(n, 0);
  Solution best;
  bool any = false;
  while (true) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    do {
      Solution s = serial_schedule(in, order, mode);
      bool on_time = true;
      for (size_t j = 0; j < n; ++j) on_time = on_time && s.end(in, j) <= in.deadline[j] + 1e-9;
      if (on_time && (!any || s.value(objective) < best.value(objective))) {
        best = std::move(s);
        any = true;
      }
    } while (std::next_permutation(order.begin(), order.end()));
    size_t j = 0;
    while (j < n && ++mode[j] == static_cast<int>(in.modes[j].size())) mode[j++] = 0;
    if (j == n) break;
  }
  best.optimal = any;
  return best;
}

}  // namespace shardcost::jobs
