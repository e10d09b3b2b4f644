// estimate and rank: price one strategy, or search the space of strategies.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "commands.h"
#include "cost_sources.h"
#include "format.h"
#include "graph_plan.h"
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

struct PlanArgs {
  std::string model;
  std::string cluster;
  std::optional<int> gpus;
  std::string software;   // empty: megatron-core (pytorch-ddp for operator graphs)
  std::string attention;  // the fused attention kernel; empty: the preset's
  std::optional<double> memory_headroom_gib;  // replaces the preset's memory allowance
  std::string format = "text";
  std::string db;             // cost store to price from; empty: catalog only
  std::string network_trace;  // seconds,bandwidth_GBps CSV for the cluster's network
  bool replan = false;        // rank: the best plan of every segment of the traces
  // Operator graphs (.onnx) only.
  double epoch_samples = 0;
  std::string optimizer = "sgd";
};

// The preset a command runs under when --software names none.
PlanArgs resolved(const PlanArgs& a) {
  if (!is_onnx_path(a.model) && (a.epoch_samples != 0 || a.optimizer != "sgd"))
    throw InputError(
        "--epoch-samples and --optimizer apply to operator graphs (--model FILE.onnx)");
  if (is_onnx_path(a.model) && (!a.attention.empty() || a.memory_headroom_gib))
    throw InputError(
        "--attention and --memory-headroom apply to transformer models, not operator graphs "
        "(.onnx)");
  PlanArgs r = a;
  if (r.software.empty()) r.software = is_onnx_path(a.model) ? "pytorch-ddp" : "megatron-core";
  return r;
}

void add_plan_options(CLI::App* cmd, PlanArgs& a) {
  cmd->add_option("--model", a.model,
                  "catalog model name, model JSON file, or operator graph FILE.onnx")
      ->required();
  cmd->add_option("--cluster", a.cluster, "catalog system name or cluster JSON file")->required();
  cmd->add_option("--gpus", a.gpus, "GPU count (whole nodes, or part of one node)");
  static const std::string software_help = fmt::format(
      "software stack: {} (the first is the default; shardcost catalog lists what each runs)",
      fmt::join(software_presets(), ", "));
  cmd->add_option("--software", a.software, software_help);
  cmd->add_option("--attention", a.attention,
                  "fused attention kernel: fa2, cudnn, fa3, or best (the catalog's one figure); "
                  "default: the software preset's");
  cmd->add_option("--memory-headroom", a.memory_headroom_gib,
                  "GiB a GPU holds beyond the modelled state and activations (CUDA context, NCCL "
                  "buffers, workspaces, fragmentation); default: the preset's allowance, 2 GiB + "
                  "5 %");
  cmd->add_option("--network-trace", a.network_trace,
                  "CSV of seconds,bandwidth_GBps: the cluster network's bandwidth over time "
                  "(cluster files may give links[].trace too)");
  cmd->add_option("--epoch-samples", a.epoch_samples,
                  "operator graphs: samples per epoch, to print epoch times (ImageNet-1k: "
                  "1281167)");
  cmd->add_option("--optimizer", a.optimizer,
                  "operator graphs: sgd (momentum, the default) or adam, for memory");
  cmd->add_option("--db", a.db,
                  "price from the measurements in this cost store (catalog elsewhere)");
}

// The preset, with the attention kernel --attention names.
Software software_of(const PlanArgs& a) {
  Software sw = parse_software(a.software);
  if (!a.attention.empty()) sw.fused_attention = parse_fused_attention(a.attention);
  if (a.memory_headroom_gib) {
    const double gib = *a.memory_headroom_gib;
    if (!(gib >= 0 && gib <= 1024))
      throw InputError(fmt::format(
          "--memory-headroom {} is not a size in GiB from 0 to 1024; give what a GPU holds "
          "beyond the modelled state and activations, e.g. 3",
          gib));
    sw.memory_fixed_bytes = gib * kGiB;
    sw.memory_fragmentation = 0;
  }
  return sw;
}

std::string cluster_line(const Cluster& c) {
  std::string groups;
  for (const NodeGroup& g : c.groups) {
    groups += fmt::format("{}{}{} node{} x {} {}", groups.empty() ? "" : " + ",
                          c.groups.size() > 1 ? g.name + ": " : "", g.nodes,
                          g.nodes == 1 ? "" : "s", g.gpus_per_node, g.device.name);
    // Nodes joined into larger NVLink domains (NVL72 racks).
    if (g.nvlink_domain_gpus > g.gpus_per_node)
      groups += fmt::format(", NVLink domains of {}", g.nvlink_domain_gpus);
  }
  return fmt::format("{} GPUs: {}", c.total_gpus(), groups);
}

std::string summary_text(const Estimate& e) {
  std::string out;
  out += fmt::format("step time       {:.3f} s\n", e.step_time_s);
  out += fmt::format("throughput      {} tokens/s, {:.1f} TFLOP/s per GPU, MFU {:.1f} %\n",
                     thousands(e.tokens_per_s), e.tflops_per_gpu, 100 * e.mfu);
  std::string verdict = e.feasible ? "fits" : "does not fit: " + e.reason;
  if (e.memory_near_limit)
    verdict += fmt::format("; within {:.0f} % of the limit, where the memory model cannot tell{}",
                           100 * kMemoryVerdictUncertainty,
                           e.feasible ? "" : ": it may fit (--memory-headroom sets the allowance)");
  out += fmt::format("memory per GPU  {:.1f} GiB of {:.1f} GiB ({})\n",
                     e.memory_per_gpu_bytes / kGiB, e.memory_capacity_bytes / kGiB, verdict);
  return out;
}

std::string join_layers(const std::vector<int>& layers) {
  std::string out;
  for (int n : layers) out += (out.empty() ? "" : "/") + std::to_string(n);
  return out;
}

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

// The tp column: the degree, or each stage's ("8/8/4/4").
std::string tp_text(const Strategy& s) {
  return s.stage_tp.empty() ? std::to_string(s.tp) : join_layers(s.stage_tp);
}

// A calibration's verdict on the step, in one line.
std::string calibration_line(const CalibratedStep& k, const Estimate& e) {
  const std::string on =
      fmt::format("{} run{} of {} under {}", k.by.runs, k.by.runs == 1 ? "" : "s",
                  k.by.device.empty() ? "every device (pooled)" : k.by.device, k.by.software);
  if (!k.applied)
    return fmt::format(
        "calibrated      not applied: {} (the calibration on {}); the analytic "
        "step stands\n",
        k.why_not, on);
  std::string out = fmt::format(
      "calibrated      {:.3f} s (analytic {:.3f} s), calibrated on {}, cross-validated error "
      "{:.1f} %\n",
      k.step_s, e.step_time_s, on, 100 * k.uncertainty);
  if (k.memory_per_gpu_bytes)
    out += fmt::format(
        "                memory {:.1f} GiB of {:.1f} GiB with the fitted allowance "
        "({})\n",
        *k.memory_per_gpu_bytes / kGiB, e.memory_capacity_bytes / kGiB,
        *k.fits ? "fits" : "does not fit");
  return out;
}

void print_estimate_text(const Model& m, const Cluster& c, const PlanArgs& a, const Plan& plan,
                         const Estimate& e, const std::optional<CalibratedStep>& k) {
  fmt::print("{} ({:.1f}B parameters) on {} ({}), software {}\n", m.name, e.parameters / 1e9,
             c.name, cluster_line(c), a.software);
  fmt::print("strategy        {}\n", to_string(e.strategy));
  if (!plan.stage_layers.empty())
    fmt::print("stage layers    {}\n", join_layers(plan.stage_layers));
  if (const std::string tps = stage_tps(plan); !tps.empty())
    fmt::print("stage tp        {}\n", tps);
  fmt::print("\n{}{}\n", summary_text(e), k ? calibration_line(*k, e) : "");
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

// No plan file: price the strategy text ("" for every default).
// The cluster, with the network trace the command names.
Cluster cluster_of(const PlanArgs& a) {
  Cluster c = load_cluster(a.cluster, a.gpus);
  if (!a.network_trace.empty()) c.network_trace = load_network_trace(a.network_trace);
  return c;
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

GraphArgs graph_args(const PlanArgs& a, int global_batch, const CostSource* costs) {
  GraphArgs g;
  g.model = a.model;
  g.cluster = a.cluster;
  g.gpus = a.gpus;
  g.software = a.software;
  g.format = a.format;
  g.optimizer = a.optimizer;
  g.epoch_samples = a.epoch_samples;
  g.global_batch = global_batch;
  g.costs = costs;
  return g;
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
  const Model m = load_model(a.model);
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
    if (!plan.stage_layers.empty()) j["stage_layers"] = plan.stage_layers;
    if (const std::string tps = stage_tps(plan); !tps.empty()) j["stage_tp"] = tps;
    fmt::print("{}\n", json_text(j));
  } else {
    print_estimate_text(m, c, a, plan, e, calibrated);
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

// What every rank JSON starts with: the inputs.
nlohmann::json rank_json(const PlanArgs& a, const Model& m, const Cluster& c) {
  return {
      {"model", m.name}, {"cluster", c.name}, {"gpus", c.total_gpus()}, {"software", a.software}};
}

// rank's per-layer sharding: the fastest mixture beside its shape's uniform ZeRO stages.
void print_sharding(const RankResult::Sharding& sh) {
  const Estimate& m = sh.mixture;
  Strategy shape = m.strategy;
  shape.zero_layers.clear();
  fmt::print("\nper-layer sharding (zero_layers: s sharded, r replicated under zero={})\n",
             m.strategy.zero);
  fmt::print("  shape {}\n", to_string(shape));
  Table t({"zero", "step s", "GiB", ""}, {false, true, true, false});
  const Estimate* best_uniform = nullptr;
  for (const Estimate& u : sh.uniform) {
    t.add({fmt::format("{}", u.strategy.zero), fmt::format("{:.3f}", u.step_time_s),
           fmt::format("{:.1f}", u.memory_per_gpu_bytes / kGiB), u.feasible ? "" : "does not fit"});
    if (u.feasible && (!best_uniform || u.step_time_s < best_uniform->step_time_s))
      best_uniform = &u;
  }
  const bool mixed = m.strategy.zero_layers_mixed();
  if (mixed)
    t.add({zero_layers_text(m.strategy.zero_layers), fmt::format("{:.3f}", m.step_time_s),
           fmt::format("{:.1f}", m.memory_per_gpu_bytes / kGiB),
           best_uniform ? fmt::format("{:+.1f} % against zero={}",
                                      100 * (m.step_time_s / best_uniform->step_time_s - 1),
                                      best_uniform->strategy.zero)
                        : std::string()});
  fmt::print("{}", t.render(2));
  if (!mixed)
    fmt::print("  no mix of sharded and replicated layers is faster than a uniform stage\n");
}

// rank on variable-length data: the best plans with their step spread and imbalance.
void print_varlen_rank(const PlanArgs& a, const Model& m, const Cluster& c, const RankOptions& ro,
                       const VarlenOptions& vo, const VarlenRank& r, Format format) {
  if (format == Format::json) {
    nlohmann::json j = rank_json(a, m, c);
    j["fixed_length_evaluated"] = r.fixed_evaluated;
    j["evaluated"] = r.evaluated;
    j["elapsed_s"] = r.elapsed_s;
    j["strategies"] = nlohmann::json::array();
    for (const auto& v : r.best) {
      nlohmann::json e = to_json(v.estimate);
      add_varlen_json(e, v, vo);
      j["strategies"].push_back(e);
    }
    fmt::print("{}\n", json_text(j));
    return;
  }
  if (format == Format::csv) throw InputError("rank on variable-length data prints text or json");
  fmt::print("{} on {} ({}), global batch {}, software {}\n", m.name, c.name, cluster_line(c),
             ro.global_batch, a.software);
  fmt::print("variable-length data: {}, {} batches (seed {})\n", vo.lengths.describe(), vo.batches,
             vo.seed);
  fmt::print(
      "{} fixed-length candidates searched; {} variable-length plans priced on the batches\n\n",
      thousands(static_cast<double>(r.fixed_evaluated)),
      thousands(static_cast<double>(r.evaluated)));
  std::vector<std::string> header{
      "#",  "step s", "p10", "p90", "imbalance",  "tokens/s", "MFU",       "GiB", "tp",
      "pp", "dp",     "cp",  "mbs", "max_tokens", "balance",  "recompute", "zero"};
  std::vector<bool> right{true, true, true,  true, true, true,  true,  true, true,
                          true, true, false, true, true, false, false, true};
  // A mixed cluster: each plan's layers per stage and the order its stages take the groups.
  const bool mixed = c.groups.size() > 1;
  if (mixed) {
    header.insert(header.end(), {"layers", "groups"});
    right.insert(right.end(), {false, false});
  }
  std::vector<std::string> file_order;
  for (const auto& g : c.groups) file_order.push_back(g.name);
  Table t(header, right);
  int i = 0;
  for (const auto& v : r.best) {
    const Estimate& e = v.estimate;
    const Strategy& s = e.strategy;
    std::vector<std::string> row{
        fmt::format("{}", ++i),
        fmt::format("{:.3f}", e.step_time_s),
        fmt::format("{:.3f}", v.step_time_p10_s),
        fmt::format("{:.3f}", v.step_time_p90_s),
        fmt::format("{:.3f}", v.imbalance),
        thousands(e.tokens_per_s),
        fmt::format("{:.1f}%", 100 * e.mfu),
        fmt::format("{:.1f}", e.memory_per_gpu_bytes / kGiB),
        tp_text(s),
        fmt::format("{}", s.pp),
        fmt::format("{}", s.dp),
        s.cp_per_sequence()
            ? fmt::format("{}<={}", s.cp_mode == CpMode::flex ? "flex" : "dyn", s.cp)
            : fmt::format("{}", s.cp),
        fmt::format("{}", s.mbs),
        fmt::format("{}", s.max_tokens),
        std::string(to_string(s.balance)),
        std::string(to_string(s.recompute)),
        fmt::format("{}", s.zero)};
    if (mixed) {
      row.push_back(s.stage_layers.empty() ? "even" : join_layers(s.stage_layers));
      row.push_back(
          fmt::format("{}", fmt::join(e.group_order.empty() ? file_order : e.group_order, ",")));
    }
    t.add(row);
  }
  fmt::print("{}", t.render());
  fmt::print(stderr, "ranked in {:.2f} s\n", r.elapsed_s);
}

// Nothing feasible: says so and what would fit (the fewest GPUs, doubling, up to 65,536, that
// hold a plan; one-group clusters only), and the exit status is 1.
[[noreturn]] void say_what_fits(const PlanArgs& a, const Model& m, const Cluster& c,
                                const RankOptions& ro) {
  std::string hint;
  if (c.groups.size() == 1) {
    RankOptions one = ro;
    one.top = 1;
    for (int gpus = c.total_gpus() * 2; gpus <= (1 << 16); gpus *= 2) {
      const RankResult bigger = rank(m, load_cluster(a.cluster, gpus), one);
      if (bigger.feasible > 0) {
        hint =
            fmt::format("; the fewest GPUs (doubling) that hold it: {}, e.g. {} (rank --gpus {})",
                        gpus, to_string(bigger.best.front().strategy), gpus);
        break;
      }
    }
  }
  fmt::print(stderr, "shardcost: no strategy fits {} on {} GPUs{}\n", m.name, c.total_gpus(), hint);
  throw ExitStatus{1};
}

void print_replan(const PlanArgs& a, const Model& m, const Cluster& c, const ReplanResult& r,
                  Format format) {
  if (format == Format::json) {
    nlohmann::json j = rank_json(a, m, c);
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
    fmt::print("{}\n", json_text(j));
    return;
  }
  fmt::print("{} on {} ({}), software {}: the best plan of each segment of the network trace\n\n",
             m.name, c.name, cluster_line(c), a.software);
  Table t({"from s", "to s", "bandwidths", "best plan", "step s", "single plan's step s"},
          {true, true, false, false, true, true});
  for (size_t i = 0; i < r.best.size(); ++i)
    t.add({fmt::format("{:.0f}", r.best[i].start_s), fmt::format("{:.0f}", r.best[i].end_s),
           r.best[i].bandwidths, to_string(r.best[i].estimate.strategy),
           fmt::format("{:.3f}", r.best[i].estimate.step_time_s),
           r.single_step_s[i] > 0 ? fmt::format("{:.3f}", r.single_step_s[i]) : "does not fit"});
  fmt::print("{}\nbest single plan: {}\n", t.render(), to_string(r.single));
  std::string switches;
  for (double s : r.switches_s)
    switches += fmt::format("{}{:.0f} s", switches.empty() ? "" : ", ", s);
  fmt::print("replanning switches at {}\n",
             switches.empty() ? "no point (one plan is best throughout)" : switches);
  const double gain = r.single_steps > 0 ? r.replan_steps / r.single_steps - 1 : 0;
  fmt::print(
      "over {:.0f} s: {:.0f} steps replanned against {:.0f} with the single plan ({:+.1f} %), "
      "{:.0f} s saved for the single plan's steps (switching itself not priced)\n",
      r.duration_s, r.replan_steps, r.single_steps, 100 * gain,
      r.replan_steps > 0 ? r.duration_s * (1 - r.single_steps / r.replan_steps) : 0);
}

void run_rank(const PlanArgs& given, RankOptions ro, const std::string& objective,
              const VarlenArgs& va) {
  const PlanArgs a = resolved(given);
  if (is_onnx_path(a.model)) {
    if (va.given() || objective != "time")
      throw InputError("operator graphs (.onnx) rank by time on fixed-size samples");
    if (a.replan || !a.network_trace.empty())
      throw InputError(
          "--replan and --network-trace apply to transformer models; operator "
          "graphs are priced at the cluster's bandwidths");
    const auto costs = load_costs(a.db);
    run_graph_rank(graph_args(a, ro.global_batch, costs->source()), ro.fixed, ro.top);
    return;
  }
  const Format format = parse_format(a.format, {Format::text, Format::json, Format::csv});
  if (objective == "time")
    ro.objective = Objective::time;
  else if (objective == "memory")
    ro.objective = Objective::memory;
  else
    throw InputError(fmt::format("unknown --objective '{}'; use time or memory", objective));
  const Model m = load_model(a.model);
  const Cluster c = cluster_of(a);
  ro.estimate.software = software_of(a);
  const auto costs = load_costs(a.db);
  ro.estimate.costs = costs->source();
  if (a.replan) {
    if (va.given()) throw InputError("--replan prices fixed-length data; leave out --seq-*");
    print_replan(a, m, c, replan(m, c, ro), format);
    return;
  }
  if (va.given()) {
    const VarlenOptions vo = va.options();
    print_varlen_rank(a, m, c, ro, vo, rank_varlen(m, c, ro, vo), format);
    return;
  }
  for (const char* key : {"balance=", "max_tokens=", "cp=dynamic", "cp=flex", "cp_max="})
    if (ro.fixed.find(key) != std::string::npos)
      throw InputError(
          fmt::format("--fix {}: {} applies to variable-length data; give --seq-lengths FILE or "
                      "--seq-dist",
                      ro.fixed, std::string(key).substr(0, std::string(key).find('='))));
  const RankResult r = rank(m, c, ro);
  const auto print = [&] {
    if (format == Format::json) {
      nlohmann::json j = rank_json(a, m, c);
      j["evaluated"] = r.evaluated;
      j["feasible"] = r.feasible;
      j["elapsed_s"] = r.elapsed_s;
      j["rejected"] = r.rejected;
      j["strategies"] = nlohmann::json::array();
      for (const auto& e : r.best) j["strategies"].push_back(to_json(e));
      if (r.sharding) {
        nlohmann::json uniform = nlohmann::json::array();
        for (const Estimate& u : r.sharding->uniform) uniform.push_back(to_json(u));
        j["sharding"] = {{"mixture", to_json(r.sharding->mixture)}, {"uniform", uniform}};
      }
      fmt::print("{}\n", json_text(j));
      return;
    }
    if (format == Format::csv) {
      fmt::print(
          "rank,step_time_s,tokens_per_s,tflops_per_gpu,mfu,memory_per_gpu_gib,tp,pp,dp,cp,"
          "ep,mbs,gbs,vpp,recompute,sp,zero,etp,schedule,zero_layers\n");
      int i = 0;
      for (const auto& e : r.best) {
        const Strategy& s = e.strategy;
        fmt::print(
            "{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            ++i, e.step_time_s, e.tokens_per_s, e.tflops_per_gpu, e.mfu,
            e.memory_per_gpu_bytes / kGiB, tp_text(s), s.pp, s.dp, s.cp, s.ep, s.mbs, s.gbs, s.vpp,
            to_string(s.recompute), s.sp, s.zero, s.expert_tp(), to_string(s.schedule),
            zero_layers_text(s.zero_layers));
      }
      return;
    }
    fmt::print("{} on {} ({}), global batch {}, software {}\n", m.name, c.name, cluster_line(c),
               ro.global_batch, a.software);
    fmt::print("{} candidates evaluated, {} feasible\n\n",
               thousands(static_cast<double>(r.evaluated)),
               thousands(static_cast<double>(r.feasible)));
    // Layers per stage where a plan sets its own split (a mixed cluster's balanced ones).
    const bool split = std::any_of(r.best.begin(), r.best.end(), [](const Estimate& e) {
      return !e.strategy.stage_layers.empty();
    });
    std::vector<std::string> header{"#",   "step s",    "tokens/s", "TFLOP/s", "MFU", "GiB",
                                    "tp",  "pp",        "dp",       "cp",      "ep",  "mbs",
                                    "vpp", "recompute", "sp",       "zero"};
    std::vector<bool> right{true, true, true, true, true, true,  true,  true,
                            true, true, true, true, true, false, false, true};
    if (split) header.emplace_back("layers"), right.push_back(false);
    // The experts' own TP degree where a plan folds them (MoE parallel folding).
    const bool folded = std::any_of(r.best.begin(), r.best.end(),
                                    [](const Estimate& e) { return e.strategy.etp > 0; });
    if (folded) header.emplace_back("etp"), right.push_back(true);
    const bool dualpipe = std::any_of(r.best.begin(), r.best.end(), [](const Estimate& e) {
      return e.strategy.schedule != PipeSchedule::one_f_one_b;
    });
    if (dualpipe) header.emplace_back("schedule"), right.push_back(false);
    // Per-layer sharding where a plan mixes sharded and replicated layers.
    const bool masked = std::any_of(r.best.begin(), r.best.end(), [](const Estimate& e) {
      return !e.strategy.zero_layers.empty();
    });
    if (masked) header.emplace_back("zero_layers"), right.push_back(false);
    // A mixed cluster: the order its groups take the stages in (the file's, or another).
    const bool mixed = c.groups.size() > 1;
    if (mixed) header.emplace_back("groups"), right.push_back(false);
    std::vector<std::string> file_order;
    for (const auto& g : c.groups) file_order.push_back(g.name);
    Table t(header, right);
    int i = 0;
    for (const auto& e : r.best) {
      const Strategy& s = e.strategy;
      std::vector<std::string> row{fmt::format("{}", ++i),
                                   fmt::format("{:.3f}", e.step_time_s),
                                   thousands(e.tokens_per_s),
                                   fmt::format("{:.1f}", e.tflops_per_gpu),
                                   fmt::format("{:.1f}%", 100 * e.mfu),
                                   fmt::format("{:.1f}", e.memory_per_gpu_bytes / kGiB),
                                   tp_text(s),
                                   fmt::format("{}", s.pp),
                                   fmt::format("{}", s.dp),
                                   fmt::format("{}", s.cp),
                                   fmt::format("{}", s.ep),
                                   fmt::format("{}", s.mbs),
                                   fmt::format("{}", s.vpp),
                                   std::string(to_string(s.recompute)),
                                   s.sp ? "yes" : "no",
                                   fmt::format("{}", s.zero)};
      if (split) row.push_back(s.stage_layers.empty() ? "even" : join_layers(s.stage_layers));
      if (folded) row.push_back(fmt::format("{}", s.expert_tp()));
      if (dualpipe) row.emplace_back(to_string(s.schedule));
      if (masked) row.push_back(s.zero_layers.empty() ? "-" : zero_layers_text(s.zero_layers));
      if (mixed)
        row.push_back(
            fmt::format("{}", fmt::join(e.group_order.empty() ? file_order : e.group_order, ",")));
      t.add(row);
    }
    fmt::print("{}", t.render());
    if (r.sharding) print_sharding(*r.sharding);
    if (!r.rejected.empty()) {
      fmt::print("\nrejected\n");
      for (const auto& [reason, count] : r.rejected)
        fmt::print("  {:>10}  {}\n", thousands(static_cast<double>(count)), reason);
    }
    fmt::print(stderr, "ranked in {:.2f} s\n", r.elapsed_s);
  };
  print();
  if (r.feasible == 0) say_what_fits(a, m, c, ro);
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

  auto rank_args = std::make_shared<PlanArgs>();
  auto ro = std::make_shared<RankOptions>();
  auto objective = std::make_shared<std::string>("time");
  auto* rk = app.add_subcommand("rank", "Search every strategy and print the best");
  add_plan_options(rk, *rank_args);
  rk->add_option("--gbs", ro->global_batch, "global batch size in sequences")->required();
  rk->add_option("--top", ro->top, "how many strategies to print (default 10)");
  rk->add_option("--fix", ro->fixed, "pin strategy keys, e.g. \"tp=8,recompute=full\"");
  rk->add_option("--objective", *objective, "time (default) or memory");
  rk->add_option("--format", rank_args->format, "text, json or csv");
  rk->add_flag("--replan", rank_args->replan,
               "with a bandwidth trace: the best plan of each segment, where it changes, and "
               "the steps gained over the best single plan");
  auto rva = std::make_shared<VarlenArgs>();
  add_varlen_options(rk, *rva);
  rk->callback([rank_args, ro, objective, rva] { run_rank(*rank_args, *ro, *objective, *rva); });
}

}  // namespace shardcost::cli
