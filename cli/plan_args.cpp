// What estimate and rank share: their options, the inputs those name, and the lines both print.
#include "plan_args.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "format.h"
#include "shardcost/error.h"
#include "shardcost/opgraph.h"
#include "shardcost/units.h"

namespace shardcost::cli {

// The preset a command runs under when --software names none.
PlanArgs resolved(const PlanArgs& a) {
  if (!is_onnx_path(a.model) && (a.epoch_samples != 0 || a.optimizer != "sgd"))
    throw InputError(
        "--epoch-samples and --optimizer apply to operator graphs (--model FILE.onnx)");
  if (is_onnx_path(a.model) && (!a.attention.empty() || a.memory_headroom_gib || a.seq_len))
    throw InputError(
        "--attention, --memory-headroom and --seq-len apply to transformer models, not operator "
        "graphs (.onnx)");
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
  cmd->add_option("--seq-len", a.seq_len,
                  "tokens per sequence the run trains at; default: the model's (a Hugging Face "
                  "config.json's max_position_embeddings)");
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

// The tp column: the degree, or each stage's ("8/8/4/4").
std::string tp_text(const Strategy& s) {
  return s.stage_tp.empty() ? std::to_string(s.tp) : join_layers(s.stage_tp);
}

Model model_of(const PlanArgs& a) {
  Model m = load_model(a.model);
  if (a.seq_len) {
    constexpr int kMaxSeqLen = 1 << 27;  // a model file's bound (inputs.cpp)
    if (*a.seq_len < 1 || *a.seq_len > kMaxSeqLen)
      throw InputError(fmt::format("--seq-len {} is not a sequence length; give 1 to {} tokens",
                                   *a.seq_len, kMaxSeqLen));
    m.seq_len = *a.seq_len;
  }
  return m;
}

// The cluster, with the network trace the command names.
Cluster cluster_of(const PlanArgs& a) {
  Cluster c = load_cluster(a.cluster, a.gpus);
  if (!a.network_trace.empty()) c.network_trace = load_network_trace(a.network_trace);
  return c;
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

std::string uncertainty_line(const StepUncertainty& u) {
  return fmt::format("uncertainty     +/-{:.1f} %: {}\n", 100 * u.relative, u.basis);
}

nlohmann::json uncertainty_json(const StepUncertainty& u) {
  return {
      {"relative", std::round(u.relative * 10000) / 10000}, {"basis", u.basis}, {"runs", u.runs}};
}

}  // namespace shardcost::cli
