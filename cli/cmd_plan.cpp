// estimate: price one strategy (the request runs in shardcost/request.h; this renders it).
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "commands.h"
#include "format.h"
#include "graph_plan.h"
#include "plan_args.h"
#include "shardcost/error.h"
#include "shardcost/request.h"
#include "varlen_print.h"

namespace shardcost::cli {
namespace {

void print_estimate_text(const EstimateReport& r) {
  const Estimate& e = r.estimate;
  const Cluster& c = r.cluster;
  const Plan& plan = r.plan;
  const std::optional<CalibratedStep>& k = r.calibrated;
  fmt::print("{} ({:.1f}B parameters) on {} ({}), software {}\n", r.model.name, e.parameters / 1e9,
             c.name, cluster_line(c), r.request.software);
  fmt::print("strategy        {}\n", to_string(e.strategy));
  if (!plan.stage_layers.empty())
    fmt::print("stage layers    {}\n", join_layers(plan.stage_layers));
  if (!r.stage_tp.empty()) fmt::print("stage tp        {}\n", r.stage_tp);
  if (r.cluster_file_gpus > 0)
    fmt::print(
        "cluster part    the plan runs on {} of the cluster file's {} GPUs: the groups it "
        "names, in the order it names them\n",
        c.total_gpus(), r.cluster_file_gpus);
  fmt::print("\n{}{}{}\n", summary_text(e), k ? calibration_line(*k, e) : "",
             uncertainty_line(r.uncertainty));
  // With a store: how much of each part its measurements (and models fitted on them) priced.
  const bool store = !r.request.db.empty();
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
                                 p.given         ? "given"
                                 : p.seconds > 0 ? std::string(to_string(p.origin))
                                                 : "-"};
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

void render_estimate(const EstimateReport& r, Format format) {
  say_warnings(r.warnings);
  if (format == Format::json) {
    fmt::print("{}\n", json_text(to_json(r)));
  } else if (r.graph) {
    fmt::print("{}", graph_estimate_text(*r.graph, r.cluster, r.request.software));
  } else {
    print_estimate_text(r);
    if (r.varlen) fmt::print("\n{}", varlen_text(*r.varlen, *r.varlen_options, r.plan.strategy));
    if (r.trace) fmt::print("\n{}", trace_table(*r.trace));
    if (r.end_to_end) fmt::print("\n{}", local_text(r.estimate, *r.end_to_end));
  }
  // A plan that does not fit is a result, printed whole; the exit code says it (1).
  end_with(r.verdict);
}

}  // namespace

void add_plan_commands(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  o->request.command = "estimate";
  auto* est = app.add_subcommand("estimate", "Price one strategy: step time, throughput, memory");
  add_plan_options(est, *o);
  auto* strategy_opt =
      est->add_option("--strategy", o->request.strategy,
                      "e.g. \"tp=8,pp=8,dp=1,cp=1,ep=1,mbs=1,gbs=64,vpp=3,recompute=selective,"
                      "sp=true,zero=0\"; missing keys take defaults (dp from the GPU count)");
  est->add_option("--plan", o->request.plan,
                  "plan JSON file: the strategy keys of every stage, each stage's layers and "
                  "replicas (instead of --strategy; docs/architecture.md)")
      ->excludes(strategy_opt);
  est->add_option("--format", o->format, "text or json");
  add_varlen_options(est, o->request.varlen);
  est->callback([o, est] {
    const PlanRequest request = request_of(*est, *o);
    if (request.strategy.empty() && request.plan.empty())
      throw InputError(
          "--strategy is required (\"tp=8,pp=8,...\"), or give a plan file with --plan FILE");
    const Format format = parse_format(o->format, {Format::text, Format::json});
    render_estimate(run_estimate(request), format);
  });

  add_rank_command(app);
}
}  // namespace shardcost::cli
