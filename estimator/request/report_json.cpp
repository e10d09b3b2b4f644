// The JSON `estimate` and `rank` print: an estimate's figures, every extra the request asked
// for, and the request itself (so that the output can be run again with --request).
#include <fmt/format.h>

#include <cmath>

#include "shardcost/request.h"
#include "shardcost/units.h"

namespace shardcost {
namespace {

constexpr double kGiB = units::kGiB;

}  // namespace

nlohmann::json to_json(const Strategy& s) {
  nlohmann::json j = {
      {"tp", s.tp},   {"pp", s.pp},    {"dp", s.dp},
      {"cp", s.cp},   {"ep", s.ep},    {"mbs", s.mbs},
      {"gbs", s.gbs}, {"vpp", s.vpp},  {"recompute", std::string(to_string(s.recompute))},
      {"sp", s.sp},   {"zero", s.zero}};
  if (s.balance != Balance::none) j["balance"] = std::string(to_string(s.balance));
  if (s.max_tokens > 0) j["max_tokens"] = s.max_tokens;
  if (s.cp_per_sequence()) j["cp_mode"] = std::string(to_string(s.cp_mode));
  if (s.cp_kind != CpKind::ring) j["cp_kind"] = std::string(to_string(s.cp_kind));
  if (!s.stage_layers.empty()) j["layers"] = s.stage_layers;
  if (!s.stage_tp.empty()) j["stage_tp"] = s.stage_tp;
  if (s.precision) j["precision"] = std::string(to_string(*s.precision));
  if (s.etp > 0) j["etp"] = s.etp;
  if (s.offload > 0) j["offload"] = s.offload;
  if (s.schedule != PipeSchedule::one_f_one_b) j["schedule"] = std::string(to_string(s.schedule));
  if (s.recompute_modules != 0)
    j["recompute_modules"] = recompute_modules_text(s.recompute_modules);
  if (!s.zero_layers.empty()) j["zero_layers"] = zero_layers_text(s.zero_layers);
  if (s.dp_sync != DpSync::sync) j["dp_sync"] = dp_sync_text(s);
  if (s.lora > 0) {
    j["lora"] = s.lora;
    j["lora_targets"] = lora_targets_text(s.lora_linears());
    j["lora_dropout"] = s.lora_dropout;
  }
  return j;
}

nlohmann::json input_json(const InputBudget& b) {
  return {{"cores_per_rank", b.loading.cores_per_rank},
          {"samples_per_s_per_core", b.loading.samples_per_s_per_core},
          {"loaders", b.loaders},
          {"samples_per_loader", round6(b.samples_per_loader)},
          {"load_s", round6(b.load_s)},
          {"compute_s", round6(b.compute_s)},
          {"wait_s", round6(b.wait_s)},
          {"input_bound", b.input_bound()},
          {"cores_to_keep_up", round6(b.cores_to_keep_up)}};
}

nlohmann::json to_json(const Estimate& e) {
  nlohmann::json j;
  j["strategy"] = to_json(e.strategy);
  j["step_time_s"] = round6(e.step_time_s);
  j["tokens_per_s"] = round6(e.tokens_per_s);
  j["tflops_per_gpu"] = round6(e.tflops_per_gpu);
  j["mfu"] = round6(e.mfu);
  j["memory_per_gpu_gib"] = round6(e.memory_per_gpu_bytes / kGiB);
  j["memory_capacity_gib"] = round6(e.memory_capacity_bytes / kGiB);
  j["feasible"] = e.feasible;
  j["memory_near_limit"] = e.memory_near_limit;
  j["reason"] = e.reason;
  j["parameters"] = e.parameters;
  j["model_flops_per_step"] = round6(e.model_flops);
  if (e.dp_sync) {
    const DataParallelSync& d = *e.dp_sync;
    j["dp_sync"] = {{"mode", d.mode == DpSync::async ? "async" : "local"},
                    {d.mode == DpSync::async ? "staleness_bound_steps" : "averaging_period_steps",
                     d.bound_steps},
                    {"exchange_s", round6(d.exchange_s)},
                    {"per_update_s", round6(d.per_update_s)},
                    {"per_sample_s", round6(d.per_sample_s)},
                    {"convergence", "not priced: updates differ from synchronous training"}};
    if (d.mode == DpSync::async) j["dp_sync"]["staleness_steps"] = d.staleness;
  }
  if (e.input) j["input"] = input_json(*e.input);
  nlohmann::json time = nlohmann::json::array();
  for (const auto& p : e.time) {
    nlohmann::json sources = nlohmann::json::object();
    for (const auto& [origin, seconds] : p.sources)
      sources[std::string(to_string(origin))] = round6(seconds);
    time.push_back({{"part", p.name},
                    {"seconds", round6(p.seconds)},
                    {"source", p.given ? "given" : std::string(to_string(p.origin))},
                    {"sources", sources}});
  }
  nlohmann::json memory = nlohmann::json::array();
  for (const auto& p : e.memory)
    memory.push_back({{"part", p.name}, {"gib", round6(p.bytes / kGiB)}, {"source", "analytic"}});
  j["breakdown"] = {{"time", time}, {"memory", memory}};
  if (!e.stages.empty()) {
    nlohmann::json stages = nlohmann::json::array();
    for (const auto& st : e.stages)
      stages.push_back({{"stage", st.stage},
                        {"slowest_group", st.group},
                        {"device", st.device},
                        {"tp", st.tp},
                        {"seconds_per_micro_batch", round6(st.seconds)},
                        {"memory_gib", round6(st.memory_bytes / kGiB)},
                        {"capacity_gib", round6(st.capacity_bytes / kGiB)}});
    j["stages"] = stages;
    j["links"] = e.links;
    if (!e.group_order.empty()) j["group_order"] = e.group_order;
  }
  return j;
}

nlohmann::json calibrated_json(const CalibratedStep& k) {
  nlohmann::json j = {{"applied", k.applied},
                      {"device", k.by.device},
                      {"software", k.by.software},
                      {"runs", k.by.runs},
                      {"cross_validated_error", k.uncertainty}};
  if (!k.applied) {
    j["why_not"] = k.why_not;
    return j;
  }
  j["step_time_s"] = k.step_s;
  for (const TimePart& p : k.time) j["time"].push_back({{"name", p.name}, {"seconds", p.seconds}});
  if (k.memory_per_gpu_bytes) {
    j["memory_per_gpu_gib"] = *k.memory_per_gpu_bytes / kGiB;
    j["fits"] = *k.fits;
  }
  return j;
}

nlohmann::json uncertainty_json(const StepUncertainty& u) {
  return {
      {"relative", std::round(u.relative * 10000) / 10000}, {"basis", u.basis}, {"runs", u.runs}};
}

std::string json_text(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// The variable-length fields beside an estimate's.
void add_varlen_json(nlohmann::json& j, const VarlenEstimate& v, const VarlenOptions& o) {
  j["step_time_p10_s"] = round6(v.step_time_p10_s);
  j["step_time_p90_s"] = round6(v.step_time_p90_s);
  j["imbalance"] = round6(v.imbalance);
  j["baseline_step_time_s"] = round6(v.baseline_step_time_s);
  j["baseline"] = v.baseline;
  if (!v.cp_sequences.empty()) {
    nlohmann::json sizes = nlohmann::json::object();
    for (const auto& [k, n] : v.cp_sequences) sizes[std::to_string(k)] = n;
    j["cp_sequences"] = sizes;
  }
  j["sequences"] = {{"distribution", o.lengths.describe()},
                    {"batches", o.batches},
                    {"batch_tokens", o.batch_tokens},
                    {"seed", o.seed},
                    {"drawn", v.drawn},
                    {"dropped", v.dropped},
                    {"truncated", v.truncated},
                    {"longest", v.longest},
                    {"tokens_per_step", round6(v.tokens_per_step)},
                    {"max_micro_batches", v.max_micro_batches}};
}

nlohmann::json plan_json(const GraphPlan& p) {
  nlohmann::json j = {{"strategy", p.strategy},
                      {"feasible", p.feasible},
                      {"step_time_s", p.step_s},
                      {"samples_per_s", p.samples_per_s},
                      {"compute_s", p.compute_s},
                      {"comm_s", p.comm_s},
                      {"reshard_s", p.reshard_s},
                      {"sync_exposed_s", p.sync_exposed_s},
                      {"bubble_s", p.bubble_s},
                      {"host_launch_s", p.host_launch_s},
                      {"memory_per_gpu_bytes", p.memory_bytes},
                      {"stages", p.stages},
                      {"micro_batches", p.micro_batches}};
  if (p.epoch_s > 0) j["epoch_s"] = p.epoch_s;
  if (p.input) j["input"] = input_json(*p.input);
  if (!p.feasible) j["reason"] = p.reason;
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerCost& l : p.layers)
    layers.push_back({{"node", l.node},
                      {"op", l.op},
                      {"split",
                       {{"sample", l.split.sample},
                        {"spatial", l.split.spatial},
                        {"filter", l.split.filter},
                        {"channel", l.split.channel},
                        {"replicas", l.split.replicas}}},
                      {"compute_s", l.compute_s},
                      {"comm_s", l.comm_s},
                      {"reshard_s", l.reshard_s}});
  j["operators"] = layers;
  return j;
}

// What an operator graph's JSON starts with: the inputs.
nlohmann::json graph_inputs_json(const GraphReport& g, const Cluster& c,
                                 const std::string& software) {
  nlohmann::json unknown = nlohmann::json::object();
  for (const auto& [op, n] : g.graph.unknown_ops()) unknown[op] = n;
  return {{"model", g.graph.name},
          {"notes", g.graph.notes},
          {"file", g.graph.source},
          {"parameters", g.graph.parameters()},
          {"flops_per_sample", g.graph.flops_per_sample()},
          {"cluster", c.name},
          {"gpus", c.total_gpus()},
          {"global_batch", g.options.global_batch},
          {"precision", std::string(to_string(g.options.precision))},
          {"software", software},
          {"unknown_operators", unknown}};
}

// What every transformer rank JSON starts with: the inputs.
nlohmann::json rank_inputs_json(const RankReport& r) {
  return {{"model", r.model.name},
          {"cluster", r.cluster.name},
          {"gpus", r.cluster.total_gpus()},
          {"software", r.request.software}};
}

nlohmann::json fixed_rank_json(const RankReport& rep) {
  const RankResult& r = *rep.fixed;
  const auto& trusted = rep.trusted;
  nlohmann::json j = rank_inputs_json(rep);
  j["evaluated"] = r.evaluated;
  j["feasible"] = r.feasible;
  j["elapsed_s"] = r.elapsed_s;
  j["rejected"] = r.rejected;
  j["strategies"] = nlohmann::json::array();
  for (size_t i = 0; i < r.best.size(); ++i) {
    nlohmann::json e = to_json(r.best[i]);
    if (trusted && trusted->calibrated_steps[i])
      e["calibrated"] = calibrated_json(*trusted->calibrated_steps[i]);
    if (trusted) e["within_uncertainty_of_best"] = static_cast<int>(i) < trusted->indistinguishable;
    j["strategies"].push_back(e);
  }
  if (trusted && !r.best.empty()) {
    j["uncertainty"] = uncertainty_json(trusted->uncertainty);
    j["indistinguishable"] = trusted->indistinguishable;
    j["calibrated"] = trusted->calibrated;
    j["left_out_over_calibrated_memory"] = trusted->over_calibrated_memory;
  }
  if (r.sharding) {
    nlohmann::json uniform = nlohmann::json::array();
    for (const Estimate& u : r.sharding->uniform) uniform.push_back(to_json(u));
    j["sharding"] = {{"mixture", to_json(r.sharding->mixture)}, {"uniform", uniform}};
  }
  return j;
}

nlohmann::json varlen_rank_json(const RankReport& rep) {
  const VarlenRank& r = *rep.varlen;
  nlohmann::json j = rank_inputs_json(rep);
  j["fixed_length_evaluated"] = r.fixed_evaluated;
  j["evaluated"] = r.evaluated;
  j["elapsed_s"] = r.elapsed_s;
  j["strategies"] = nlohmann::json::array();
  for (const auto& v : r.best) {
    nlohmann::json e = to_json(v.estimate);
    add_varlen_json(e, v, *rep.varlen_options);
    j["strategies"].push_back(e);
  }
  return j;
}

nlohmann::json replan_json(const RankReport& rep) {
  const ReplanResult& r = *rep.replanned;
  nlohmann::json j = rank_inputs_json(rep);
  nlohmann::json segs = nlohmann::json::array();
  for (size_t i = 0; i < r.best.size(); ++i)
    segs.push_back({{"start_s", r.best[i].start_s},
                    {"end_s", r.best[i].end_s},
                    {"bandwidths", r.best[i].bandwidths},
                    {"best", to_json(r.best[i].estimate)},
                    {"single_step_time_s", r.single_step_s[i]}});
  j["segments"] = segs;
  j["single"] = to_json(r.single);
  j["duration_s"] = r.duration_s;
  j["replan_steps"] = r.replan_steps;
  j["single_steps"] = r.single_steps;
  j["switches_s"] = r.switches_s;
  return j;
}

}  // namespace

nlohmann::json to_json(const EstimateReport& r) {
  nlohmann::json j;
  if (r.graph) {
    j = graph_inputs_json(*r.graph, r.cluster, r.request.software);
    j["plan"] = plan_json(*r.graph->plan);
    j["request"] = to_json(r.request);
    return j;
  }
  const Estimate& e = r.estimate;
  j = to_json(e);
  if (r.varlen) add_varlen_json(j, *r.varlen, *r.varlen_options);
  if (r.end_to_end)
    j["local_updates"] = {
        {"one_f_one_b_step_time_s", r.end_to_end->step_time_s},
        {"one_f_one_b_memory_per_gpu_gib", r.end_to_end->memory_per_gpu_bytes / kGiB},
        {"one_f_one_b_feasible", r.end_to_end->feasible},
        {"throughput_ratio", r.end_to_end->step_time_s / e.step_time_s},
        {"convergence", kLocalConvergence}};
  if (r.trace) {
    nlohmann::json segs = nlohmann::json::array();
    for (const TraceSegmentEstimate& s : r.trace->segments)
      segs.push_back({{"start_s", s.start_s},
                      {"end_s", s.end_s},
                      {"bandwidths", s.bandwidths},
                      {"feasible", s.estimate.feasible},
                      {"step_time_s", s.estimate.step_time_s}});
    j["trace"] = {
        {"duration_s", r.trace->duration_s}, {"steps", r.trace->steps}, {"segments", segs}};
  }
  j["model"] = r.model.name;
  j["cluster"] = r.cluster.name;
  j["gpus"] = r.cluster.total_gpus();
  j["software"] = r.request.software;
  if (r.calibrated) j["calibrated"] = calibrated_json(*r.calibrated);
  j["uncertainty"] = uncertainty_json(r.uncertainty);
  if (!r.plan.stage_layers.empty()) j["stage_layers"] = r.plan.stage_layers;
  if (!r.stage_tp.empty()) j["stage_tp"] = r.stage_tp;
  if (r.cluster_file_gpus > 0) j["cluster_file_gpus"] = r.cluster_file_gpus;
  j["request"] = to_json(r.request);
  return j;
}

nlohmann::json to_json(const RankReport& r) {
  nlohmann::json j;
  if (r.graph) {
    const LayerwiseResult& s = *r.graph->search;
    j = graph_inputs_json(*r.graph, r.cluster, r.request.software);
    j["configurations"] = s.configurations;
    j["elapsed_s"] = s.elapsed_s;
    j["best"] = plan_json(s.best);
    j["uniform"] = nlohmann::json::array();
    for (const GraphPlan& u : s.uniform) j["uniform"].push_back(plan_json(u));
  } else if (r.replanned) {
    j = replan_json(r);
  } else if (r.varlen) {
    j = varlen_rank_json(r);
  } else {
    j = fixed_rank_json(r);
  }
  j["request"] = to_json(r.request);
  return j;
}

}  // namespace shardcost
