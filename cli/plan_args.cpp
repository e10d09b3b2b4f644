// What estimate and rank share: their options, the inputs those name, and the lines both print.
#include "plan_args.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "commands.h"
#include "format.h"
#include "shardcost/error.h"
#include "shardcost/planner_requests.h"
#include "shardcost/units.h"

namespace shardcost::cli {

void add_plan_options(CLI::App* cmd, PlanOptions& o) {
  PlanRequest& a = o.request;
  cmd->add_option("--model", a.model,
                  "catalog model name, model JSON file, or operator graph FILE.onnx");
  cmd->add_option("--cluster", a.cluster, "catalog system name or cluster JSON file");
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
  cmd->add_option("--data-loading", a.data_loading,
                  "each rank's data loader: cores=N,rate=R (R: samples per second one core "
                  "prepares, measured on your pipeline); a step waits for loading beyond its "
                  "compute");
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
  cmd->add_option("--request", o.request_file,
                  "run a saved request (JSON; or the output of --format json): options given "
                  "beside it replace its keys (docs/python.md)");
}

namespace {

// Each option the command line gives, by its name (--seq-len is seq_len), over the request's
// keys; of two keys that exclude each other, the one given drops the other.
void overlay_options(const CLI::App& cmd, nlohmann::json& j, const nlohmann::json& given,
                     const std::vector<std::pair<std::string, std::string>>& exclusive) {
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->count() == 0) continue;
    std::string key = opt->get_name();
    if (key.rfind("--", 0) != 0) continue;
    key = key.substr(2);
    std::replace(key.begin(), key.end(), '-', '_');
    if (!given.contains(key)) continue;  // --format, --request
    j[key] = given.at(key);
    for (const auto& [one, other] : exclusive) {
      if (key == one) j.erase(other);
      if (key == other) j.erase(one);
    }
  }
}

}  // namespace

PlanRequest request_of(const CLI::App& cmd, const PlanOptions& o) {
  if (o.request_file.empty()) {
    if (o.request.model.empty())
      throw InputError(
          "--model is required: a catalog model name, a model JSON file or FILE.onnx (or "
          "--request FILE)");
    if (o.request.cluster.empty())
      throw InputError(
          "--cluster is required: a catalog system name or a cluster JSON file (or --request "
          "FILE)");
    return o.request;
  }
  // The file's keys, each option the command line gives over it (by its name: --seq-len is
  // seq_len).
  nlohmann::json j = to_json(load_plan_request(o.request_file), true);
  overlay_options(cmd, j, to_json(o.request, true),
                  {{"strategy", "plan"}, {"seq_lengths", "seq_dist"}});
  j["command"] = o.request.command;
  return plan_request_from_json(
      j, fmt::format("'{}' with the command line's options", o.request_file));
}

nlohmann::json planner_request(const CLI::App& cmd, const std::string& file,
                               const nlohmann::json& given,
                               const std::vector<std::pair<std::string, std::string>>& exclusive) {
  nlohmann::json j = load_planner_request(file, cmd.get_name());
  overlay_options(cmd, j, given, exclusive);
  return j;
}

void require_options(const std::vector<std::pair<const char*, bool>>& given) {
  for (const auto& [option, present] : given)
    if (!present) throw InputError(fmt::format("{} is required (or --request FILE)", option));
}

void end_with(const Verdict& v) {
  if (v.exit_code == 0) return;
  std::fflush(stdout);
  if (v.exit_code == 2) throw InputError(v.message);
  fmt::print(stderr, "shardcost: {}\n", v.message);
  throw ExitStatus{v.exit_code};
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
  if (e.dp_sync) {
    const DataParallelSync& d = *e.dp_sync;
    const std::string how =
        d.mode == DpSync::async
            ? fmt::format("asynchronous, gradients {} update{} late (bound {})", d.staleness,
                          d.staleness == 1 ? "" : "s", d.bound_steps)
            : fmt::format("local SGD, parameters averaged every {} steps", d.bound_steps);
    out += fmt::format(
        "data parallel   {}; one exchange {:.3f} s; {:.3f} s per update, {:.2f} ms per sample; "
        "convergence is not priced\n",
        how, d.exchange_s, d.per_update_s, 1e3 * d.per_sample_s);
  }
  if (e.strategy.lora > 0)
    out += fmt::format(
        "LoRA            rank-{} adapters on {} train; every other weight is frozen (no weight "
        "gradient, optimizer state or gradient reduction)\n",
        e.strategy.lora, lora_targets_text(e.strategy.lora_linears()));
  if (e.strategy.precision == DType::fp32)
    out += e.strategy.tf32_math
               ? "fp32 math       GEMMs on TF32 tensor cores, as the stack allows "
                 "(--software NAME:tf32_matmul=false for IEEE fp32)\n"
               : "fp32 math       GEMMs in IEEE fp32: the stack leaves TF32 off or the part has "
                 "none (--software NAME:tf32_matmul=true where the framework turns it on)\n";
  if (e.input) {
    const InputBudget& b = *e.input;
    out += fmt::format(
        "input           {} loader{} (one per data-parallel replica), {:g} samples each per "
        "step: {:.3f} s at {} core{} x {:g} samples/s against {:.3f} s of compute; {}\n",
        b.loaders, b.loaders == 1 ? "" : "s", b.samples_per_loader, b.load_s,
        b.loading.cores_per_rank, b.loading.cores_per_rank == 1 ? "" : "s",
        b.loading.samples_per_s_per_core, b.compute_s,
        b.input_bound()
            ? fmt::format("input-bound, the step waits {:.3f} s ({:.1f} cores per rank would keep "
                          "up)",
                          b.wait_s, b.cores_to_keep_up)
            : fmt::format("keeps up ({:.1f} cores per rank would do)", b.cores_to_keep_up));
  }
  return out;
}

std::string input_text(const DataLoading& d) {
  return fmt::format(
      "input           each rank's loader: {} core{} x {:g} samples/s (--data-loading); input "
      "wait s is what a step waits for it beyond compute\n",
      d.cores_per_rank, d.cores_per_rank == 1 ? "" : "s", d.samples_per_s_per_core);
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

std::string uncertainty_line(const StepUncertainty& u) {
  return fmt::format("uncertainty     +/-{:.1f} %: {}\n", 100 * u.relative, u.basis);
}

}  // namespace shardcost::cli
