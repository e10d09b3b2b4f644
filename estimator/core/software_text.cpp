// A software stack as text, "preset[:key=value,...]": what a measured run stores of the stack
// it ran on, read back into the same Software.
#include <fmt/format.h>

#include <cmath>

#include "shardcost/error.h"
#include "shardcost/strategy.h"
#include "shardcost/units.h"

namespace shardcost {
namespace {

using units::kGiB;

// The overlaps a user or a recipe turns off (or on) against the preset.
struct BoolKey {
  const char* name;
  bool Software::*field;
};
constexpr BoolKey kBoolKeys[] = {
    {"overlap_grad_reduce", &Software::overlap_grad_reduce},
    {"overlap_param_gather", &Software::overlap_param_gather},
    {"tp_comm_overlap", &Software::tp_comm_overlap},
    {"async_tp_backward", &Software::async_tp_backward},
    {"overlap_p2p", &Software::overlap_p2p},
    {"tf32_matmul", &Software::tf32_matmul},
    {"tf32_conv", &Software::tf32_conv},
    {"conv_winograd", &Software::conv_winograd},
    {"grouped_gemm_per_expert", &Software::grouped_gemm_per_expert},
    {"fused_grouped_mlp", &Software::fused_grouped_mlp},
    {"fp8_attention", &Software::fp8_attention},
    {"fp8_current_scaling", &Software::fp8_current_scaling},
    {"fused_grad_accumulation", &Software::fused_grad_accumulation},
    {"quantized_moe_act_input", &Software::quantized_moe_act_input},
    {"bf16_optimizer_moments", &Software::bf16_optimizer_moments},
    {"fp16_grads", &Software::fp16_grads},
    {"grad_nan_check", &Software::grad_nan_check},
    {"grad_scale_in_place", &Software::grad_scale_in_place},
    {"grad_coalesce_copies", &Software::grad_coalesce_copies},
    {"fsdp_copy_out", &Software::fsdp_copy_out},
    {"eager_elementwise", &Software::eager_elementwise},
    {"cuda_graphs", &Software::cuda_graphs},
    {"compile", &Software::compile},
    {"float8_all_gather", &Software::float8_all_gather},
    {"sac_saves_scaled_mm", &Software::sac_saves_scaled_mm},
    {"quantize_experts", &Software::quantize_experts},
    {"float8_tp", &Software::float8_tp},
    {"zero3_list_collectives", &Software::zero3_list_collectives},
};

std::string known_keys() {
  std::string out;
  for (const auto& k : kBoolKeys) out += std::string(k.name) + ", ";
  return out +
         "attention, cross_entropy, cudnn, ep_dispatcher, float8_recipe, memory_headroom_gib, "
         "mx_dim1_cast";
}

// The loss a stack computes unless a cross_entropy key says otherwise: compile=true compiles
// torchtitan's loss with its layers (compile.components "model" and "loss").
CrossEntropy implied_cross_entropy(const Software& s, const Software& preset) {
  return s.compile && !preset.compile && preset.cross_entropy == CrossEntropy::unfused
             ? CrossEntropy::compiled
             : preset.cross_entropy;
}

}  // namespace

Software parse_software(std::string_view text) {
  const size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  Software s = software_preset(name);
  if (colon == std::string_view::npos) return s;
  const Software preset = s;
  bool loss_given = false;
  std::string_view rest = text.substr(colon + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw InputError(
          fmt::format("software '{}': '{}' is not key=value; write e.g. "
                      "nemo:tp_comm_overlap=false",
                      text, item));
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    bool done = false;
    for (const auto& k : kBoolKeys) {
      if (key != k.name) continue;
      if (value != "true" && value != "false")
        throw InputError(
            fmt::format("software '{}': {} is '{}'; give true or false", text, key, value));
      s.*k.field = value == "true";
      done = true;
    }
    if (key == "attention") {
      s.fused_attention = parse_fused_attention(value);
      done = true;
    } else if (key == "cross_entropy") {
      s.cross_entropy = parse_cross_entropy(value);
      loss_given = true;
      done = true;
    } else if (key == "float8_recipe") {
      s.float8_recipe = parse_float8_recipe(value);
      done = true;
    } else if (key == "mx_dim1_cast") {
      s.mx_dim1_cast = parse_mx_dim1_cast(value);
      done = true;
    } else if (key == "cudnn") {
      if (!library_release(value))
        throw InputError(fmt::format(
            "software '{}': cudnn is '{}'; give the release the stack ships, e.g. cudnn=9.19", text,
            value));
      s.cudnn = std::string(value);
      done = true;
    } else if (key == "ep_dispatcher") {
      s.ep_dispatcher = parse_ep_dispatcher(value);
      done = true;
    } else if (key == "memory_headroom_gib") {
      double gib = -1;
      try {
        size_t used = 0;
        gib = std::stod(std::string(value), &used);
        if (used != value.size()) gib = -1;
      } catch (const std::exception&) {
        gib = -1;
      }
      if (!(gib >= 0 && gib <= 1024))
        throw InputError(fmt::format(
            "software '{}': memory_headroom_gib is '{}'; give GiB from 0 to 1024", text, value));
      s.memory_fixed_bytes = gib * kGiB;
      s.memory_fragmentation = 0;
      done = true;
    }
    if (!done)
      throw InputError(
          fmt::format("software '{}': unknown key '{}'; the keys are {}", text, key, known_keys()));
  }
  if (!loss_given) s.cross_entropy = implied_cross_entropy(s, preset);
  // Keys of one stack's kind set on another's.
  if (s.compile && !preset.eager_elementwise)
    throw InputError(fmt::format(
        "software '{}': compile is torch.compile over eager PyTorch's layers (torchtitan); {} "
        "runs fused kernels already; drop compile",
        text, s.name));
  if (!s.torchao_float8 &&
      (s.float8_all_gather || s.sac_saves_scaled_mm || s.quantize_experts || !s.float8_tp ||
       s.float8_recipe != preset.float8_recipe || s.mx_dim1_cast != preset.mx_dim1_cast))
    throw InputError(fmt::format(
        "software '{}': float8_recipe, float8_all_gather, float8_tp, sac_saves_scaled_mm, "
        "mx_dim1_cast and quantize_experts are torchao's (torchtitan); {} "
        "trains FP8 through Transformer Engine; drop them",
        text, s.name));
  if (s.torchao_float8 && (s.fp8_current_scaling || s.fp8_attention))
    throw InputError(fmt::format(
        "software '{}': fp8_current_scaling and fp8_attention are Transformer Engine's; {} "
        "trains float8 through torchao (float8_recipe, float8_all_gather)",
        text, s.name));
  if (s.float8_all_gather && s.float8_recipe != Float8Recipe::tensorwise)
    throw InputError(fmt::format(
        "software '{}': torchao gathers weights in float8 only under the tensorwise recipe "
        "(Float8LinearConfig refuses it otherwise); drop float8_all_gather or use "
        "float8_recipe=tensorwise",
        text));
  return s;
}

std::vector<std::pair<std::string, bool>> software_switches(const Software& s) {
  std::vector<std::pair<std::string, bool>> out;
  for (const auto& k : kBoolKeys) out.emplace_back(k.name, s.*k.field);
  return out;
}

std::string software_text(const Software& s) {
  const Software preset = software_preset(s.name);
  std::string out;
  auto add = [&](const std::string& item) { out += (out.empty() ? ":" : ",") + item; };
  for (const auto& k : kBoolKeys)
    if (s.*k.field != preset.*k.field)
      add(fmt::format("{}={}", k.name, s.*k.field ? "true" : "false"));
  if (s.fused_attention != preset.fused_attention)
    add(fmt::format("attention={}", to_string(s.fused_attention)));
  if (s.cross_entropy != implied_cross_entropy(s, preset))
    add(fmt::format("cross_entropy={}", to_string(s.cross_entropy)));
  if (s.float8_recipe != preset.float8_recipe)
    add(fmt::format("float8_recipe={}", to_string(s.float8_recipe)));
  if (s.mx_dim1_cast != preset.mx_dim1_cast)
    add(fmt::format("mx_dim1_cast={}", to_string(s.mx_dim1_cast)));
  if (s.cudnn != preset.cudnn) add(fmt::format("cudnn={}", s.cudnn));
  if (s.ep_dispatcher != preset.ep_dispatcher)
    add(fmt::format("ep_dispatcher={}", to_string(s.ep_dispatcher)));
  if (s.memory_fixed_bytes != preset.memory_fixed_bytes ||
      s.memory_fragmentation != preset.memory_fragmentation)
    add(fmt::format("memory_headroom_gib={}", s.memory_fixed_bytes / kGiB));
  return s.name + out;
}

}  // namespace shardcost
