#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "format.h"
#include "shardcost/estimator.h"
#include "shardcost/split_learning.h"

namespace shardcost::cli {

namespace {

std::vector<int> zero_stages(const Software& sw) {
  std::vector<int> out;
  for (int z = 0; z <= 3; ++z)
    if (sw.has_zero(z)) out.push_back(z);
  return out;
}

// The software presets: what each modelled stack overlaps and what it can run at all.
nlohmann::json software_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& name : software_presets()) {
    const Software sw = software_preset(name);
    nlohmann::json j = {
        {"name", sw.name},
        {"attention", sw.attention == AttentionKernel::flash
                          ? std::string(to_string(sw.fused_attention))
                          : std::string("standard")},
        {"grad_bytes", sw.grad_bytes},
        {"precision", to_string(sw.precision)},
        {"supports",
         {{"tensor_parallel", sw.tensor_parallel},
          {"sequence_parallel", sw.sequence_parallel},
          {"selective_recompute", sw.selective_recompute},
          {"selective_recompute_modules",
           recompute_modules_text(sw.recompute_modules != 0 ? sw.recompute_modules
                                                            : kRecomputeCoreAttn)},
          {"context_parallel", sw.context_parallel},
          {"expert_parallel", sw.expert_parallel},
          {"max_zero", sw.max_zero},
          {"zero_stages", zero_stages(sw)},
          {"max_zero_with_pipeline", sw.max_zero_with_pipeline},
          {"interleaving", sw.interleaving},
          {"fp8", sw.fp8}}},
        {"zero3_gathers", sw.zero3_gathers == ShardedCalls::per_layer ? "per_layer" : "per_tensor"},
        {"fp8_params", sw.fp8_params},
        {"fp8_library", !sw.fp8             ? ""
                        : sw.torchao_float8 ? "torchao"
                                            : "transformer_engine"},
        {"float8_recipe", to_string(sw.float8_recipe)},
        {"mx_dim1_cast", to_string(sw.mx_dim1_cast)},
        {"ep_dispatcher", to_string(sw.ep_dispatcher)},
        {"cross_entropy", to_string(sw.cross_entropy)},
        {"cudnn", sw.cudnn}};
    // Every switch a --software override takes (what the preset overlaps, fuses, keeps).
    for (const auto& [key, on] : software_switches(sw)) j[key] = on;
    out.push_back(std::move(j));
  }
  return out;
}

// "tf32/tf32": what a preset's fp32 matmuls and convolutions run as where the part has TF32.
std::string fp32_math(const nlohmann::json& sw) {
  return fmt::format("{}/{}", sw["tf32_matmul"].get<bool>() ? "tf32" : "fp32",
                     sw["tf32_conv"].get<bool>() ? "tf32" : "fp32");
}

std::string yes(bool b) {
  return b ? "yes" : "-";
}

// "cudnn 9.13": the fused kernel, with the cuDNN release the stack ships where it names one.
std::string attention(const nlohmann::json& sw) {
  const std::string kernel = sw["attention"], release = sw["cudnn"];
  return release.empty() ? kernel : fmt::format("{} {}", kernel, release);
}

void print_catalog_text() {
  const auto all = nlohmann::json::parse(catalog_json());
  Table devices({"device", "arch", "SMs", "memory GiB", "HBM GB/s", "NVLink GB/s", "bf16 TFLOP/s",
                 "fp16 TFLOP/s", "fp8 TFLOP/s", "nvfp4 TFLOP/s"},
                {false, false, true, true, true, true, true, true, true, true});
  for (const auto& d : all["devices"]) {
    const auto& p = d["peak_tflops"];
    auto peak = [&](const char* type) {  // "-": the device has no such tensor cores
      return p.contains(type) && p[type].is_number() ? fmt::format("{:.0f}", p[type].get<double>())
                                                     : std::string("-");
    };
    devices.add({d["name"], d.value("architecture", ""), fmt::format("{}", d.value("sms", 0)),
                 fmt::format("{:.1f}", d.value("memory_GiB", 0.0)),
                 fmt::format("{:.0f}", d.value("memory_bandwidth_GBps", 0.0)),
                 fmt::format("{:.0f}", d.value("nvlink_bandwidth_GBps", 0.0)), peak("bf16"),
                 peak("fp16"), peak("fp8"), peak("nvfp4")});
  }
  // NVLink domain: GPUs that reach each other at the intra-node rate (a node, or an NVL72 rack).
  Table systems({"system", "device", "GPUs/node", "NVLink domain", "intra GB/s", "inter GB/s"},
                {false, false, true, true, true, true});
  for (const auto& s : all["systems"]) {
    const int per_node = s.value("gpus_per_node", 0);
    systems.add({s["name"], s["device"], fmt::format("{}", per_node),
                 fmt::format("{}", s.value("nvlink_domain_gpus", per_node)),
                 fmt::format("{:.0f}", s.value("intra_node_bandwidth_GBps", 0.0)),
                 fmt::format("{:.0f}", s.value("inter_node_bandwidth_GBps", 0.0))});
  }
  // "256x top-8 +1 shared, 3 dense": routed experts, routing, what else the layers have.
  auto moe_text = [](const Model& model) {
    if (!model.is_moe()) return std::string("-");
    std::string out = fmt::format("{}x top-{}", model.moe.experts, model.moe.top_k);
    if (model.moe.shared_experts > 0) out += fmt::format(" +{} shared", model.moe.shared_experts);
    if (model.moe.first_dense_layers > 0)
      out += fmt::format(", {} dense", model.moe.first_dense_layers);
    return out;
  };
  Table models({"model", "params", "layers", "hidden", "heads", "kv", "ffn", "vocab", "seq", "moe"},
               {false, true, true, true, true, true, true, true, true, false});
  for (const auto& m : all["models"]) {
    const Model model = load_model(m["name"].get<std::string>());
    models.add({model.name, fmt::format("{:.1f}B", parameter_count(model) / 1e9),
                fmt::format("{}", model.layers), fmt::format("{}", model.hidden),
                fmt::format("{}", model.heads), fmt::format("{}", model.kv_heads),
                fmt::format("{}", model.ffn_hidden), fmt::format("{}", model.vocab),
                fmt::format("{}", model.seq_len), moe_text(model)});
  }
  fmt::print("devices (dense peaks; sources in 'shardcost catalog --format json')\n{}\n",
             devices.render(2));
  fmt::print("systems (bandwidth per GPU, one direction)\n{}\n", systems.render(2));
  fmt::print("models\n{}", models.render(2));
  Table software(
      {"software", "precision", "fp32 math", "attention", "loss", "tp", "sp", "selective", "cp",
       "ep", "fp8", "zero", "grads"},
      {false, false, false, false, false, false, false, false, false, false, false, true, true});
  for (const auto& sw : software_json()) {
    const auto& su = sw["supports"];
    software.add(
        {sw["name"], sw["precision"], fp32_math(sw), attention(sw), sw["cross_entropy"],
         yes(su["tensor_parallel"]), yes(su["sequence_parallel"]),
         su["selective_recompute"].get<bool>()
             ? su["selective_recompute_modules"].get<std::string>() == "ops" ? "per op" : "yes"
             : "-",
         yes(su["context_parallel"]), yes(su["expert_parallel"]),
         sw["fp8_library"] == "torchao" ? "torchao" : yes(su["fp8"]),
         fmt::format("{}", fmt::join(su["zero_stages"].get<std::vector<int>>(), ",")),
         fmt::format("{} B", sw["grad_bytes"].get<int>())});
  }
  fmt::print(
      "\nsoftware presets (what each stack can run; --software NAME; fp32 math: what fp32 "
      "matmuls/convolutions run as on parts with TF32; loss: Megatron's unfused cross entropy "
      "or Transformer Engine's fused one)\n{}",
      software.render(2));
  Table edge({"edge device", "fp32 GFLOP/s", "fp16 GFLOP/s", "memory GiB", "GB/s", "description"},
             {false, true, true, true, true, false});
  for (const EdgeDevice& d : edge_devices())
    edge.add({d.name, fmt::format("{:.0f}", d.fp32_flops / 1e9),
              d.fp16_flops > 0 ? fmt::format("{:.0f}", d.fp16_flops / 1e9) : "-",
              fmt::format("{:.1f}", d.memory_bytes / kGiB),
              fmt::format("{:.1f}", d.memory_bandwidth_Bps / 1e9), d.description});
  fmt::print(
      "\nedge devices (split-learning; peaks, sources in 'shardcost catalog --format json')\n{}",
      edge.render(2));
}

}  // namespace

void add_catalog_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("catalog", "Print the built-in devices, systems and models");
  auto format = std::make_shared<std::string>("text");
  cmd->add_option("--format", *format, "text or json (json carries every figure's source)");
  cmd->callback([format] {
    if (parse_format(*format, {Format::text, Format::json}) == Format::json) {
      nlohmann::json all = nlohmann::json::parse(catalog_json());
      all["software"] = software_json();
      fmt::print("{}\n", json_text(all));
    } else {
      print_catalog_text();
    }
  });
}

}  // namespace shardcost::cli
