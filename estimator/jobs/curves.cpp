// Speed-up curves: each job's best plan at every GPU count it may take, from rank.
#include <fmt/format.h>
#include <fmt/ranges.h>

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

std::vector<JobCurve> job_curves(const std::vector<JobSpec>& specs, std::string_view cluster,
                                 std::optional<int> gpus, const EstimateOptions& opt) {
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
    if (spec.tokens > 0)
      curve.spec.steps = static_cast<int64_t>(std::ceil(
          spec.tokens / (static_cast<double>(spec.global_batch) * w->tokens_per_sample())));
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
      if (!plan->feasible) continue;
      curve.options.push_back(
          {g, static_cast<double>(curve.spec.steps) * plan->step_time_s, *plan});
    }
    if (curve.options.empty())
      curve.why_none = fmt::format("{} at global batch {} fits at none of the GPU counts {}",
                                   spec.model, spec.global_batch, fmt::join(counts, ", "));
    out.push_back(std::move(curve));
  }
  return out;
}

}  // namespace shardcost
