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
// them) and the StagePricing a plan's placement gives, with what the breakdown reports.
struct MixedPricing {
  std::vector<Pricer> groups;
  std::deque<Fabric> fabrics;
  std::deque<Pricer> crossings;
  StagePricing stages;
  std::vector<std::vector<size_t>> stage_groups;  // per stage, its replicas' groups
  std::vector<std::string> links;

  MixedPricing(const Cluster& c, const Strategy& s, const std::vector<ReplicaPlacement>& placed,
               bool tied_embeddings, const CostSource* costs) {
    for (size_t i = 0; i < c.groups.size(); ++i) {
      const NodeGroup& g = c.groups[i];
      groups.emplace_back(g.device, g.intra_node, c.network_of(i), g.gpus_per_node, costs);
    }
    stage_groups.resize(static_cast<size_t>(s.pp));
    for (const ReplicaPlacement& r : placed) {
      auto& list = stage_groups[static_cast<size_t>(r.stage)];
      if (std::find(list.begin(), list.end(), static_cast<size_t>(r.group)) == list.end())
        list.push_back(static_cast<size_t>(r.group));
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
      return &crossings.emplace_back(c.groups[slow].device, link, link, 1, costs);
    };
    for (int st = 0; st < s.pp; ++st) {
      const auto& gs = stage_groups[static_cast<size_t>(st)];
      std::vector<const Pricer*> replicas;
      for (size_t g : gs) replicas.push_back(&groups[g]);
      stages.replicas.push_back(std::move(replicas));
      stages.data_parallel.push_back(over(gs, fmt::format("stage {} data parallel", st)));
    }
    for (int st = 0; st + 1 < s.pp; ++st) {
      const size_t from = stage_groups[static_cast<size_t>(st)].front();
      const size_t to = stage_groups[static_cast<size_t>(st) + 1].front();
      stages.next_send.push_back(
          from == to ? &groups[from] : over({from, to}, fmt::format("stage {} -> {}", st, st + 1)));
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
  const bool mixed = c.groups.size() > 1 && placed;
  std::optional<MixedPricing> mp;
  if (mixed) {
    const bool tied = std::any_of(graph.blocks.begin(), graph.blocks.end(),
                                  [](const Block& b) { return b.tied_params > 0; });
    mp.emplace(c, s, *placed, tied && s.pp > 1, opt.costs);
  }

  Estimate e;
  e.strategy = s;
  e.parameters = w.parameters();
  e.model_flops = w.model_flops(s.gbs);
  e.memory_capacity_bytes = g.device.memory_bytes;

  // Memory: the most loaded stage; on a mixed cluster each stage against the smallest device
  // it runs on, and the least headroom reported.
  MemoryBreakdown mem = peak_stage_memory(graph, s, opt.software, layout);
  std::vector<MemoryBreakdown> stage_mem;
  if (mixed) {
    double worst = -1;
    for (int st = 0; st < s.pp; ++st) {
      const MemoryBreakdown& m =
          stage_mem.emplace_back(stage_memory(graph, s, opt.software, layout.span(st), st));
      for (size_t gi : mp->stage_groups[static_cast<size_t>(st)]) {
        const double capacity = c.groups[gi].device.memory_bytes;
        if (m.total() / capacity > worst) {
          worst = m.total() / capacity;
          mem = m;
          e.memory_capacity_bytes = capacity;
        }
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
      const auto& gs = mp->stage_groups[static_cast<size_t>(st)];
      const NodeGroup& slow =
          c.groups[gs[static_cast<size_t>(slowest_replica[static_cast<size_t>(st)])]];
      double capacity = slow.device.memory_bytes;
      for (size_t gi : gs) capacity = std::min(capacity, c.groups[gi].device.memory_bytes);
      e.stages.push_back({st, slow.name, slow.device.name, stage_seconds[static_cast<size_t>(st)],
                          stage_mem[static_cast<size_t>(st)].total(), capacity});
    }
    e.links = mp->links;
  }
  if (opt.breakdown) {
    for (int i = 0; i < kPartCount; ++i) {
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

Estimate estimate(const Workload& w, const Cluster& c, const Plan& given,
                  const EstimateOptions& opt) {
  Plan plan = given;
  plan.strategy = with_precision(given.strategy, opt.software, c);
  const Strategy& s = plan.strategy;
  if (auto why = check_strategy(w, c, s)) {
    throw InputError(fmt::format("strategy {} cannot run: {}", to_string(s), *why));
  }
  if (auto why = unsupported(opt.software, s))
    throw InputError(fmt::format("strategy {} cannot run: {}", to_string(s), *why));
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
