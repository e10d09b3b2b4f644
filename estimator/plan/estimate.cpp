// One plan's estimate: the workload's graph under the plan's splits, memory per stage, the
// step's schedule over priced operators, and the figures users compare (tokens/s, MFU).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>

#include "estimate_internal.h"
#include "memory.h"
#include "mixed_pricing.h"
#include "schedule.h"
#include "shardcost/error.h"
#include "shardcost/units.h"

namespace shardcost {

bool GraphCache::Key::operator==(const Key& o) const {
  return tp == o.tp && cp == o.cp && ep == o.ep && etp == o.etp && modules == o.modules &&
         mbs == o.mbs && sp == o.sp && kernel == o.kernel && cp_kind == o.cp_kind &&
         precision == o.precision;
}

const Graph& GraphCache::get(const Workload& w, const Strategy& s, AttentionKernel kernel) {
  const Key key{s.tp, s.cp,   s.ep,      s.expert_tp(), s.mbs, s.recompute_modules,
                s.sp, kernel, s.cp_kind, s.precision};
  for (Entry& e : entries_)
    if (e.filled && e.key == key) return e.graph;
  Entry& e = entries_[next_];
  next_ = (next_ + 1) % entries_.size();
  w.graph(s, kernel, e.graph);
  e.key = key;
  e.filled = true;
  return e.graph;
}

Estimate estimate_graph(const Workload& w, const Graph& graph, const Cluster& c, const Strategy& s,
                        const StageLayout& layout, const EstimateOptions& opt,
                        const std::vector<ReplicaPlacement>* placed, StageBalance* balance,
                        const MemoryGate* gate) {
  const NodeGroup& g = c.groups.front();
  const Pricer pr{g.device, g.intra_node, c.network_of(0), g.domain_gpus(), opt.costs};
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
  e.model_flops = w.trained_flops(s);
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
  if (mixed && gate) {
    std::vector<double> need;
    for (const MemoryBreakdown& m : stage_mem) need.push_back(m.total());
    if (!(*gate)(need, stage_capacity)) {
      e.step_time_s = std::numeric_limits<double>::infinity();
      e.feasible = false;
      e.reason = fmt::format("needs {:.1f} GiB of {:.1f} GiB", e.memory_per_gpu_bytes / units::kGiB,
                             e.memory_capacity_bytes / units::kGiB);
      return e;
    }
  }

  std::vector<double> stage_seconds;
  std::vector<int> slowest_replica;
  ScheduleInputs in{graph, s, layout, opt.software, place, pr, opt.breakdown};
  if (mixed) {
    in.stages = &mp->stages;
    in.stage_seconds = &stage_seconds;
    in.stage_replicas = &slowest_replica;
  }
  // The balance on one group; step_times finds it where its schedule has stages to balance.
  const bool balancing = balance && !mixed && c.groups.size() == 1;
  if (balance) balance->layers.clear();
  if (balancing) {
    in.balanced_layers = &balance->layers;
    if (balance->worth) in.balance_if = &balance->worth;
  }
  const Times t = step_times(in);
  if (balancing && !balance->layers.empty()) {
    bool same = true;
    for (int st = 0; st < s.pp; ++st)
      same = same && balance->layers[static_cast<size_t>(st)] == layout.units(st);
    if (same) balance->layers.clear();
  }
  e.step_time_s = t.total();
  // The data-parallel replicas load distinct samples (a replica's other ranks load the same
  // ones, or receive them from the one that does); each loads while the step before computes.
  if (opt.loading) {
    e.input = input_budget(*opt.loading, static_cast<double>(s.gbs), s.dp, e.step_time_s);
    e.step_time_s += e.input->wait_s;
  }
  const double gpus = c.total_gpus();
  e.tokens_per_s = static_cast<double>(s.gbs) * w.tokens_per_sample() / e.step_time_s;
  e.tflops_per_gpu = e.model_flops / e.step_time_s / gpus / 1e12;
  // MFU against the dense 16-bit peak, whatever the precision (as Megatron and NeMo report it),
  // summed over the cluster's devices.
  double peak16 = 0;
  for (const auto& grp : c.groups) peak16 += grp.gpus() * grp.device.peak16();
  e.mfu = e.model_flops / e.step_time_s / peak16;
  e.feasible = e.memory_per_gpu_bytes <= e.memory_capacity_bytes;
  if (s.dp_sync != DpSync::sync)
    e.dp_sync = DataParallelSync{s.dp_sync,      s.dp_sync_steps,
                                 t.dp_staleness, t.dp_exchange_s,
                                 e.step_time_s,  e.step_time_s / std::max<int64_t>(1, s.gbs)};
  e.memory_near_limit = std::abs(e.memory_per_gpu_bytes - e.memory_capacity_bytes) <=
                        kMemoryVerdictUncertainty * e.memory_capacity_bytes;
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
      if (i == kReshard && !mixed) continue;          // only plans with several meshes reshard
      if (i == kHostLaunch && t.s[i] <= 0) continue;  // said only where the host holds a step
      const Cost priced = t.part(i);
      TimePart part{kPartNames[i], t.s[i], priced.main_origin(), {}};
      for (size_t k = 0; k < kOriginCount; ++k)
        if (priced.by[k] > 0) part.sources.emplace_back(static_cast<CostOrigin>(k), priced.by[k]);
      e.time.push_back(std::move(part));
    }
    if (e.input)  // with a loader given, even when it keeps up
      e.time.push_back({"input_wait", e.input->wait_s, CostOrigin::catalog, {}, true});
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
      const Strategy v = at_degree(s, tp);
      auto why = check_strategy_shape(w, c, v);
      if (!why) why = unsupported(sw, v);
      if (why)
        throw InputError(
            fmt::format("plan stages[{}] replicas[{}]: tp={} cannot run: {}", i, r, tp, *why));
    }
  if (gpus != c.total_gpus())
    throw InputError(fmt::format(
        "plan: its replicas take {} GPUs (tp*cp each) but the cluster has {}; give every GPU a "
        "replica, or take whole nodes of each group it names (or part of one node)",
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
