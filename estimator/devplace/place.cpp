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

DevicePlacement place_graph(const OpGraph& g, const Cluster& c, const PlacementOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  if (g.nodes.empty()) throw InputError(fmt::format("{}: the graph has no operators", g.name));
  if (o.micro_batch < 1)
    throw InputError(fmt::format("micro-batch {}: give at least one sample", o.micro_batch));
  check_sizes(g, o.micro_batch, fmt::format("micro-batch {}", o.micro_batch));
  const int devices = c.total_gpus();
  if (devices > 64)
    throw InputError(fmt::format(
        "cluster '{}' has {} GPUs; device placement places one stage a device, up to 64", c.name,
        devices));
  const StageCosts sc(g, c, o);
  const size_t groups = sc.groups();
  DevicePlacement r;
  std::vector<OpSet> ideal = ideals(sc, o.max_ideals);
  const size_t n = sc.operators();
  if (ideal.empty()) {
    r.exact = false;
    r.note =
        fmt::format("more than {} ideals: placed over prefixes of the file's order", o.max_ideals);
    for (size_t k = 0; k <= n; ++k) {
      OpSet s(n);
      for (size_t i = 0; i < k; ++i) s.add(i);
      ideal.push_back(std::move(s));
    }
  }
  r.ideals = static_cast<int64_t>(ideal.size());
  const size_t count = ideal.size();
  // Stages: pairs of nested ideals, priced once per group.
  struct Pair {
    size_t to;
    std::vector<double> seconds, weights;
    double kept;
  };
  std::vector<std::vector<Pair>> next(count);
  for (size_t i = 0; i < count; ++i)
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
  double best = kInf;
  int best_p = 0;
  std::vector<size_t> best_parent, best_stage_group;
  size_t best_end = 0;
  for (int p = 1; p <= std::min<int>(devices, static_cast<int>(n)); ++p) {
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
    for (size_t code = 0; code < combos; ++code) {
      int stages = 0;
      for (size_t gi = 0; gi < groups; ++gi) stages += used(code, gi);
      const size_t at = (count - 1) * combos + code;
      const int m = o.micro_batches > 0 ? o.micro_batches : 4 * devices;
      if (stages == p && value[at] < kInf && (m + p - 1) * value[at] < best) {
        best = (m + p - 1) * value[at];
        best_p = p;
        best_end = at;
        best_parent = parent;
        best_stage_group = via;
        r.stage_s = value[at];
        r.micro_batches = m;
      }
    }
  }
  if (best == kInf) {
    r.reason = "no placement fits the devices' memory";
    return r;
  }
  r.feasible = true;
  r.step_s = best;
  // The stages, from the parents (state 0: nothing placed, no device used).
  std::vector<size_t> path;
  for (size_t at = best_end; at != 0; at = best_parent[at]) path.push_back(at);
  std::reverse(path.begin(), path.end());
  std::vector<PlacedStage> stages;
  for (size_t k = 0; k < path.size(); ++k) {
    const size_t at = path[k], from = best_parent[at], gi = best_stage_group[at];
    const OpSet stage = minus(ideal[at / combos], ideal[from / combos]);
    PlacedStage s;
    s.group = c.groups[gi].name;
    s.device = c.groups[gi].device.name;
    for (size_t i = 0; i < n; ++i)
      if (stage.has(i)) s.operators.push_back(g.nodes[static_cast<size_t>(sc.order()[i])].name);
    s.compute_s = sc.compute(gi, stage);
    s.comm_s = sc.seconds(gi, stage) - s.compute_s;
    // Stage k keeps p - k micro-batches' activations in flight (1F1B).
    s.memory_bytes =
        sc.weights(gi, stage) + static_cast<double>(best_p - static_cast<int>(k)) * sc.kept(stage);
    s.capacity_bytes = sc.capacity(gi);
    stages.push_back(std::move(s));
  }
  r.stages = std::move(stages);
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace shardcost
