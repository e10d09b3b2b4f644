// Strategy text, names of enums, software presets, and the divisibility rules a strategy
// must satisfy before it can be priced.
#include <fmt/format.h>

#include <charconv>

#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::fp32: return "fp32";
    case DType::tf32: return "tf32";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp8: return "fp8";
  }
  return "?";
}

DType parse_dtype(std::string_view s) {
  for (int i = 0; i < kDTypeCount; ++i) {
    if (to_string(static_cast<DType>(i)) == s) return static_cast<DType>(i);
  }
  throw InputError(fmt::format("unknown data type '{}'; use fp32, tf32, bf16, fp16 or fp8", s));
}

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

std::string_view to_string(CostOrigin o) {
  switch (o) {
    case CostOrigin::catalog: return "catalog";
    case CostOrigin::interpolated: return "interpolated";
    case CostOrigin::measured: return "measured";
  }
  return "?";
}

std::string_view to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce: return "all_reduce";
    case CollectiveOp::all_gather: return "all_gather";
    case CollectiveOp::reduce_scatter: return "reduce_scatter";
    case CollectiveOp::all_to_all: return "alltoall";
    case CollectiveOp::broadcast: return "broadcast";
    case CollectiveOp::reduce: return "reduce";
    case CollectiveOp::send_recv: return "sendrecv";
  }
  return "?";
}

std::optional<CollectiveOp> parse_collective_op(std::string_view s) {
  for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::all_gather,
                          CollectiveOp::reduce_scatter, CollectiveOp::all_to_all,
                          CollectiveOp::broadcast, CollectiveOp::reduce, CollectiveOp::send_recv})
    if (to_string(op) == s) return op;
  return std::nullopt;
}

std::string_view to_string(FabricLevel l) {
  return l == FabricLevel::intra_node ? "intra_node" : "inter_node";
}

std::string to_string(const Strategy& s) {
  return fmt::format("tp={},pp={},dp={},cp={},ep={},mbs={},gbs={},vpp={},recompute={},sp={},zero={}",
                     s.tp, s.pp, s.dp, s.cp, s.ep, s.mbs, s.gbs, s.vpp, to_string(s.recompute),
                     s.sp ? "true" : "false", s.zero);
}

Software software_preset(std::string_view name) {
  Software s;
  s.name = std::string(name);
  // megatron-core: Megatron-Core with Transformer Engine: FlashAttention, gradient
  // reduction overlapped with backward (--overlap-grad-reduce), parameter all-gathers
  // overlapped with forward (--overlap-param-gather), fp32 main gradients, fused
  // accumulation, asynchronous tensor-parallel backward collectives. The defaults.
  if (name == "megatron-lm-2022" || name == "megatron-lm-2021") {
    // Megatron-LM of the Korthikanti et al. 2022 experiments (code of May 2022): unfused
    // softmax attention (FlashAttention came later), gradients all-reduced after the pipeline
    // flush (overlapping it with backward came in 2023), bf16 with fp32 main gradients,
    // gradient-accumulation fusion on by default (since February 2022), the column-parallel
    // input-gradient all-reduce asynchronous behind the weight-gradient GEMM (since
    // September 2021).
    s.attention = AttentionKernel::standard;
    s.overlap_grad_reduce = false;
    s.overlap_param_gather = false;
  }
  if (name == "megatron-lm-2021") {
    // Megatron-LM of Narayanan et al. 2021 (code of April 2021, --fp16 as its example
    // scripts): fp16 gradients accumulated by autograd (grad += new_grad every micro-batch)
    // and all-reduced in fp16, dynamic loss scaling, synchronous tensor-parallel collectives.
    s.grad_bytes = 2;
    s.loss_scaling = true;
    s.fused_grad_accumulation = false;
    s.async_tp_backward = false;
  }
  if (name == "megatron-core" || name == "megatron-lm-2022" || name == "megatron-lm-2021") return s;
  throw InputError(fmt::format("unknown software preset '{}'; use megatron-core, megatron-lm-2022 "
                               "or megatron-lm-2021",
                               name));
}

std::vector<std::string> software_presets() {
  return {"megatron-core", "megatron-lm-2022", "megatron-lm-2021"};
}

namespace {

int parse_int_value(std::string_view key, std::string_view value) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || ptr != value.data() + value.size() || v < 0)
    throw InputError(fmt::format("strategy key '{}' needs a non-negative integer (got '{}')", key,
                                 value));
  return v;
}

bool parse_bool_value(std::string_view key, std::string_view value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  throw InputError(fmt::format("strategy key '{}' needs true or false (got '{}')", key, value));
}

Recompute parse_recompute(std::string_view value) {
  if (value == "none") return Recompute::none;
  if (value == "selective") return Recompute::selective;
  if (value == "full") return Recompute::full;
  throw InputError(fmt::format("strategy key 'recompute' needs none, selective or full (got '{}')",
                               value));
}

}  // namespace

// Applies "key=value,..." onto s; returns the keys that were set.
std::vector<std::string> apply_strategy_text(std::string_view text, Strategy& s) {
  std::vector<std::string> keys;
  while (!text.empty()) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos)
      throw InputError(fmt::format("strategy item '{}' is not key=value; write e.g. tp=8", item));
    const auto key = item.substr(0, eq);
    const auto value = item.substr(eq + 1);
    if (key == "tp") s.tp = parse_int_value(key, value);
    else if (key == "pp") s.pp = parse_int_value(key, value);
    else if (key == "dp") s.dp = parse_int_value(key, value);
    else if (key == "cp") s.cp = parse_int_value(key, value);
    else if (key == "ep") s.ep = parse_int_value(key, value);
    else if (key == "mbs") s.mbs = parse_int_value(key, value);
    else if (key == "gbs") s.gbs = parse_int_value(key, value);
    else if (key == "vpp") s.vpp = parse_int_value(key, value);
    else if (key == "zero") s.zero = parse_int_value(key, value);
    else if (key == "recompute") s.recompute = parse_recompute(value);
    else if (key == "sp") s.sp = parse_bool_value(key, value);
    else
      throw InputError(fmt::format("unknown strategy key '{}'; use tp, pp, dp, cp, ep, mbs, gbs, "
                                   "vpp, recompute, sp, zero",
                                   key));
    for (const char* k : {"tp", "pp", "dp", "cp", "ep", "mbs", "gbs", "vpp"}) {
      if (key == k && parse_int_value(key, value) == 0)
        throw InputError(fmt::format("strategy key '{}' must be at least 1", key));
    }
    keys.emplace_back(key);
  }
  return keys;
}

Strategy parse_strategy(std::string_view text, int gpus) {
  Strategy s;
  s.dp = 0;
  apply_strategy_text(text, s);
  if (s.dp == 0) {
    const int inner = s.tp * s.pp * s.cp;
    if (inner <= 0 || gpus % inner != 0)
      throw InputError(fmt::format("tp*pp*cp = {} does not divide the {} GPUs; choose sizes whose "
                                   "product divides the GPU count",
                                   inner, gpus));
    s.dp = gpus / inner;
  }
  if (s.gbs == 0) s.gbs = s.mbs * s.dp;
  if (s.gpus() != gpus)
    throw InputError(fmt::format("tp*pp*dp*cp = {} but the cluster has {} GPUs; make them equal "
                                 "(or drop dp to derive it)",
                                 s.gpus(), gpus));
  return s;
}

std::optional<std::string> check_strategy(const Model& m, const Cluster& c, const Strategy& s) {
  if (c.groups.size() != 1)
    return "heterogeneous clusters (several node groups) are not priced yet; use one node group";
  if (s.tp < 1 || s.pp < 1 || s.dp < 1 || s.cp < 1 || s.ep < 1 || s.mbs < 1 || s.vpp < 1)
    return "every parallel size must be at least 1";
  if (s.gpus() != c.total_gpus())
    return fmt::format("tp*pp*dp*cp = {} but the cluster has {} GPUs", s.gpus(), c.total_gpus());
  if (m.heads % s.tp != 0) return fmt::format("tp={} does not divide the {} heads", s.tp, m.heads);
  if (m.kv_heads % s.tp != 0 && s.tp % m.kv_heads != 0)
    return fmt::format("tp={} and the {} kv heads do not divide each other", s.tp, m.kv_heads);
  if (m.ffn_hidden % s.tp != 0)
    return fmt::format("tp={} does not divide ffn_hidden={}", s.tp, m.ffn_hidden);
  if (s.pp > m.layers) return fmt::format("pp={} is above the {} layers", s.pp, m.layers);
  // Uneven stages are fine for 1F1B; the interleaved schedule needs equal model chunks.
  if (s.vpp > 1 && m.layers % (s.pp * s.vpp) != 0)
    return fmt::format("pp*vpp = {} does not divide the {} layers (interleaving needs equal "
                       "chunks)",
                       s.pp * s.vpp, m.layers);
  if (s.vpp > 1 && s.pp == 1) return "vpp>1 needs pp>1 (interleaving is a pipeline schedule)";
  if (m.seq_len % (2 * s.cp) != 0 && s.cp > 1)
    return fmt::format("cp={} needs seq_len ({}) divisible by 2*cp", s.cp, m.seq_len);
  if (s.sp && s.tp == 1) return "sp=true needs tp>1";
  if (s.zero < 0 || s.zero > 3) return fmt::format("zero={} is not a ZeRO stage (0-3)", s.zero);
  if (s.gbs < 1) return "gbs must be at least 1";
  if (s.gbs % (s.mbs * s.dp) != 0)
    return fmt::format("gbs={} is not a multiple of mbs*dp = {}", s.gbs, s.mbs * s.dp);
  if (s.vpp > 1 && s.micro_batches() % s.pp != 0)
    return fmt::format("the interleaved schedule needs the {} micro-batches to be a multiple of "
                       "pp={}",
                       s.micro_batches(), s.pp);
  if (!m.is_moe() && s.ep != 1) return "ep>1 needs a mixture-of-experts model";
  if (m.is_moe()) {
    if (m.experts % s.ep != 0)
      return fmt::format("ep={} does not divide the {} experts", s.ep, m.experts);
    if ((s.dp * s.cp) % s.ep != 0)
      return fmt::format("ep={} does not divide dp*cp = {} (experts are spread over the data-"
                         "parallel ranks)",
                         s.ep, s.dp * s.cp);
  }
  return std::nullopt;
}

}  // namespace shardcost
