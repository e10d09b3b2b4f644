// estimate: price one strategy.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "commands.h"
#include "cost_sources.h"
#include "format.h"
#include "graph_plan.h"
#include "plan_args.h"
#include "shardcost/calibration.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/learned.h"
#include "shardcost/opgraph.h"
#include "shardcost/store_costs.h"
#include "shardcost/varlen.h"
#include "varlen_print.h"

namespace shardcost::cli {
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

void print_estimate_text(const Model& m, const Cluster& c, const PlanArgs& a, const Plan& plan,
                         const Estimate& e, const std::optional<CalibratedStep>& k,
                         const StepUncertainty& u) {
  fmt::print("{} ({:.1f}B parameters) on {} ({}), software {}\n", m.name, e.parameters / 1e9,
             c.name, cluster_line(c), a.software);
  fmt::print("strategy        {}\n", to_string(e.strategy));
  if (!plan.stage_layers.empty())
    fmt::print("stage layers    {}\n", join_layers(plan.stage_layers));
  if (const std::string tps = stage_tps(plan); !tps.empty())
    fmt::print("stage tp        {}\n", tps);
  fmt::print("\n{}{}{}\n", summary_text(e), k ? calibration_line(*k, e) : "", uncertainty_line(u));
  // With a store: how much of each part its measurements (and models fitted on them) priced.
  const bool store = !a.db.empty();
  const bool calibrated = k && k->applied;
  std::vector<std::string> header{"time per step", "seconds", "share", "source"};
  std::vector<bool> right{false, true, true, false};
  if (store) header.emplace_back("store"), right.push_back(true);
  if (calibrated) header.emplace_back("calibrated"), right.push_back(true);
  Table time(header, right);
  double store_seconds = 0;
  for (size_t i = 0; i < e.time.size(); ++i) {
    const TimePart& p = e.time[i];
    std::vector<std::string> row{p.name, fmt::format("{:.3f}", p.seconds),
                                 fmt::format("{:.1f} %", 100 * p.seconds / e.step_time_s),
                                 p.seconds > 0 ? std::string(to_string(p.origin)) : "-"};
    if (store) {
      double from_store = 0;
      for (const auto& [origin, seconds] : p.sources)
        if (origin != CostOrigin::catalog) from_store += seconds;
      store_seconds += from_store;
      row.push_back(p.seconds > 0 ? fmt::format("{:.1f} %", 100 * from_store / p.seconds) : "-");
    }
    if (calibrated) row.push_back(fmt::format("{:.3f}", k->time[i].seconds));
    time.add(row);
  }
  if (calibrated) {
    std::vector<std::string> row{"overhead", "-", "-", "-"};
    if (store) row.emplace_back("-");
    row.push_back(fmt::format("{:.3f}", k->time.back().seconds));
    time.add(row);
  }
  std::vector<std::string> total{"total", fmt::format("{:.3f}", e.step_time_s), "100.0 %", ""};
  if (store) total.push_back(fmt::format("{:.1f} %", 100 * store_seconds / e.step_time_s));
  if (calibrated) total.push_back(fmt::format("{:.3f}", k->step_s));
  time.add(total);
  Table memory({"memory per GPU", "GiB", "share"}, {false, true, true});
  for (const auto& p : e.memory) {
    memory.add({p.name, fmt::format("{:.2f}", p.bytes / kGiB),
                fmt::format("{:.1f} %", 100 * p.bytes / e.memory_per_gpu_bytes)});
  }
  memory.add({"total", fmt::format("{:.2f}", e.memory_per_gpu_bytes / kGiB), "100.0 %"});
  fmt::print("{}\n{}", time.render(), memory.render());
  if (e.stages.empty()) return;
  // A mixed cluster: each stage on its slowest replica's devices, and the links crossed.
  Table stages(
      {"stage", "slowest replica", "device", "tp", "s per micro-batch", "memory GiB", "of GiB"},
      {true, false, false, true, true, true, true});
  for (const auto& st : e.stages)
    stages.add({std::to_string(st.stage), st.group, st.device, std::to_string(st.tp),
                fmt::format("{:.4f}", st.seconds), fmt::format("{:.2f}", st.memory_bytes / kGiB),
                fmt::format("{:.1f}", st.capacity_bytes / kGiB)});
  fmt::print("\n{}", stages.render());
  if (!e.links.empty()) fmt::print("\nlinks between groups\n");
  for (const auto& l : e.links) fmt::print("  {}\n", l);
}

constexpr const char* kLocalConvergence =
    "each stage learns from its own loss (Laskin et al. 2020): convergence per step differs from "
    "end-to-end backpropagation; shardcost prices time, not accuracy";

// schedule=local beside the same plan under 1F1B.
std::string local_text(const Estimate& local, const Estimate& ref) {
  auto line = [](const char* name, const Estimate& e) {
    return fmt::format("  {:<6}  {:.3f} s a step, MFU {:.1f} %, {:.1f} GiB{}\n", name,
                       e.step_time_s, 100 * e.mfu, e.memory_per_gpu_bytes / kGiB,
                       e.feasible ? "" : " (does not fit)");
  };
  return fmt::format(
      "local updates: every stage before the last trains on its own copy of the head; no "
      "gradient crosses a stage boundary and no step ends in a pipeline flush\n{}{}"
      "  {:.2f}x the throughput of 1F1B\n{}\n",
      line("1f1b", ref), line("local", local), ref.step_time_s / local.step_time_s,
      kLocalConvergence);
}

std::string trace_table(const TraceEstimate& t) {
  Table table({"from s", "to s", "bandwidths", "step s", "steps"}, {true, true, false, true, true});
  for (const TraceSegmentEstimate& s : t.segments)
    table.add({fmt::format("{:.0f}", s.start_s), fmt::format("{:.0f}", s.end_s), s.bandwidths,
               s.estimate.feasible ? fmt::format("{:.3f}", s.estimate.step_time_s) : "-",
               s.estimate.feasible
                   ? fmt::format("{:.0f}", (s.end_s - s.start_s) / s.estimate.step_time_s)
                   : "0"});
  return fmt::format(
      "over the network trace ({:.0f} s): {:.0f} steps, {:.3f} s a step on "
      "average\n{}",
      t.duration_s, t.steps, t.steps > 0 ? t.duration_s / t.steps : 0, table.render());
}

void run_estimate(const PlanArgs& given, const std::string& strategy_text,
                  const std::optional<std::string>& plan_path, const VarlenArgs& va) {
  const PlanArgs a = resolved(given);
  if (is_onnx_path(a.model)) {
    if (!a.network_trace.empty())
      throw InputError(
          "--network-trace applies to transformer models; operator graphs are "
          "priced at the cluster's bandwidths");
    if (plan_path || va.given())
      throw InputError(
          "operator graphs (.onnx) take --strategy NAME,gbs=N; not --plan files or "
          "variable-length data");
    const auto costs = load_costs(a.db);
    run_graph_estimate(graph_args(a, 0, costs->source()), strategy_text);
    return;
  }
  const Format format = parse_format(a.format, {Format::text, Format::json});
  const Model m = model_of(a);
  const Cluster c = cluster_of(a);
  const auto workload = transformer_workload(m);
  const Plan plan = plan_path ? load_plan(*plan_path, c, workload->layers())
                              : plan_of(parse_strategy(strategy_text, c.total_gpus()));
  EstimateOptions opt;
  opt.software = software_of(a);
  const auto costs = load_costs(a.db);
  opt.costs = costs->source();
  const Strategy& st = plan.strategy;
  if (!va.given() && (st.balance != Balance::none || st.max_tokens > 0 || st.cp_per_sequence()))
    throw InputError(
        "balance=, max_tokens= and cp=dynamic apply to variable-length data: give --seq-lengths "
        "FILE "
        "or --seq-dist lognormal:median=...,sigma=...");
  std::optional<VarlenOptions> vo;
  std::optional<VarlenEstimate> v;
  if (va.given()) {
    if (plan_path) throw InputError("--plan files are priced at fixed length; give --strategy");
    vo = va.options();
    v = estimate_varlen(*workload, c, st, *vo, opt);
  }
  const Estimate e = v ? v->estimate : estimate(*workload, c, plan, opt);
  // A store's step calibration, where it holds one for this device and stack (fixed-length
  // plans: the runs it was fitted on were).
  std::optional<CalibratedStep> calibrated;
  if (!a.db.empty() && !v && !has_bandwidth_traces(c))
    calibrated = calibrate(e, c, opt.software, load_step_calibrations(a.db));
  // How far to trust the step: the calibration's held-out error, or the estimate's own on the
  // published runs nearest it, priced from the same costs.
  EstimateOptions published;
  published.costs = opt.costs;
  const StepUncertainty uncertainty =
      step_uncertainty(e, c, opt.software, calibrated, [&] { return validate(published); });
  std::optional<TraceEstimate> trace;
  if (has_bandwidth_traces(c)) {
    if (v) throw InputError("bandwidth traces are priced at fixed length; leave out --seq-*");
    trace = estimate_over_trace(*workload, c, plan, opt);
  }
  // Local updates: the same plan under 1F1B, what they gain against it.
  std::optional<Estimate> end_to_end;
  if (e.strategy.schedule == PipeSchedule::local) {
    Plan ref = plan;
    ref.strategy.schedule = PipeSchedule::one_f_one_b;
    end_to_end = estimate(*workload, c, ref, opt);
  }
  if (format == Format::json) {
    nlohmann::json j = to_json(e);
    if (v) add_varlen_json(j, *v, *vo);
    if (end_to_end)
      j["local_updates"] = {
          {"one_f_one_b_step_time_s", end_to_end->step_time_s},
          {"one_f_one_b_memory_per_gpu_gib", end_to_end->memory_per_gpu_bytes / kGiB},
          {"one_f_one_b_feasible", end_to_end->feasible},
          {"throughput_ratio", end_to_end->step_time_s / e.step_time_s},
          {"convergence", kLocalConvergence}};
    if (trace) {
      nlohmann::json segs = nlohmann::json::array();
      for (const TraceSegmentEstimate& s : trace->segments)
        segs.push_back({{"start_s", s.start_s},
                        {"end_s", s.end_s},
                        {"bandwidths", s.bandwidths},
                        {"feasible", s.estimate.feasible},
                        {"step_time_s", s.estimate.step_time_s}});
      j["trace"] = {{"duration_s", trace->duration_s}, {"steps", trace->steps}, {"segments", segs}};
    }
    j["model"] = m.name;
    j["cluster"] = c.name;
    j["gpus"] = c.total_gpus();
    j["software"] = a.software;
    if (calibrated) j["calibrated"] = calibrated_json(*calibrated);
    j["uncertainty"] = uncertainty_json(uncertainty);
    if (!plan.stage_layers.empty()) j["stage_layers"] = plan.stage_layers;
    if (const std::string tps = stage_tps(plan); !tps.empty()) j["stage_tp"] = tps;
    fmt::print("{}\n", json_text(j));
  } else {
    print_estimate_text(m, c, a, plan, e, calibrated, uncertainty);
    if (v) fmt::print("\n{}", varlen_text(*v, *vo, st));
    if (trace) fmt::print("\n{}", trace_table(*trace));
    if (end_to_end) fmt::print("\n{}", local_text(e, *end_to_end));
  }
  // A plan that does not fit is a result, printed whole; the exit code says it (1). A
  // calibration's memory allowance, where it applies, has the last word.
  const bool calibrated_verdict = calibrated && calibrated->applied && calibrated->fits;
  if (calibrated_verdict && !*calibrated->fits) {
    std::fflush(stdout);
    fmt::print(stderr, "shardcost: the strategy does not fit with the calibrated allowance\n");
    throw ExitStatus{1};
  }
  if (!e.feasible && !calibrated_verdict) {
    std::fflush(stdout);
    fmt::print(stderr, "shardcost: the strategy does not fit: {}\n", e.reason);
    throw ExitStatus{1};
  }
}

}  // namespace

void add_plan_commands(CLI::App& app) {
  auto est_args = std::make_shared<PlanArgs>();
  auto strategy = std::make_shared<std::string>();
  auto plan = std::make_shared<std::string>();
  auto* est = app.add_subcommand("estimate", "Price one strategy: step time, throughput, memory");
  add_plan_options(est, *est_args);
  auto* strategy_opt =
      est->add_option("--strategy", *strategy,
                      "e.g. \"tp=8,pp=8,dp=1,cp=1,ep=1,mbs=1,gbs=64,vpp=3,recompute=selective,"
                      "sp=true,zero=0\"; missing keys take defaults (dp from the GPU count)");
  auto* plan_opt =
      est->add_option("--plan", *plan,
                      "plan JSON file: the strategy keys of every stage, each stage's layers and "
                      "replicas (instead of --strategy; docs/architecture.md)")
          ->excludes(strategy_opt);
  est->add_option("--format", est_args->format, "text or json");
  auto va = std::make_shared<VarlenArgs>();
  add_varlen_options(est, *va);
  est->callback([est_args, strategy, plan, strategy_opt, plan_opt, va] {
    if (strategy_opt->count() == 0 && plan_opt->count() == 0)
      throw InputError(
          "--strategy is required (\"tp=8,pp=8,...\"), or give a plan file with --plan FILE");
    run_estimate(*est_args, *strategy,
                 plan_opt->count() ? std::optional<std::string>(*plan) : std::nullopt, *va);
  });

  add_rank_command(app);
}
}  // namespace shardcost::cli
