// List scheduling for many jobs: modes for a target duration, priority orders, the serial
// scheme, then single-job mode moves while they help (docs/scheduling.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "solver.h"

namespace shardcost::jobs {
namespace {

// Seconds past deadlines first (0 when every job is on time), then the objective.
struct Score {
  double late = 0, value = 0;
  bool operator<(const Score& o) const {
    if (late != o.late) return late < o.late;
    return value < o.value;
  }
};

Score score(const Instance& in, const Solution& s, ScheduleObjective objective) {
  Score out{0, s.value(objective)};
  for (size_t j = 0; j < in.jobs(); ++j)
    if (std::isfinite(in.deadline[j])) out.late += std::max(0.0, s.end(in, j) - in.deadline[j]);
  return out;
}

const Mode& mode_of(const Instance& in, const std::vector<int>& mode, size_t j) {
  return in.modes[j][static_cast<size_t>(mode[j])];
}

// Per job, the mode with the least GPU-seconds among those that take at most `target`
// seconds (ties: the shorter); the shortest where none does.
std::vector<int> modes_for(const Instance& in, double target) {
  std::vector<int> out(in.jobs(), 0);
  for (size_t j = 0; j < in.jobs(); ++j) {
    int best = -1, shortest = 0;
    const auto& ms = in.modes[j];
    for (size_t k = 0; k < ms.size(); ++k) {
      if (ms[k].seconds < ms[static_cast<size_t>(shortest)].seconds) shortest = static_cast<int>(k);
      if (ms[k].seconds > target) continue;
      const double area = ms[k].gpus * ms[k].seconds;
      if (best < 0) {
        best = static_cast<int>(k);
        continue;
      }
      const Mode& b = ms[static_cast<size_t>(best)];
      const double best_area = b.gpus * b.seconds;
      if (area < best_area || (area == best_area && ms[k].seconds < b.seconds))
        best = static_cast<int>(k);
    }
    out[j] = best >= 0 ? best : shortest;
  }
  return out;
}

// The priority orders tried for a choice of modes.
std::vector<std::vector<size_t>> orders_for(const Instance& in, const std::vector<int>& mode,
                                            ScheduleObjective objective) {
  const size_t n = in.jobs();
  std::vector<size_t> base(n);
  std::iota(base.begin(), base.end(), size_t{0});
  auto sorted = [&](auto key) {
    std::vector<size_t> o = base;
    std::stable_sort(o.begin(), o.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
    return o;
  };
  auto seconds = [&](size_t j) { return mode_of(in, mode, j).seconds; };
  auto area = [&](size_t j) { return mode_of(in, mode, j).gpus * seconds(j); };
  std::vector<std::vector<size_t>> out;
  if (objective == ScheduleObjective::makespan) {
    out.push_back(sorted([&](size_t j) { return -seconds(j); }));  // longest first
    out.push_back(sorted([&](size_t j) { return -area(j); }));     // largest first
    out.push_back(sorted([&](size_t j) { return -mode_of(in, mode, j).gpus; }));
  } else {
    out.push_back(sorted([&](size_t j) { return seconds(j) / in.weight[j]; }));  // WSPT
    out.push_back(sorted([&](size_t j) { return area(j) / in.weight[j]; }));
  }
  if (std::any_of(in.deadline.begin(), in.deadline.end(),
                  [](double d) { return std::isfinite(d); }))
    out.push_back(sorted([&](size_t j) { return in.deadline[j]; }));  // earliest deadline
  return out;
}

// Per job, its fastest mode within `gpus` GPUs (-1: none).
std::vector<int> fastest_within(const Instance& in, int gpus) {
  std::vector<int> out(in.jobs(), -1);
  for (size_t j = 0; j < in.jobs(); ++j)
    for (size_t k = 0; k < in.modes[j].size(); ++k) {
      const Mode& m = in.modes[j][k];
      if (m.gpus <= gpus &&
          (out[j] < 0 || m.seconds < in.modes[j][static_cast<size_t>(out[j])].seconds))
        out[j] = static_cast<int>(k);
    }
  return out;
}

}  // namespace

Solution one_after_another(const Instance& in) {
  Solution s;
  s.mode = fastest_within(in, in.capacity);
  s.start.assign(in.jobs(), 0);
  double t = 0;
  for (size_t j = 0; j < in.jobs(); ++j) {
    s.start[j] = t;
    t += mode_of(in, s.mode, j).seconds;
  }
  evaluate(in, s);
  return s;
}

Solution even_split(const Instance& in) {
  Solution best;
  best.makespan = best.completion = INFINITY;
  for (size_t k = 1; k <= in.jobs(); ++k) {
    const std::vector<int> mode = fastest_within(in, in.capacity / static_cast<int>(k));
    if (std::any_of(mode.begin(), mode.end(), [](int m) { return m < 0; })) continue;
    std::vector<size_t> order(in.jobs());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return mode_of(in, mode, a).seconds > mode_of(in, mode, b).seconds;
    });
    Solution s;
    s.mode = mode;
    s.start.assign(in.jobs(), 0);
    std::vector<double> free_at(k, 0);
    for (size_t j : order) {
      double& part = *std::min_element(free_at.begin(), free_at.end());
      s.start[j] = part;
      part += mode_of(in, mode, j).seconds;
    }
    evaluate(in, s);
    if (s.makespan < best.makespan) best = std::move(s);
  }
  return best;
}

Solution list_schedule(const Instance& in, ScheduleObjective objective) {
  const size_t n = in.jobs();
  // Targets: the distinct durations (at most 48 of them, spread over their range), and none.
  std::vector<double> durations;
  for (const auto& ms : in.modes)
    for (const Mode& m : ms) durations.push_back(m.seconds);
  std::sort(durations.begin(), durations.end());
  durations.erase(std::unique(durations.begin(), durations.end()), durations.end());
  std::vector<double> targets;
  const size_t keep = std::min<size_t>(48, durations.size());
  for (size_t i = 0; i < keep; ++i)
    targets.push_back(durations[keep == 1 ? 0 : i * (durations.size() - 1) / (keep - 1)]);
  targets.push_back(INFINITY);

  Solution best;
  Score best_score{INFINITY, INFINITY};
  std::vector<size_t> best_order;
  auto consider = [&](const std::vector<size_t>& order, const std::vector<int>& mode) {
    Solution s = serial_schedule(in, order, mode);
    const Score sc = score(in, s, objective);
    if (sc < best_score) {
      best = std::move(s);
      best_score = sc;
      best_order = order;
      return true;
    }
    return false;
  };
  for (double target : targets) {
    const std::vector<int> mode = modes_for(in, target);
    for (const auto& order : orders_for(in, mode, objective)) consider(order, mode);
  }
  // The baselines, in the order they start jobs: the serial scheme starts each no later, so
  // the list schedule is never worse than either.
  for (const Solution& base : {one_after_another(in), even_split(in)}) {
    if (!std::isfinite(base.makespan)) continue;
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return base.start[a] < base.start[b]; });
    consider(order, base.mode);
  }

  // Moves: one job's mode at a time, kept while the schedule improves; with many jobs only
  // those that end last (they set the makespan), within a time budget.
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  for (int pass = 0; pass < 8 && elapsed() < 2.0; ++pass) {
    std::vector<size_t> jobs(n);
    std::iota(jobs.begin(), jobs.end(), size_t{0});
    std::sort(jobs.begin(), jobs.end(),
              [&](size_t a, size_t b) { return best.end(in, a) > best.end(in, b); });
    if (n > 24) jobs.resize(12);
    bool improved = false;
    for (size_t j : jobs) {
      for (size_t k = 0; k < in.modes[j].size(); ++k) {
        if (static_cast<int>(k) == best.mode[j]) continue;
        std::vector<int> mode = best.mode;
        mode[j] = static_cast<int>(k);
        const std::vector<size_t> order = best_order;
        bool took = consider(order, mode);
        for (const auto& o : orders_for(in, mode, objective)) took = consider(o, mode) || took;
        improved = improved || took;
      }
    }
    if (!improved) break;
  }
  best.optimal = false;
  return best;
}

}  // namespace shardcost::jobs
