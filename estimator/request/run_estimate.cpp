// estimate: one plan priced, with every extra the request asks for: variable-length data, a
// bandwidth trace, local updates against 1F1B, a store's calibration and the step's uncertainty.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "request_inputs.h"
#include "shardcost/error.h"

namespace shardcost {

const char* const kLocalConvergence =
    "each stage learns from its own loss (Laskin et al. 2020): convergence per step differs from "
    "end-to-end backpropagation; shardcost prices time, not accuracy";

namespace {

// A plan whose replicas of one stage differ in TP degree: each stage's distinct degrees
// ("8/4+2"); empty otherwise (a degree per stage is the strategy's stage_tp).
std::string stage_tps(const Plan& plan) {
  std::string out;
  bool differ = false;
  if (!plan.strategy.stage_tp.empty()) return out;  // the strategy line gives stage_tp
  for (const StagePlan& st : plan.stages) {
    std::vector<int> tps;
    for (const Replica& r : st.replicas) {
      differ = differ || r.tp != plan.strategy.tp;
      if (std::find(tps.begin(), tps.end(), r.tp) == tps.end()) tps.push_back(r.tp);
    }
    if (!out.empty()) out += '/';
    out += fmt::format("{}", fmt::join(tps, "+"));
  }
  return differ ? out : "";
}

EstimateReport estimate_graph_request(EstimateReport r, const CostSources* given) {
  const PlanRequest& a = r.request;
  if (!a.network_trace.empty())
    throw InputError(
        "--network-trace applies to transformer models; operator graphs are "
        "priced at the cluster's bandwidths");
  if (!a.plan.empty() || a.varlen.given())
    throw InputError(
        "operator graphs (.onnx) take --strategy NAME,gbs=N; not --plan files or "
        "variable-length data");
  const auto costs = requests::costs_for(a, given, &r.warnings);
  r.cluster = load_cluster(a.cluster, a.gpus);
  r.graph = requests::estimate_graph(a, r.cluster, costs->source());
  if (!r.graph->plan->feasible)
    r.verdict = {1, fmt::format("the strategy does not fit: {}", r.graph->plan->reason)};
  return r;
}

}  // namespace

EstimateReport run_estimate(const PlanRequest& request, const CostSources* given) {
  EstimateReport r;
  r.request = requests::resolved(request);
  r.request.command = "estimate";
  const PlanRequest& a = r.request;
  if (is_onnx_path(a.model)) return estimate_graph_request(std::move(r), given);
  r.model = requests::model_of(a);
  r.cluster = requests::cluster_of(a);
  const Cluster& c = r.cluster;
  const auto workload = transformer_workload(r.model);
  r.plan = !a.plan.empty() ? load_plan(a.plan, c, workload->layers())
                           : plan_of(parse_strategy(a.strategy, c.total_gpus()));
  // A plan file may run on part of the cluster: the groups it names, the GPUs it takes there.
  if (Cluster part = plan_cluster(r.cluster, r.plan); part.total_gpus() != c.total_gpus()) {
    r.cluster_file_gpus = c.total_gpus();
    r.cluster = std::move(part);
  }
  EstimateOptions opt;
  opt.software = requests::software_of(a);
  opt.loading = requests::loading_of(a);
  const auto costs = requests::costs_for(a, given, &r.warnings);
  opt.costs = costs->source();
  const Strategy& st = r.plan.strategy;
  const bool varlen = a.varlen.given();
  if (!varlen && (st.balance != Balance::none || st.max_tokens > 0 || st.cp_per_sequence()))
    throw InputError(
        "balance=, max_tokens= and cp=dynamic apply to variable-length data: give --seq-lengths "
        "FILE or --seq-dist lognormal:median=...,sigma=...");
  if (varlen) {
    if (!a.plan.empty())
      throw InputError("--plan files are priced at fixed length; give --strategy");
    r.varlen_options = a.varlen.options();
    r.varlen = estimate_varlen(*workload, c, st, *r.varlen_options, opt);
  }
  r.estimate = r.varlen ? r.varlen->estimate : estimate(*workload, c, r.plan, opt);
  const Estimate& e = r.estimate;
  // A store's step calibration, where it holds one for this device and stack (fixed-length
  // plans: the runs it was fitted on were).
  if (!a.db.empty() && !varlen && !has_bandwidth_traces(c))
    r.calibrated = calibrate(e, c, opt.software, load_step_calibrations(a.db));
  // How far to trust the step: the calibration's held-out error, or the estimate's own on the
  // published runs nearest it, priced from the same costs.
  EstimateOptions published;
  published.costs = opt.costs;
  r.uncertainty =
      step_uncertainty(e, c, opt.software, r.calibrated, [&] { return validate(published); });
  if (has_bandwidth_traces(c)) {
    if (varlen) throw InputError("bandwidth traces are priced at fixed length; leave out --seq-*");
    r.trace = estimate_over_trace(*workload, c, r.plan, opt);
  }
  // Local updates: the same plan under 1F1B, what they gain against it.
  if (e.strategy.schedule == PipeSchedule::local) {
    Plan ref = r.plan;
    ref.strategy.schedule = PipeSchedule::one_f_one_b;
    r.end_to_end = estimate(*workload, c, ref, opt);
  }
  r.stage_tp = stage_tps(r.plan);
  // A plan that does not fit is a result; a calibration's memory allowance, where it applies,
  // has the last word.
  const bool calibrated_verdict = r.calibrated && r.calibrated->applied && r.calibrated->fits;
  if (calibrated_verdict && !*r.calibrated->fits)
    r.verdict = {1, "the strategy does not fit with the calibrated allowance"};
  else if (!e.feasible && !calibrated_verdict)
    r.verdict = {1, fmt::format("the strategy does not fit: {}", e.reason)};
  return r;
}

}  // namespace shardcost
