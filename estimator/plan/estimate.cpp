// One plan's estimate: the workload's graph under the plan's splits, memory per stage, the
// step's schedule over priced operators, and the figures users compare (tokens/s, MFU).
#include <fmt/format.h>

#include <algorithm>

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

Estimate estimate_graph(const Workload& w, const Graph& graph, const Cluster& c, const Strategy& s,
                        const StageLayout& layout, const EstimateOptions& opt) {
  const NodeGroup& g = c.groups.front();
  const Pricer pr{g.device, g.intra_node, c.inter_node, g.gpus_per_node, opt.costs};
  const Placement place = placement(s);

  Estimate e;
  e.strategy = s;
  e.parameters = w.parameters();
  e.model_flops = w.model_flops(s.gbs);
  e.memory_capacity_bytes = g.device.memory_bytes;

  // Memory: the most loaded stage (first or last).
  const MemoryBreakdown mem = peak_stage_memory(graph, s, opt.software, layout);
  e.memory_per_gpu_bytes = mem.total();

  const Times t = step_times({graph, s, layout, opt.software, place, pr, opt.breakdown});
  e.step_time_s = t.total();
  const double gpus = c.total_gpus();
  e.tokens_per_s = static_cast<double>(s.gbs) * w.tokens_per_sample() / e.step_time_s;
  e.tflops_per_gpu = e.model_flops / e.step_time_s / gpus / 1e12;
  // MFU against the dense 16-bit peak, whatever the precision (as Megatron and NeMo report it).
  const double peak16 = std::max(g.device.peak_flops[static_cast<int>(DType::bf16)],
                                 g.device.peak_flops[static_cast<int>(DType::fp16)]);
  e.mfu = e.model_flops / e.step_time_s / gpus / peak16;
  e.feasible = e.memory_per_gpu_bytes <= e.memory_capacity_bytes;
  if (!e.feasible) {
    e.reason = fmt::format("needs {:.1f} GiB of {:.1f} GiB", e.memory_per_gpu_bytes / units::kGiB,
                           e.memory_capacity_bytes / units::kGiB);
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
  place(plan, c);  // every replica where the plan says it is
  Graph graph;
  w.graph(s, opt.software.attention, graph);
  const StageLayout layout(w.layers(), s.pp, &plan.stage_layers);
  return estimate_graph(w, graph, c, s, layout, opt);
}

}  // namespace shardcost
