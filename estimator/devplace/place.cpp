// The placement program: ideals of the graph (sets closed under producers) in order of size;
// a stage is the difference of two nested ideals; for each stage count p, a program over
// (ideal, devices of each group used) keeps the smallest slowest stage, each stage's memory
// with the p - i micro-batches 1F1B keeps in flight on stage i.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "devplace/place_mip.h"
#include "devplace/stage_costs.h"
#include "shardcost/error.h"

namespace shardcost {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct OpSetHash {
  size_t operator()(const OpSet& s) const {
    size_t h = 1469598103934665603ull;
    for (uint64_t w : s.words) h = (h ^ w) * 1099511628211ull;
    return h;
  }
};

// Every ideal, smallest first; empty where there are more than `limit`.
std::vector<OpSet> ideals(const StageCosts& sc, int64_t limit) {
  const size_t n = sc.operators();
  std::vector<OpSet> out{OpSet(n)};
  std::unordered_map<OpSet, size_t, OpSetHash> seen{{out[0], 0}};
  for (size_t at = 0; at < out.size(); ++at) {
    const OpSet base = out[at];
    for (size_t v = 0; v < n; ++v) {
      if (base.has(v)) continue;
      bool ready = true;
      for (size_t u : sc.producers()[v]) ready = ready && base.has(u);
      if (!ready) continue;
      OpSet next = base;
      next.add(v);
      if (seen.emplace(next, out.size()).second) {
        out.push_back(std::move(next));
        if (static_cast<int64_t>(out.size()) > limit) return {};
      }
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const OpSet& a, const OpSet& b) { return a.size() < b.size(); });
  return out;
}

OpSet minus(const OpSet& j, const OpSet& i) {
  OpSet s = j;
  for (size_t w = 0; w < s.words.size(); ++w) s.words[w] &= ~i.words[w];
  return s;
}

}  // namespace

namespace {

struct Placed {
  bool found = false;
  double step_s = 0, stage_s = 0;
  Stages stages;
};

// The dynamic program over `ideal` (every ideal of the graph, or the prefixes of its order),
// smallest first: for each stage count p, over (ideal, devices of each group used), the
// smallest slowest stage. per_p (when given): the best placement into each p stages (index p;
// empty where none fits).
Placed over_ideals(const StageCosts& sc, const Cluster& c, const std::vector<OpSet>& ideal,
                   int micro_batches, std::vector<Stages>* per_p = nullptr,
                   const Progress& progress = {}) {
  const size_t groups = sc.groups();
  const size_t n = sc.operators();
  const size_t count = ideal.size();
  // Stages: pairs of nested ideals, priced once per group.
  struct Pair {
    size_t to;
    std::vector<double> seconds, weights;
    double kept;
  };
  std::vector<std::vector<Pair>> next(count);
  for (size_t i = 0; i < count; ++i) {
    tick(progress, "ideals' stages priced", static_cast<int64_t>(i), static_cast<int64_t>(count));
    for (size_t j = i + 1; j < count; ++j) {
      if (ideal[j].size() == ideal[i].size() || !ideal[i].within(ideal[j])) continue;
      const OpSet stage = minus(ideal[j], ideal[i]);
      Pair p{j, {}, {}, sc.kept(stage)};
      for (size_t gi = 0; gi < groups; ++gi) {
        p.seconds.push_back(sc.seconds(gi, stage));
        p.weights.push_back(sc.weights(gi, stage));
      }
      next[i].push_back(std::move(p));
    }
  }
  tick(progress, "ideals' stages priced", static_cast<int64_t>(count), static_cast<int64_t>(count));
  // Devices used per group, as one mixed-radix number.
  std::vector<int> cap(groups);
  std::vector<size_t> radix(groups, 1);
  size_t combos = 1;
  for (size_t gi = 0; gi < groups; ++gi) {
    cap[gi] = c.groups[gi].gpus();
    radix[gi] = combos;
    combos *= static_cast<size_t>(cap[gi] + 1);
  }
  auto used = [&](size_t code, size_t gi) {
    return static_cast<int>(code / radix[gi] % static_cast<size_t>(cap[gi] + 1));
  };
  Placed out;
  double best = kInf;
  std::vector<size_t> best_parent, best_stage_group;
  size_t best_end = 0;
  // The stages ending at state `end`, from the parents (state 0: nothing placed).
  auto stages_to = [&](size_t end, const std::vector<size_t>& parent,
                       const std::vector<size_t>& via) {
    std::vector<size_t> path;
    for (size_t at = end; at != 0; at = parent[at]) path.push_back(at);
    std::reverse(path.begin(), path.end());
    Stages s;
    for (const size_t at : path)
      s.emplace_back(minus(ideal[at / combos], ideal[parent[at] / combos]), via[at]);
    return s;
  };
  const int most = std::min<int>(c.total_gpus(), static_cast<int>(n));
  if (per_p) per_p->assign(static_cast<size_t>(most) + 1, {});
  for (int p = 1; p <= most; ++p) {
    tick(progress, "stage counts placed", p - 1, most);
    std::vector<double> value(count * combos, kInf);
    std::vector<size_t> parent(count * combos, 0), via(count * combos, 0);
    value[0] = 0;
    for (size_t i = 0; i < count; ++i)
      for (size_t code = 0; code < combos; ++code) {
        const double v = value[i * combos + code];
        if (v == kInf) continue;
        int stage = 0;
        for (size_t gi = 0; gi < groups; ++gi) stage += used(code, gi);
        if (stage >= p) continue;
        const int in_flight = p - stage;
        for (const Pair& pr : next[i])
          for (size_t gi = 0; gi < groups; ++gi) {
            if (used(code, gi) >= cap[gi]) continue;
            if (pr.weights[gi] + in_flight * pr.kept > sc.capacity(gi)) continue;
            const double t = std::max(v, pr.seconds[gi]);
            const size_t at = pr.to * combos + code + radix[gi];
            if (t < value[at]) value[at] = t, parent[at] = i * combos + code, via[at] = gi;
          }
      }
    size_t p_end = 0;
    for (size_t code = 0; code < combos; ++code) {
      int stages = 0;
      for (size_t gi = 0; gi < groups; ++gi) stages += used(code, gi);
      const size_t at = (count - 1) * combos + code;
      if (stages != p || value[at] == kInf) continue;
      if (p_end == 0 || value[at] < value[p_end]) p_end = at;
      if ((micro_batches + p - 1) * value[at] < best) {
        best = (micro_batches + p - 1) * value[at];
        best_end = at;
        best_parent = parent;
        best_stage_group = via;
        out.stage_s = value[at];
      }
    }
    if (per_p && p_end != 0) (*per_p)[static_cast<size_t>(p)] = stages_to(p_end, parent, via);
  }
  tick(progress, "stage counts placed", most, most);
  if (best == kInf) return out;
  out.found = true;
  out.step_s = best;
  out.stages = stages_to(best_end, best_parent, best_stage_group);
  return out;
}

// The stages as the result reports them; stage k keeps p - k micro-batches in flight (1F1B).
std::vector<PlacedStage> report(const OpGraph& g, const Cluster& c, const StageCosts& sc,
                                const Stages& stages) {
  std::vector<PlacedStage> out;
  const size_t n = sc.operators();
  const int p = static_cast<int>(stages.size());
  for (size_t k = 0; k < stages.size(); ++k) {
    const auto& [stage, gi] = stages[k];
    PlacedStage s;
    s.group = c.groups[gi].name;
    s.device = c.groups[gi].device.name;
    for (size_t i = 0; i < n; ++i)
      if (stage.has(i)) s.operators.push_back(g.nodes[static_cast<size_t>(sc.order()[i])].name);
    s.compute_s = sc.compute(gi, stage);
    s.comm_s = sc.seconds(gi, stage) - s.compute_s;
    s.memory_bytes =
        sc.weights(gi, stage) + static_cast<double>(p - static_cast<int>(k)) * sc.kept(stage);
    s.capacity_bytes = sc.capacity(gi);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

DevicePlacement place_graph(const OpGraph& g, const Cluster& c, const PlacementOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  if (g.nodes.empty()) throw InputError(fmt::format("{}: the graph has no operators", g.name));
  // The stage costs and the program over ideals grow faster than the operators (a chain of
  // 2,000: 21 s and 300 MB on 2 cores; 5,000: past a minute): bounded before either starts.
  constexpr size_t kMaxOperators = 2000;
  if (g.nodes.size() > kMaxOperators)
    throw InputError(fmt::format(
        "{}: {} operators; place takes graphs of up to 2,000 (its program grows faster than "
        "them); fuse the graph (export with constant folding, onnx-simplifier) or plan it with "
        "rank's layer-wise search",
        g.name, g.nodes.size()));
  if (o.micro_batch < 1)
    throw InputError(fmt::format("micro-batch {}: give at least one sample", o.micro_batch));
  check_sizes(g, o.micro_batch, fmt::format("micro-batch {}", o.micro_batch));
  const int devices = c.total_gpus();
  if (devices > 64)
    throw InputError(fmt::format(
        "cluster '{}' has {} GPUs; device placement places one stage a device, up to 64", c.name,
        devices));
  const StageCosts sc(g, c, o);
  const size_t n = sc.operators();
  DevicePlacement r;
  r.micro_batches = o.micro_batches > 0 ? o.micro_batches : 4 * devices;
  Placed placed;
  // The prefixes of the file's order are ideals too: the program over them is quick, and its
  // placement for each stage count starts the integer program's search.
  auto prefixes = [n] {
    std::vector<OpSet> out;
    for (size_t k = 0; k <= n; ++k) {
      OpSet s(n);
      for (size_t i = 0; i < k; ++i) s.add(i);
      out.push_back(std::move(s));
    }
    return out;
  };
  std::vector<Stages> starts;
  std::string program_why;  // the integer program found nothing, not proven none exists: why
  auto by_program = [&](double incumbent) {
    const ProgramPlacement mp =
        place_by_program(sc, c, r.micro_batches, o.program_time_s, incumbent, &starts);
    r.programs = mp.programs;
    if (!mp.found && !mp.optimal)
      program_why = fmt::format(
          "the integer program found no placement ({}); give it more "
          "--solver-time",
          mp.why.empty() ? "stopped at its time limit" : mp.why);
    return mp;
  };
  if (o.solver == PlacementOptions::Solver::program) {
    (void)over_ideals(sc, c, prefixes(), r.micro_batches, &starts);
    const ProgramPlacement mp = by_program(0);
    r.exact = mp.optimal;
    r.note = fmt::format("integer program (GLPK) over {} stage counts{}", mp.programs,
                         mp.optimal ? "" : fmt::format(", stopped at {:.0f} s", o.program_time_s));
    if (mp.found) placed = {true, mp.step_s, mp.stage_s, mp.stages};
  } else {
    std::vector<OpSet> ideal = ideals(sc, o.max_ideals);
    if (!ideal.empty()) {
      r.ideals = static_cast<int64_t>(ideal.size());
      placed = over_ideals(sc, c, ideal, r.micro_batches, nullptr, o.progress);
    } else {
      // Too many ideals: the program over prefixes of the file's order, then the integer
      // program over every placement, bounded and started by it.
      ideal = prefixes();
      r.ideals = static_cast<int64_t>(ideal.size());
      placed = over_ideals(sc, c, ideal, r.micro_batches, &starts);
      const ProgramPlacement mp = by_program(placed.found ? placed.step_s : 0);
      const bool program_better = mp.found && (!placed.found || mp.step_s < placed.step_s);
      if (program_better) placed = {true, mp.step_s, mp.stage_s, mp.stages};
      // Proven optimal: the program's own, or the prefixes' when no stage count beat them.
      r.exact = mp.optimal;
      r.note = fmt::format(
          "more than {} ideals: the integer program (GLPK, {} stage counts{}) beside the program "
          "over prefixes of the file's order; the {} placed it",
          o.max_ideals, mp.programs,
          mp.optimal ? "" : fmt::format(", stopped at {:.0f} s", o.program_time_s),
          program_better ? "integer program" : "prefixes");
    }
  }
  if (!placed.found) {
    r.reason = program_why.empty() ? "no placement fits the devices' memory" : program_why;
    return r;
  }
  r.feasible = true;
  r.step_s = placed.step_s;
  r.stage_s = placed.stage_s;
  r.stages = report(g, c, sc, placed.stages);
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace shardcost
