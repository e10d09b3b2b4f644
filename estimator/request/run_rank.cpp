// rank: the search the request asks for (fixed-length, variable-length data, the best plan of
// each segment of a bandwidth trace, or an operator graph's layer-wise search), ordered as far
// as the evidence orders them, and what would fit where nothing does.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "request_inputs.h"
#include "shardcost/error.h"

namespace shardcost {
namespace {

// Nothing feasible: what would fit (the fewest GPUs, doubling, up to 65,536, that hold a plan;
// one-group clusters only).
std::string what_fits(const PlanRequest& a, const Model& m, const Cluster& c,
                      const RankOptions& ro) {
  std::string hint;
  if (c.groups.size() == 1) {
    RankOptions one = ro;
    one.top = 1;
    for (int gpus = c.total_gpus() * 2; gpus <= (1 << 16); gpus *= 2) {
      Cluster larger;
      try {
        larger = load_cluster(a.cluster, gpus);
      } catch (const InputError&) {
        continue;  // not a whole number of the system's nodes: the next doubling may be
      }
      const RankResult bigger = rank(m, larger, one);
      if (bigger.feasible > 0) {
        hint =
            fmt::format("; the fewest GPUs (doubling) that hold it: {}, e.g. {} (rank --gpus {})",
                        gpus, to_string(bigger.best.front().strategy), gpus);
        break;
      }
    }
  }
  return fmt::format("no strategy fits {} on {} GPUs{}", m.name, c.total_gpus(), hint);
}

RankReport rank_graph_request(RankReport r, const CostSources* given) {
  const PlanRequest& a = r.request;
  if (a.varlen.given() || a.objective != "time")
    throw InputError("operator graphs (.onnx) rank by time on fixed-size samples");
  if (a.replan || !a.network_trace.empty())
    throw InputError(
        "--replan and --network-trace apply to transformer models; operator "
        "graphs are priced at the cluster's bandwidths");
  const auto costs = requests::costs_for(a, given, &r.warnings);
  r.cluster = load_cluster(a.cluster, a.gpus);
  r.graph = requests::rank_graph(a, r.cluster, costs->source());
  const GraphPlan& best = r.graph->search->best;
  if (!best.feasible)
    r.verdict = {1, fmt::format("no plan fits {} on {} GPUs: {}", r.graph->graph.name,
                                r.cluster.total_gpus(), best.reason)};
  return r;
}

// The fixed-length search, re-ordered by a store's step calibration where it holds one.
void rank_fixed(RankReport& r, RankOptions ro) {
  const PlanRequest& a = r.request;
  const Model& m = r.model;
  const Cluster& c = r.cluster;
  for (const char* key : {"balance=", "max_tokens=", "cp=dynamic", "cp=flex", "cp_max="})
    if (ro.fixed.find(key) != std::string::npos)
      throw InputError(
          fmt::format("--fix {}: {} applies to variable-length data; give --seq-lengths FILE or "
                      "--seq-dist",
                      ro.fixed, std::string(key).substr(0, std::string(key).find('='))));
  // The store's step calibration re-orders the search's best: more of them are priced, the
  // calibrated best kept.
  const std::vector<StepCalibration> calibrations = a.db.empty() || has_bandwidth_traces(c)
                                                        ? std::vector<StepCalibration>{}
                                                        : load_step_calibrations(a.db);
  const int top = ro.top;
  if (!calibrations.empty() && ro.objective == Objective::time)
    ro.top = std::max(ro.top * kCalibratedPool, kCalibratedPool * 10);
  r.fixed = rank(m, c, ro);
  RankResult& res = *r.fixed;
  // Pinned keys that no plan of these GPUs can take: not "nothing fits" (a bigger cluster would
  // not help) but a bad --fix, said with the reason.
  if (res.evaluated == 0 && !ro.fixed.empty()) {
    std::string why;
    try {
      const Strategy s =
          parse_strategy(fmt::format("{},gbs={}", ro.fixed, ro.global_batch), c.total_gpus());
      if (auto w = check_strategy(m, c, s)) why = *w;
    } catch (const InputError& e) {
      why = e.what();
    }
    throw InputError(
        fmt::format("--fix {}: no plan of {} GPUs can take it{}; change the pinned "
                    "keys",
                    ro.fixed, c.total_gpus(), why.empty() ? "" : " (" + why + ")"));
  }
  if (ro.objective == Objective::time) {
    EstimateOptions published;
    published.costs = ro.estimate.costs;
    r.trusted = trusted_ranking(
        res, c, ro.estimate.software, calibrations, [&] { return validate(published); }, top);
    res.best = r.trusted->best;
  }
  // Every candidate turned away for how it splits the model, none for memory: more GPUs
  // would not help; with pinned keys it is a bad --fix, said with the reasons.
  int64_t rejected = 0;
  for (const auto& [reason, count] : res.rejected) rejected += count;
  if (res.feasible == 0 && !ro.fixed.empty() && rejected == res.evaluated) {
    std::vector<std::string> reasons;
    for (const auto& [reason, count] : res.rejected) reasons.push_back(reason);
    r.verdict = {2, fmt::format("--fix {}: every plan of {} GPUs that takes it is turned away "
                                "({}); change the pinned keys",
                                ro.fixed, c.total_gpus(), fmt::join(reasons, "; "))};
  } else if (res.feasible == 0) {
    r.verdict = {1, what_fits(a, m, c, ro)};
  }
}

}  // namespace

RankReport run_rank(const PlanRequest& request, const CostSources* given) {
  RankReport r;
  r.request = requests::resolved(request);
  r.request.command = "rank";
  const PlanRequest& a = r.request;
  if (is_onnx_path(a.model)) return rank_graph_request(std::move(r), given);
  RankOptions ro;
  ro.global_batch = a.gbs;
  ro.top = a.top;
  ro.fixed = a.fix;
  if (a.objective == "time")
    ro.objective = Objective::time;
  else if (a.objective == "memory")
    ro.objective = Objective::memory;
  else
    throw InputError(fmt::format("unknown --objective '{}'; use time or memory", a.objective));
  r.model = requests::model_of(a);
  r.cluster = requests::cluster_of(a);
  ro.estimate.software = requests::software_of(a);
  ro.estimate.loading = requests::loading_of(a);
  const auto costs = requests::costs_for(a, given, &r.warnings);
  ro.estimate.costs = costs->source();
  if (a.replan) {
    if (a.varlen.given()) throw InputError("--replan prices fixed-length data; leave out --seq-*");
    r.replanned = replan(r.model, r.cluster, ro);
  } else if (a.varlen.given()) {
    r.varlen_options = a.varlen.options();
    r.varlen = rank_varlen(r.model, r.cluster, ro, *r.varlen_options);
  } else {
    rank_fixed(r, ro);
  }
  return r;
}

}  // namespace shardcost
