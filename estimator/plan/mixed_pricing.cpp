// Pricing a plan stage by stage on mixed groups and TP degrees (docs/heterogeneous.md).
#include "mixed_pricing.h"

#include <fmt/format.h>

#include <algorithm>

#include "estimate_internal.h"

namespace shardcost {

MixedPricing::MixedPricing(const Workload& w, const Graph& base_graph, const Cluster& c,
                           const Strategy& st, const Placement& base_place,
                           const std::vector<ReplicaPlacement>& placed, bool tied_embeddings,
                           const EstimateOptions& opt)
    : graph(base_graph), s(st), place(base_place) {
  for (size_t i = 0; i < c.groups.size(); ++i) {
    const NodeGroup& g = c.groups[i];
    groups.emplace_back(g.device, g.intra_node, c.network_of(i), g.domain_gpus(), opt.costs);
  }
  const size_t pp = static_cast<size_t>(s.pp);
  stage_groups.resize(pp);
  ways.resize(pp);
  std::vector<std::vector<Way>> replica_ways(pp);  // every replica's, in order
  for (const ReplicaPlacement& r : placed) {
    const size_t st_i = static_cast<size_t>(r.stage), gi = static_cast<size_t>(r.group);
    auto& list = stage_groups[st_i];
    if (std::find(list.begin(), list.end(), gi) == list.end()) list.push_back(gi);
    const Way way{gi, r.tp};
    replica_ways[st_i].push_back(way);
    if (std::find(ways[st_i].begin(), ways[st_i].end(), way) == ways[st_i].end())
      ways[st_i].push_back(way);
  }
  // Over several groups: the slowest link between any two of them, on the slowest
  // group's devices.
  auto over = [&](const std::vector<size_t>& gs, const std::string& what) -> const Pricer* {
    if (gs.size() == 1) return &groups[gs.front()];
    size_t a = gs[0], b = gs[1];
    Fabric slowest = c.between(a, b);
    for (size_t x = 0; x < gs.size(); ++x)
      for (size_t y = x + 1; y < gs.size(); ++y) {
        const Fabric f = c.between(gs[x], gs[y]);
        if (f.bandwidth_Bps * f.efficiency < slowest.bandwidth_Bps * slowest.efficiency)
          a = gs[x], b = gs[y], slowest = f;
      }
    const Fabric& link = fabrics.emplace_back(slowest);
    size_t slow = gs.front();
    for (size_t g : gs)
      if (c.groups[g].device.peak16() < c.groups[slow].device.peak16()) slow = g;
    links.push_back(fmt::format("{}: {} <-> {}, {:.1f} GB/s, {:.0f} us", what, c.groups[a].name,
                                c.groups[b].name, link.bandwidth_Bps * link.efficiency / 1e9,
                                link.latency_s * 1e6));
    // The link serves every level: each message of the collective crosses it.
    return &crossings.emplace_back(c.groups[slow].device, link, link, 1, opt.costs);
  };
  const AttentionKernel kernel = opt.software.attention;
  for (size_t st_i = 0; st_i < pp; ++st_i) {
    std::vector<ReplicaPricing> units;
    for (const Way& way : ways[st_i]) units.push_back(unit(way, w, kernel));
    stages.replicas.push_back(std::move(units));
    // Collectives between replicas of different TP degrees move the largest shard: the
    // smallest degree's.
    Way largest = ways[st_i].front();
    for (const Way& way : ways[st_i])
      if (way.tp < largest.tp) largest = way;
    ReplicaPricing dp = unit(largest, w, kernel);
    dp.pricer = over(stage_groups[st_i], fmt::format("stage {} data parallel", st_i));
    stages.data_parallel.push_back(dp);
  }
  // Sends between stages: replica r of one stage to replica r of the next, each distinct
  // pair once; interleaved, the last stage sends on to the first too.
  const size_t boundaries = s.vpp > 1 ? pp : pp - 1;
  for (size_t b = 0; b < boundaries && pp > 1; ++b) {
    const size_t to_stage = (b + 1) % pp;
    std::vector<StageSend> sends;
    std::vector<std::pair<Way, Way>> seen;
    std::vector<std::pair<size_t, size_t>> crossed;
    std::vector<const Pricer*> crossing;
    for (size_t r = 0; r < replica_ways[b].size(); ++r) {
      const Way from = replica_ways[b][r], to = replica_ways[to_stage][r];
      if (std::find(seen.begin(), seen.end(), std::pair{from, to}) != seen.end()) continue;
      seen.emplace_back(from, to);
      const Pricer* link = &groups[from.group];
      if (from.group != to.group) {
        // One link line per pair of groups a boundary crosses.
        const std::pair pair{from.group, to.group};
        const auto known = std::find(crossed.begin(), crossed.end(), pair);
        if (known != crossed.end()) {
          link = crossing[static_cast<size_t>(known - crossed.begin())];
        } else {
          link = over({from.group, to.group}, fmt::format("stage {} -> {}", b, to_stage));
          crossed.push_back(pair);
          crossing.push_back(link);
        }
      }
      sends.push_back({link, unit(from, w, kernel), unit(to, w, kernel)});
    }
    stages.sends.push_back(std::move(sends));
  }
  const size_t first = stage_groups.front().front(), last = stage_groups.back().front();
  stages.tied =
      first == last || !tied_embeddings ? &groups[first] : over({first, last}, "tied embeddings");
}

ReplicaPricing MixedPricing::unit(const Way& way, const Workload& w, AttentionKernel kernel) {
  // The strategy's own degree, unless sequence parallelism has no ranks to split over there.
  if (way.tp == s.tp && (way.tp > 1 || !s.sp)) return {&groups[way.group], &graph, &s, &place};
  auto d = std::find_if(degrees.begin(), degrees.end(),
                        [&](const Degree& x) { return x.strategy.tp == way.tp; });
  if (d == degrees.end()) {
    Degree& fresh = degrees.emplace_back();
    fresh.strategy = at_degree(s, way.tp);
    w.graph(fresh.strategy, kernel, fresh.graph);
    fresh.place = placement(fresh.strategy);
    d = degrees.end() - 1;
  }
  return {&groups[way.group], &d->graph, &d->strategy, &d->place};
}

}  // namespace shardcost
