// The exact scheduler: a mixed-integer program over continuous start times. GPUs pass from
// job to job as a flow (Artigues, Michelon and Reusser, 2003): a job takes its GPUs from the
// pool at time 0 or from jobs that ended before it starts, and hands them on when it ends, so
// no instant holds more than the pool. Each job picks one mode (a GPU count and duration).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "mip/glpk_api.h"
#include "solver.h"

namespace shardcost::jobs {

bool exact_schedule(const Instance& in, ScheduleObjective objective, double time_limit_s,
                    Solution& out, std::string& why) {
  const size_t n = in.jobs();
  const double cap = in.capacity;
  // Times in units of the longest mode: coefficients near 1 keep the program well scaled.
  double longest = 0, horizon = 0;
  for (const auto& ms : in.modes) {
    double job_longest = 0;
    for (const Mode& m : ms) job_longest = std::max(job_longest, m.seconds);
    longest = std::max(longest, job_longest);
    horizon += job_longest;  // one job after another, each in its longest mode
  }
  if (longest <= 0) longest = 1;
  // The big M and the makespan's bound: no better schedule ends later than the list
  // schedule's (for the makespan), or than every job one after another.
  const Solution known = list_schedule(in, objective);
  bool on_time = true;
  for (size_t j = 0; j < n; ++j) on_time = on_time && known.end(in, j) <= in.deadline[j];
  const bool makespan = objective == ScheduleObjective::makespan;
  const double M = (makespan && on_time ? std::min(horizon, known.makespan) : horizon) / longest;
  auto scaled = [&](double seconds) { return seconds / longest; };

  mip::MipProblem p;
  // Modes: z[j][k] binary, one per job.
  std::vector<std::vector<int>> z(n);
  for (size_t j = 0; j < n; ++j) {
    std::vector<std::pair<int, double>> one;
    for (size_t k = 0; k < in.modes[j].size(); ++k) {
      // The completion objective: the weighted end, start plus the mode's duration.
      const double c = makespan ? 0 : in.weight[j] * scaled(in.modes[j][k].seconds);
      z[j].push_back(p.add_column(0, 1, true, c));
      one.emplace_back(z[j].back(), 1.0);
    }
    p.add_row(one, 1, 1);
  }
  // Starts and the makespan.
  std::vector<int> start(n);
  for (size_t j = 0; j < n; ++j) start[j] = p.add_column(0, M, false, makespan ? 0 : in.weight[j]);
  const int cmax = p.add_column(0, M, false, makespan ? 1 : 0);
  // The pool's GPU-seconds bound the makespan: cmax >= sum(gpus * seconds) / capacity.
  {
    std::vector<std::pair<int, double>> area{{cmax, 1}};
    for (size_t j = 0; j < n; ++j)
      for (size_t k = 0; k < in.modes[j].size(); ++k)
        area.emplace_back(z[j][k], -in.modes[j][k].gpus * scaled(in.modes[j][k].seconds) / cap);
    p.add_row(area, 0, INFINITY);
  }
  auto duration_terms = [&](size_t j, double sign) {
    std::vector<std::pair<int, double>> t;
    for (size_t k = 0; k < in.modes[j].size(); ++k)
      t.emplace_back(z[j][k], sign * scaled(in.modes[j][k].seconds));
    return t;
  };
  auto gpu_terms = [&](size_t j, double sign) {
    std::vector<std::pair<int, double>> t;
    for (size_t k = 0; k < in.modes[j].size(); ++k)
      t.emplace_back(z[j][k], sign * in.modes[j][k].gpus);
    return t;
  };
  for (size_t j = 0; j < n; ++j) {
    // cmax >= start + duration; start + duration <= deadline.
    auto row = duration_terms(j, -1);
    row.emplace_back(cmax, 1);
    row.emplace_back(start[j], -1);
    p.add_row(row, 0, INFINITY);
    if (std::isfinite(in.deadline[j])) {
      auto d = duration_terms(j, 1);
      d.emplace_back(start[j], 1);
      p.add_row(d, -INFINITY, scaled(in.deadline[j]));
    }
  }
  // Order and flow between jobs: y[i][j] = 1 when i ends before j starts; f[i][j] the GPUs i
  // hands to j (none unless it precedes j). Node n is the pool at time 0, node n+1 the pool
  // at the end.
  const size_t source = n, sink = n + 1;
  std::vector<std::vector<int>> y(n, std::vector<int>(n, 0));
  std::vector<std::vector<int>> f(n + 2, std::vector<int>(n + 2, 0));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      if (i != j) y[i][j] = p.add_column(0, 1, true, 0);
  for (size_t i = 0; i < n + 2; ++i)
    for (size_t j = 0; j < n + 2; ++j) {
      const bool from = i < n || i == source, to = j < n || j == sink;
      if (i == j || !from || !to || (i == source && j == source)) continue;
      f[i][j] = p.add_column(0, cap, false, 0);
    }
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      // start_j >= start_i + duration_i - M (1 - y_ij).
      auto row = duration_terms(i, -1);
      row.emplace_back(start[j], 1);
      row.emplace_back(start[i], -1);
      row.emplace_back(y[i][j], -M);
      p.add_row(row, -M, INFINITY);
      // f_ij <= cap * y_ij.
      p.add_row({{f[i][j], 1}, {y[i][j], -cap}}, -INFINITY, 0);
      if (i < j) {
        // One of any two jobs runs first when together they need more than the pool in
        // every pair of their modes.
        int least = in.capacity + 1, least_other = in.capacity + 1;
        for (const Mode& m : in.modes[i]) least = std::min(least, m.gpus);
        for (const Mode& m : in.modes[j]) least_other = std::min(least_other, m.gpus);
        p.add_row({{y[i][j], 1}, {y[j][i], 1}}, least + least_other > in.capacity ? 1 : -INFINITY,
                  1);
      }
    }
  for (size_t j = 0; j < n; ++j) {
    // In and out: the job's GPUs, whichever mode it runs in.
    auto in_row = gpu_terms(j, -1);
    auto out_row = gpu_terms(j, -1);
    for (size_t i = 0; i < n + 2; ++i)
      if (f[i][j]) in_row.emplace_back(f[i][j], 1);
    for (size_t k = 0; k < n + 2; ++k)
      if (f[j][k]) out_row.emplace_back(f[j][k], 1);
    p.add_row(in_row, 0, 0);
    p.add_row(out_row, 0, 0);
  }
  std::vector<std::pair<int, double>> from_pool, to_pool;
  for (size_t k = 0; k < n + 2; ++k)
    if (f[source][k]) from_pool.emplace_back(f[source][k], 1);
  for (size_t i = 0; i < n + 2; ++i)
    if (f[i][sink]) to_pool.emplace_back(f[i][sink], 1);
  p.add_row(from_pool, cap, cap);
  p.add_row(to_pool, cap, cap);

  const mip::MipProblem::Status status = p.minimise(time_limit_s, why);
  if (status == mip::MipProblem::Status::none) {
    // In the scheduler's words.
    if (p.proven_infeasible())
      why = "no schedule meets every deadline";
    else if (why.find("within") != std::string::npos)
      why = fmt::format("no schedule within the exact solver's {:.0f} s", time_limit_s);
    // In time, the program found nothing better: the list schedule stands, unproven.
    if (on_time && why.find("within") != std::string::npos) {
      out = known;
      out.optimal = false;
      return true;
    }
    return false;
  }
  // The program's modes, and its starts as an order: the serial scheme in that order starts
  // every job no later than the program did (left-shifted), which cleans its rounding too.
  out.mode.assign(n, 0);
  std::vector<double> starts(n);
  for (size_t j = 0; j < n; ++j) {
    size_t chosen = 0;
    for (size_t k = 0; k < z[j].size(); ++k)
      if (p.value(z[j][k]) > p.value(z[j][chosen])) chosen = k;
    out.mode[j] = static_cast<int>(chosen);
    starts[j] = p.value(start[j]);
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return starts[a] < starts[b]; });
  const std::vector<int> mode = out.mode;
  out = serial_schedule(in, order, mode);
  out.optimal = status == mip::MipProblem::Status::optimal;
  // Unproven: the better of the program's and the list schedule.
  if (!out.optimal && on_time && known.value(objective) < out.value(objective)) out = known;
  return true;
}

}  // namespace shardcost::jobs
