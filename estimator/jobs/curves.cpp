// Speed-up curves: each job's best plan at every GPU count it may take, from rank.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>

#include "shardcost/error.h"
#include "shardcost/jobs.h"

namespace shardcost {

std::vector<int> offered_gpu_counts(const Cluster& c) {
  std::vector<int> out;
  const int per_node = c.groups.front().gpus_per_node;
  const int nodes = c.groups.front().nodes;
  for (int g = 1; g < per_node; g *= 2) out.push_back(g);
  for (int n = 1; n < nodes; n *= 2) out.push_back(n * per_node);
  out.push_back(nodes * per_node);
  return out;
}

namespace {

// One GPU in Hydra's model-hopping mode: the model split into shards that each take at most
// half the GPU's memory (the other half takes the next shard's state as it arrives), run one
// after another through the whole global batch, forward then backward. Per step and
// parameter the host link carries the 16-bit weights in twice (forward, backward) and the
// fp32 main gradient, master weight and Adam moments in and out (2 x 16 B); per layer and
// sequence its full-recomputation checkpoint goes out after the forward and back for the
// backward. Transfers run behind compute except the first shard's.
std::optional<JobOption> spilled(const Workload& w, const Cluster& one, const JobSpec& spec,
                                 const EstimateOptions& opt) {
  const Device& d = one.groups.front().device;
  if (d.pcie_bandwidth_Bps <= 0) return std::nullopt;
  Strategy s;
  s.gbs = spec.global_batch;
  s.recompute = Recompute::full;
  std::optional<Estimate> best;
  for (int mbs : {1, 2, 4, 8}) {
    if (spec.global_batch % mbs != 0) continue;
    s.mbs = mbs;
    if (check_strategy(w, one, s)) continue;
    Estimate e = estimate(w, one, plan_of(s), opt);  // memory is the shards' problem here
    if (!best || e.step_time_s < best->step_time_s) best = std::move(e);
  }
  if (!best) return std::nullopt;
  const double params = w.parameters();
  const int shards = static_cast<int>(std::ceil(18 * params / (0.5 * d.memory_bytes)));
  Graph g;
  Strategy one_sequence = best->strategy;
  one_sequence.mbs = 1;
  w.graph(one_sequence, opt.software.attention, g);
  const double checkpoints = 2.0 * w.layers() * spec.global_batch * g.boundary_bytes;
  const double transfer_s = (params * (2 * 2 + 2 * 16) + checkpoints) / d.pcie_bandwidth_Bps;
  const double step_s = std::max(best->step_time_s, transfer_s) + transfer_s / shards;
  JobOption o;
  o.gpus = 1;
  o.seconds = static_cast<double>(spec.steps) * step_s;
  o.plan = *best;
  o.plan.step_time_s = step_s;
  o.plan.feasible = true;
  o.plan.reason.clear();
  o.spilled_shards = shards;
  return o;
}

}  // namespace

std::vector<JobCurve> job_curves(const std::vector<JobSpec>& specs, std::string_view cluster,
                                 std::optional<int> gpus, const EstimateOptions& opt, bool spill,
                                 const Progress& progress) {
  const Cluster whole = load_cluster(cluster, gpus);
  if (whole.groups.size() > 1)
    throw InputError(
        "schedule on a mixed cluster (several node groups) is not priced yet; give a cluster of "
        "one node group");
  const std::vector<int> offered = offered_gpu_counts(whole);
  // Plans by (model, global batch, GPUs): jobs of one model and batch share their curve.
  std::map<std::tuple<std::string, int, int>, std::optional<Estimate>> best;
  std::map<std::string, std::shared_ptr<Workload>> workloads;
  std::map<int, Cluster> clusters;
  std::vector<JobCurve> out;
  for (const JobSpec& spec : specs) {
    tick(progress, "jobs' curves priced", static_cast<int64_t>(out.size()),
         static_cast<int64_t>(specs.size()));
    const std::string who = fmt::format("job '{}'", spec.name);
    JobCurve curve;
    curve.spec = spec;
    auto& w = workloads[spec.model];
    if (!w) {
      try {
        w = transformer_workload(load_model(spec.model));
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}: {}", who, e.what()));
      }
    }
    if (spec.tokens > 0) {
      const double steps = std::ceil(
          spec.tokens / (static_cast<double>(spec.global_batch) * w->tokens_per_sample()));
      if (!(steps <= 1e15))
        throw InputError(
            fmt::format("{}: tokens {:g} make {:g} steps, more than 1e15; give fewer "
                        "tokens",
                        who, spec.tokens, steps));
      curve.spec.steps = static_cast<int64_t>(steps);
    }
    const std::vector<int>& counts = spec.gpu_counts.empty() ? offered : spec.gpu_counts;
    for (int g : counts) {
      if (g > whole.total_gpus()) continue;  // not on this cluster
      auto found = clusters.find(g);
      if (found == clusters.end()) {
        try {
          found = clusters.emplace(g, load_cluster(cluster, g)).first;
        } catch (const InputError& e) {
          throw InputError(fmt::format("{}: gpus {}: {}", who, g, e.what()));
        }
      }
      auto& plan = best[{spec.model, spec.global_batch, g}];
      if (!plan) {
        RankOptions ro;
        ro.global_batch = spec.global_batch;
        ro.top = 1;
        ro.estimate = opt;
        try {
          const RankResult r = rank(*w, found->second, ro);
          plan = r.best.empty() ? Estimate{} : r.best.front();
        } catch (const InputError& e) {
          throw InputError(fmt::format("{}: {}", who, e.what()));
        }
      }
      if (!plan->feasible) {
        if (spill && g == 1)
          if (auto o = spilled(*w, found->second, curve.spec, opt)) curve.options.push_back(*o);
        continue;
      }
      curve.options.push_back(
          {g, static_cast<double>(curve.spec.steps) * plan->step_time_s, *plan, 0});
    }
    if (curve.options.empty())
      curve.why_none = fmt::format("{} at global batch {} fits at none of the GPU counts {}",
                                   spec.model, spec.global_batch, fmt::join(counts, ", "));
    out.push_back(std::move(curve));
  }
  tick(progress, "jobs' curves priced", static_cast<int64_t>(specs.size()),
       static_cast<int64_t>(specs.size()));
  return out;
}

}  // namespace shardcost
