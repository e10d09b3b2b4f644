// The placement integer program (docs/seed-planners.md, "Device placement"): binary x[i][k]
// (operator i on stage k) and y[k][g] (stage k on a device of group g); continuous r[i][k] and
// s[i][k] (operator i's output received by, or sent from, stage k) and a[k] (stage k sends or
// receives anything); z, the slowest stage's seconds per micro-batch, minimised. Big-M rows
// tie a stage's time and memory to its group's. The stage prices are StageCosts' exactly.
#include "devplace/place_mip.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "mip/glpk_api.h"

namespace shardcost {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Solved {
  mip::MipProblem::Status status = mip::MipProblem::Status::none;
  bool infeasible = false;  // proven: no split into this many stages fits
  std::string why;
  Stages stages;
};

Solved solve_for(const StageCosts& sc, const Cluster& c, int p, double limit_s, double floor_s,
                 const Stages* start) {
  const size_t n = sc.operators(), groups = sc.groups(), P = static_cast<size_t>(p);
  // Rows in milliseconds and gigabytes: coefficients near 1 keep branch and cut's arithmetic
  // sound (seconds of 1e-3 beside bytes of 1e9 make it fail).
  constexpr double kMs = 1e3, kGB = 1e-9;
  mip::MipProblem m;
  std::vector<std::vector<int>> x(n, std::vector<int>(P)), y(P, std::vector<int>(groups));
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < P; ++k) x[i][k] = m.add_column(0, 1, true, 0);
  for (size_t k = 0; k < P; ++k)
    for (size_t g = 0; g < groups; ++g) y[k][g] = m.add_column(0, 1, true, 0);
  // Operators whose outputs another reads: what crosses a stage boundary.
  std::vector<std::vector<int>> r(n), s(n);
  for (size_t i = 0; i < n; ++i) {
    if (sc.consumers()[i].empty()) continue;
    for (size_t k = 0; k < P; ++k) {
      r[i].push_back(m.add_column(0, 1, false, 0));
      s[i].push_back(m.add_column(0, 1, false, 0));
    }
  }
  std::vector<int> a(P);
  for (size_t k = 0; k < P; ++k) a[k] = m.add_column(0, 1, false, 0);
  const int z = m.add_column(floor_s * kMs, kInf, false, 1);

  for (size_t i = 0; i < n; ++i) {  // each operator on one stage
    std::vector<std::pair<int, double>> row;
    for (size_t k = 0; k < P; ++k) row.emplace_back(x[i][k], 1);
    m.add_row(row, 1, 1);
  }
  for (size_t k = 0; k < P; ++k) {  // no stage empty, each on one device
    std::vector<std::pair<int, double>> ops, on;
    for (size_t i = 0; i < n; ++i) ops.emplace_back(x[i][k], 1);
    m.add_row(ops, 1, kInf);
    for (size_t g = 0; g < groups; ++g) on.emplace_back(y[k][g], 1);
    m.add_row(on, 1, 1);
  }
  for (size_t g = 0; g < groups; ++g) {  // devices of each group
    std::vector<std::pair<int, double>> row;
    for (size_t k = 0; k < P; ++k) row.emplace_back(y[k][g], 1);
    m.add_row(row, -kInf, c.groups[g].gpus());
  }
  for (size_t u = 0; u < n; ++u)
    for (size_t v : sc.consumers()[u]) {
      // Forward along every edge: v in the first k + 1 stages only where u is (the stages up
      // to each are an ideal). One row per k: a far tighter relaxation than one row comparing
      // the stage numbers.
      std::vector<std::pair<int, double>> row;
      for (size_t k = 0; k + 1 < P; ++k) {
        row.emplace_back(x[u][k], 1);
        row.emplace_back(x[v][k], -1);
        m.add_row(row, 0, kInf);
      }
      // Crossing: r >= x[v] - x[u] (received), s >= x[u] - x[v] (sent).
      for (size_t k = 0; k < P; ++k) {
        m.add_row({{r[u][k], 1}, {x[v][k], -1}, {x[u][k], 1}}, 0, kInf);
        m.add_row({{s[u][k], 1}, {x[u][k], -1}, {x[v][k], 1}}, 0, kInf);
      }
    }
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < r[i].size(); ++k) {
      m.add_row({{a[k], 1}, {r[i][k], -1}}, 0, kInf);
      m.add_row({{a[k], 1}, {s[i][k], -1}}, 0, kInf);
    }
  for (size_t g = 0; g < groups; ++g) {
    // A stage on group g: z >= its seconds there, unless it is elsewhere (big M: every
    // operator and every message on it); its memory within the device, p - k micro-batches'
    // activations in flight (1F1B), unless elsewhere.
    double big_t = 2 * sc.latency(g) * kMs, big_m = 0;
    for (size_t i = 0; i < n; ++i) {
      big_t += (sc.op_seconds(g, i) + 4 * sc.out_bytes(i) / sc.bandwidth(g)) * kMs;
      big_m += (sc.op_weights(g, i) + p * sc.op_kept(i)) * kGB;
    }
    const double cap = sc.capacity(g) * kGB;
    for (size_t k = 0; k < P; ++k) {
      std::vector<std::pair<int, double>> t{
          {z, 1}, {y[k][g], -big_t}, {a[k], -2 * sc.latency(g) * kMs}};
      std::vector<std::pair<int, double>> mem{{y[k][g], big_m}};
      for (size_t i = 0; i < n; ++i) {
        t.emplace_back(x[i][k], -sc.op_seconds(g, i) * kMs);
        mem.emplace_back(x[i][k],
                         (sc.op_weights(g, i) + static_cast<double>(P - k) * sc.op_kept(i)) * kGB);
        if (r[i].empty()) continue;
        const double send = 2 * sc.out_bytes(i) / sc.bandwidth(g) * kMs;  // forward and gradient
        t.emplace_back(r[i][k], -send);
        t.emplace_back(s[i][k], -send);
      }
      m.add_row(t, -big_t, kInf);
      m.add_row(mem, -kInf, cap + big_m);
    }
  }
  if (start && start->size() == P) {
    // The known placement as values for every column, each row's slack respected.
    std::vector<double> val(static_cast<size_t>(z), 0);
    auto set = [&](int col, double v) { val[static_cast<size_t>(col - 1)] = v; };
    double slowest = 0;
    for (size_t k = 0; k < P; ++k) {
      const auto& [stage, g] = (*start)[k];
      set(y[k][g], 1);
      slowest = std::max(slowest, sc.seconds(g, stage));
      for (size_t i = 0; i < n; ++i) {
        if (stage.has(i)) set(x[i][k], 1);
        if (r[i].empty()) continue;
        bool in = false, out_of = false;
        for (size_t v : sc.consumers()[i]) (stage.has(v) ? in : out_of) = true;
        const bool recv = !stage.has(i) && in, send = stage.has(i) && out_of;
        set(r[i][k], recv ? 1 : 0);
        set(s[i][k], send ? 1 : 0);
        if (recv || send) set(a[k], 1);
      }
    }
    set(z, std::max(slowest, floor_s) * kMs);
    m.set_start(std::move(val));
  }
  Solved out;
  out.status = m.minimise(limit_s, out.why);
  out.infeasible = m.proven_infeasible();
  if (out.status == mip::MipProblem::Status::none) return out;
  for (size_t k = 0; k < P; ++k) {
    OpSet stage(n);
    for (size_t i = 0; i < n; ++i)
      if (m.value(x[i][k]) > 0.5) stage.add(i);
    size_t group = 0;
    for (size_t g = 0; g < groups; ++g)
      if (m.value(y[k][g]) > 0.5) group = g;
    out.stages.emplace_back(std::move(stage), group);
  }
  return out;
}

}  // namespace

ProgramPlacement place_by_program(const StageCosts& sc, const Cluster& c, int micro_batches,
                                  double time_limit_s, double incumbent_step_s,
                                  const std::vector<Stages>* starts) {
  const auto start = std::chrono::steady_clock::now();
  const size_t n = sc.operators(), groups = sc.groups();
  const int most = std::min<int>(c.total_gpus(), static_cast<int>(n));
  ProgramPlacement out;
  out.micro_batches = micro_batches;
  out.optimal = true;
  double best = incumbent_step_s > 0 ? incumbent_step_s : kInf;
  // A stage count's floor: its slowest stage runs at least the work spread evenly over p
  // stages, and the costliest operator, each on its fastest group.
  double total = 0, largest = 0;
  for (size_t i = 0; i < n; ++i) {
    double fastest = kInf;
    for (size_t g = 0; g < groups; ++g) fastest = std::min(fastest, sc.op_seconds(g, i));
    total += fastest;
    largest = std::max(largest, fastest);
  }
  for (int p = 1; p <= most; ++p) {
    const double floor = (micro_batches + p - 1) * std::max(total / p, largest);
    if (floor >= best) continue;
    const double spent =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double left = time_limit_s - spent;
    if (left <= 0) {
      out.optimal = false;
      break;
    }
    const Stages* known = starts && static_cast<size_t>(p) < starts->size()
                              ? &(*starts)[static_cast<size_t>(p)]
                              : nullptr;
    const Solved s =
        solve_for(sc, c, p, left / (most - p + 1), std::max(total / p, largest), known);
    ++out.programs;
    // Proven infeasible (no split into p stages fits the memory) is as good as solved.
    if (s.status != mip::MipProblem::Status::optimal && !s.infeasible) out.optimal = false;
    if (s.status == mip::MipProblem::Status::none) {
      if (!s.infeasible) out.why = s.why;
      continue;
    }
    double slowest = 0;
    for (const auto& [stage, g] : s.stages) slowest = std::max(slowest, sc.seconds(g, stage));
    const double step = (micro_batches + p - 1) * slowest;
    if (step < best) {
      out.found = true;
      out.step_s = step;
      out.stage_s = slowest;
      out.stages = s.stages;
      best = step;
    }
  }
  if (!out.found && out.why.empty()) out.why = "no placement fits the devices' memory";
  return out;
}

}  // namespace shardcost
