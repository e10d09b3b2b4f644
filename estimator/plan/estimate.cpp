// One plan's estimate: the workload's graph under the plan's splits, memory per stage, the
// step's schedule over priced operators, and the figures users compare (tokens/s, MFU).
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <optional>

#include "estimate_internal.h"
#include "memory.h"
#include "schedule.h"
#include "shardcost/error.h"
#include "shardcost/units.h"

namespace shardcost {

bool GraphCache::Key::operator==(const Key& o) const {
  return tp == o.tp && cp == o.cp && ep == o.ep && mbs == o.mbs && sp == o.sp &&
         kernel == o.kernel && cp_kind == o.cp_kind && precision == o.precision;
}

const Graph& GraphCache::get(const Workload& w, const Strategy& s, AttentionKernel kernel) {
  const Key key{s.tp, s.cp, s.ep, s.mbs, s.sp, kernel, s.cp_kind, s.precision};
  for (Entry& e : entries_)
    if (e.filled && e.key == key) return e.graph;
  Entry& e = entries_[next_];
  next_ = (next_ + 1) % entries_.size();
  w.graph(s, kernel, e.graph);
  e.key = key;
  e.filled = true;
  return e.graph;
}

namespace {

// Pricers of a mixed cluster (each group's; a message between groups over the link between
// them), the graph, strategy and placement of each TP degree the plan's replicas have, and
// the StagePricing a plan's placement gives, with what the breakdown reports.
struct MixedPricing {
  struct Way {
    size_t group = 0;
    int tp = 1;
    bool operator==(const Way& o) const { return group == o.group && tp == o.tp; }
  };
  std::vector<Pricer> groups;
  std::deque<Fabric> fabrics;
  std::deque<Pricer> crossings;
  struct Degree {
    Strategy strategy;
    Graph graph;
    Placement place;
  };
  std::deque<Degree> degrees;  // beyond the strategy's own
  const Graph& graph;
  const Strategy& s;
  const Placement& place;
  StagePricing stages;
  std::vector<std::vector<Way>> ways;             // per stage, parallel to stages.replicas
  std::vector<std::vector<size_t>> stage_groups;  // per stage, its replicas' groups
  std::vector<std::string> links;

  // The strategy, graph and placement of replicas with `tp` ranks.
  ReplicaPricing unit(const Way& way, const Workload& w, AttentionKernel kernel) {
    // The strategy's own degree, unless sequence parallelism has no ranks to split over there.
    if (way.tp == s.tp && (way.tp > 1 || !s.sp)) return {&groups[way.group], &graph, &s, &place};
    auto d = std::find_if(degrees.begin(), degrees.end(),
                          [&](const Degree& x) { return x.strategy.tp == way.tp; });
    if (d == degrees.end()) {
      Degree& fresh = degrees.emplace_back();
      fresh.strategy = s;
      fresh.strategy.tp = way.tp;
      fresh.strategy.sp = s.sp && way.tp > 1;
      w.graph(fresh.strategy, kernel, fresh.graph);
      fresh.place = placement(fresh.strategy);
      d = degrees.end() - 1;
    }
    return {&groups[way.group], &d->graph, &d->strategy, &d->place};
  }

  MixedPricing(const Workload& w, const Graph& base_graph, const Cluster& c, const Strategy& st,
               const Placement& base_place, const std::vector<ReplicaPlacement>& placed,
               bool tied_embeddings, const EstimateOptions& opt)
      : graph(base_graph), s(st), place(base_place) {
    for (size_t i = 0; i < c.groups.size(); ++i) {
      const NodeGroup& g = c.groups[i];
      groups.emplace_back(g.device, g.intra_node, c.network_of(i), g.gpus_per_node, opt.costs);
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
        if (c.groups[g].device.peak_flops[static_cast<int>(DType::bf16)] <
            c.groups[slow].device.peak_flops[static_cast<int>(DType::bf16)])
          slow = g;
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
};

}  // namespace

Estimate estimate_graph(const Workload& w, const Graph& graph, const Cluster& c, const Strategy& s,
                        const StageLayout& layout, const EstimateOptions& opt,
                        const std::vector<ReplicaPlacement>* placed) {
  const NodeGroup& g = c.groups.front();
  const Pricer pr{g.device, g.intra_node, c.network_of(0), g.gpus_per_node, opt.costs};
  const Placement place = placement(s);
  // Priced stage by stage where the groups differ, or the replicas' TP degrees do.
  const bool mixed =
      placed &&
      (c.groups.size() > 1 || std::any_of(placed->begin(), placed->end(),
                                          [&](const ReplicaPlacement& r) { return r.tp != s.tp; }));
  std::optional<MixedPricing> mp;
  if (mixed) {
    const bool tied = std::any_of(graph.blocks.begin(), graph.blocks.end(),
                                  [](const Block& b) { return b.tied_params > 0; });
    mp.emplace(w, graph, c, s, place, *placed, tied && s.pp > 1, opt);
  }

  Estimate e;
  e.strategy = s;
  e.parameters = w.parameters();
  e.model_flops = w.model_flops(s.gbs);
  e.memory_capacity_bytes = g.device.memory_bytes;

  // Memory: the most loaded stage; on a mixed cluster each stage's replicas against their own
  // devices, and the least headroom reported.
  MemoryBreakdown mem = peak_stage_memory(graph, s, opt.software, layout);
  std::vector<MemoryBreakdown> stage_mem;
  std::vector<double> stage_capacity;
  if (mixed) {
    double worst = -1;
    for (int st = 0; st < s.pp; ++st) {
      const size_t si = static_cast<size_t>(st);
      double stage_worst = -1;
      MemoryBreakdown stage_m;
      double stage_cap = 0;
      for (size_t k = 0; k < mp->ways[si].size(); ++k) {
        const ReplicaPricing& u = mp->stages.replicas[si][k];
        const MemoryBreakdown m =
            stage_memory(*u.graph, *u.strategy, opt.software, layout.span(st), st);
        const double capacity = c.groups[mp->ways[si][k].group].device.memory_bytes;
        if (m.total() / capacity > stage_worst)
          stage_worst = m.total() / capacity, stage_m = m, stage_cap = capacity;
      }
      stage_mem.push_back(stage_m);
      stage_capacity.push_back(stage_cap);
      if (stage_worst > worst) {
        worst = stage_worst;
        mem = stage_m;
        e.memory_capacity_bytes = stage_cap;
      }
    }
  }
  e.memory_per_gpu_bytes = mem.total();

  std::vector<double> stage_seconds;
  std::vector<int> slowest_replica;
  ScheduleInputs in{graph, s, layout, opt.software, place, pr, opt.breakdown};
  if (mixed) {
    in.stages = &mp->stages;
    in.stage_seconds = &stage_seconds;
    in.stage_replicas = &slowest_replica;
  }
  const Times t = step_times(in);
  e.step_time_s = t.total();
  const double gpus = c.total_gpus();
  e.tokens_per_s = static_cast<double>(s.gbs) * w.tokens_per_sample() / e.step_time_s;
  e.tflops_per_gpu = e.model_flops / e.step_time_s / gpus / 1e12;
  // MFU against the dense 16-bit peak, whatever the precision (as Megatron and NeMo report it),
  // summed over the cluster's devices.
  double peak16 = 0;
  for (const auto& grp : c.groups)
    peak16 += grp.gpus() * std::max(grp.device.peak_flops[static_cast<int>(DType::bf16)],
                                    grp.device.peak_flops[static_cast<int>(DType::fp16)]);
  e.mfu = e.model_flops / e.step_time_s / peak16;
  e.feasible = e.memory_per_gpu_bytes <= e.memory_capacity_bytes;
  if (!e.feasible) {
    e.reason = fmt::format("needs {:.1f} GiB of {:.1f} GiB", e.memory_per_gpu_bytes / units::kGiB,
                           e.memory_capacity_bytes / units::kGiB);
  }
  if (mixed) {
    for (int st = 0; st < s.pp; ++st) {
      const size_t si = static_cast<size_t>(st);
      const auto& way = mp->ways[si][static_cast<size_t>(slowest_replica[si])];
      const NodeGroup& slow = c.groups[way.group];
      e.stages.push_back({st, slow.name, slow.device.name, way.tp, stage_seconds[si],
                          stage_mem[si].total(), stage_capacity[si]});
    }
    e.links = mp->links;
  }
  if (opt.breakdown) {
    for (int i = 0; i < kPartCount; ++i) {
      if (i == kReshard && !mixed) continue;  // only plans with several meshes reshard
      const Cost priced = t.part(i);
      TimePart part{kPartNames[i], t.s[i], priced.main_origin(), {}};
      for (size_t k = 0; k < kOriginCount; ++k)
        if (priced.by[k] > 0) part.sources.emplace_back(static_cast<CostOrigin>(k), priced.by[k]);
      e.time.push_back(std::move(part));
    }
    e.memory = {{"weights", mem.weights},
                {"gradients", mem.gradients},
                {"optimizer_state", mem.optimizer},
                {"activations", mem.activations},
                {"buffers", mem.buffers}};
  }
  return e;
}

namespace {

// A plan file whose replicas differ in TP degree (by stage or within one): the GPUs they take,
// and each degree's own rules (heads, sequence parallelism), named by the first replica that
// has it.
void check_degrees(const Workload& w, const Cluster& c, const Plan& plan, const Software& sw) {
  const Strategy& s = plan.strategy;
  int64_t gpus = 0;
  std::vector<int> seen;
  for (size_t i = 0; i < plan.stages.size(); ++i)
    for (size_t r = 0; r < plan.stages[i].replicas.size(); ++r) {
      const int tp = plan.stages[i].replicas[r].tp;
      gpus += static_cast<int64_t>(tp) * s.cp;
      if (std::find(seen.begin(), seen.end(), tp) != seen.end()) continue;
      seen.push_back(tp);
      Strategy v = s;
      v.stage_tp.clear();
      v.tp = tp;
      v.sp = s.sp && tp > 1;
      auto why = check_strategy_shape(w, c, v);
      if (!why) why = unsupported(sw, v);
      if (why)
        throw InputError(
            fmt::format("plan stages[{}] replicas[{}]: tp={} cannot run: {}", i, r, tp, *why));
    }
  if (gpus != c.total_gpus())
    throw InputError(fmt::format(
        "plan: its replicas take {} GPUs (tp*cp each) but the cluster has {}; give every GPU a "
        "replica, or size the cluster with --gpus",
        gpus, c.total_gpus()));
}

}  // namespace

Estimate estimate(const Workload& w, const Cluster& c, const Plan& given,
                  const EstimateOptions& opt) {
  Plan plan = given;
  plan.strategy = with_precision(given.strategy, opt.software, c);
  Strategy& s = plan.strategy;
  // A plan file whose replicas differ in degree: its own checks, naming the replica; a
  // degree per stage from --strategy is stage_tp, which check_strategy knows.
  const bool per_replica =
      std::any_of(plan.stages.begin(), plan.stages.end(), [&](const StagePlan& st) {
        return std::any_of(st.replicas.begin(), st.replicas.end(),
                           [&](const Replica& r) { return r.tp != s.tp; });
      });
  if (per_replica) {
    check_degrees(w, c, plan, opt.software);
  } else {
    if (auto why = check_strategy(w, c, s))
      throw InputError(fmt::format("strategy {} cannot run: {}", to_string(s), *why));
    if (auto why = unsupported(opt.software, s))
      throw InputError(fmt::format("strategy {} cannot run: {}", to_string(s), *why));
  }
  if (!plan.stage_layers.empty()) {
    if (auto why = check_stage_layers(w, s, plan.stage_layers))
      throw InputError(fmt::format("plan cannot run: {}", *why));
  }
  const std::vector<ReplicaPlacement> placed = place(plan, c);  // where the plan says
  Graph graph;
  w.graph(s, opt.software.attention, graph);
  const StageLayout layout(w.layers(), s.pp, &plan.stage_layers);
  return estimate_graph(w, graph, c, s, layout, opt, &placed);
}

}  // namespace shardcost
