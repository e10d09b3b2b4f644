// Names of the estimator's enums (as files, the store and the CLI spell them), and the
// cluster's small queries.
#include <fmt/format.h>

#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::fp32:
      return "fp32";
    case DType::tf32:
      return "tf32";
    case DType::bf16:
      return "bf16";
    case DType::fp16:
      return "fp16";
    case DType::fp8:
      return "fp8";
    case DType::mxfp8:
      return "mxfp8";
    case DType::nvfp4:
      return "nvfp4";
  }
  return "?";
}

DType parse_dtype(std::string_view s) {
  for (int i = 0; i < kDTypeCount; ++i) {
    if (to_string(static_cast<DType>(i)) == s) return static_cast<DType>(i);
  }
  throw InputError(
      fmt::format("unknown data type '{}'; use fp32, tf32, bf16, fp16, fp8, mxfp8 or nvfp4", s));
}

// The names tools give data types (nccl-tests: half, float; cuBLAS: bfloat16).
std::optional<DType> parse_store_dtype(std::string_view s) {
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "fp16" || s == "half" || s == "float16") return DType::fp16;
  if (s == "fp32" || s == "float" || s == "float32") return DType::fp32;
  if (s == "tf32") return DType::tf32;
  if (s == "fp8" || s == "e4m3" || s == "fp8_e4m3") return DType::fp8;
  if (s == "mxfp8" || s == "mxfp8_e4m3") return DType::mxfp8;
  if (s == "nvfp4") return DType::nvfp4;
  return std::nullopt;
}

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
  }
  return "?";
}

std::string_view to_string(Balance b) {
  switch (b) {
    case Balance::none:
      return "none";
    case Balance::count:
      return "count";
    case Balance::tokens:
      return "tokens";
    case Balance::cost:
      return "cost";
  }
  return "?";
}

std::string_view to_string(CpKind k) {
  return k == CpKind::ulysses ? "ulysses" : "ring";
}

std::string_view to_string(PipeSchedule p) {
  return p == PipeSchedule::dualpipe ? "dualpipe" : p == PipeSchedule::local ? "local" : "1f1b";
}

std::string_view to_string(FusedAttention k) {
  switch (k) {
    case FusedAttention::fa2:
      return "fa2";
    case FusedAttention::cudnn:
      return "cudnn";
    case FusedAttention::fa3:
      return "fa3";
    case FusedAttention::best:
      break;
  }
  return "best";
}

FusedAttention parse_fused_attention(std::string_view name) {
  for (FusedAttention k :
       {FusedAttention::best, FusedAttention::fa2, FusedAttention::cudnn, FusedAttention::fa3})
    if (name == to_string(k)) return k;
  throw InputError(fmt::format(
      "unknown attention kernel '{}'; use fa2, cudnn, fa3 or best (the catalog's one figure)",
      name));
}

std::optional<std::pair<int, int>> library_release(std::string_view text) {
  int part[2] = {0, 0};
  int parts = 0;
  size_t i = 0;
  while (true) {
    const size_t start = i;
    long value = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i - start < 6)
      value = value * 10 + (text[i++] - '0');
    if (i == start) return std::nullopt;  // empty, or not a digit
    if (parts < 2) part[parts] = static_cast<int>(value);
    ++parts;
    if (i == text.size()) break;
    if (text[i] != '.') return std::nullopt;
    ++i;
  }
  return std::make_pair(part[0], part[1]);
}

std::optional<int> library_release_order(std::string_view text) {
  const auto r = library_release(text);
  if (!r) return std::nullopt;
  return r->first * 1000 + r->second;
}

std::string_view to_string(EpDispatcher d) {
  return d == EpDispatcher::flex ? "flex" : "alltoall";
}

EpDispatcher parse_ep_dispatcher(std::string_view name) {
  for (EpDispatcher d : {EpDispatcher::alltoall, EpDispatcher::flex})
    if (name == to_string(d)) return d;
  throw InputError(fmt::format(
      "unknown expert-parallel dispatcher '{}'; use alltoall (one copy per token and expert) "
      "or flex (DeepEP's and HybridEP's: one copy per destination node and GPU)",
      name));
}

std::string_view to_string(CrossEntropy c) {
  return c == CrossEntropy::te ? "te" : c == CrossEntropy::compiled ? "compiled" : "unfused";
}

CrossEntropy parse_cross_entropy(std::string_view name) {
  for (CrossEntropy c : {CrossEntropy::unfused, CrossEntropy::te, CrossEntropy::compiled})
    if (name == to_string(c)) return c;
  throw InputError(fmt::format(
      "unknown cross entropy '{}'; use unfused (Megatron's VocabParallelCrossEntropy, a PyTorch "
      "op a pass), te (Transformer Engine's fused Triton kernels) or compiled (torch.compile's)",
      name));
}

std::string_view to_string(Float8Recipe r) {
  return r == Float8Recipe::rowwise ? "rowwise" : "tensorwise";
}

Float8Recipe parse_float8_recipe(std::string_view name) {
  for (Float8Recipe r : {Float8Recipe::tensorwise, Float8Recipe::rowwise})
    if (name == to_string(r)) return r;
  throw InputError(fmt::format(
      "unknown float8 recipe '{}'; use tensorwise (a scale per tensor) or rowwise (a scale per "
      "row), torchao's recipes as torchtitan names them",
      name));
}

std::string_view to_string(MxDim1Cast c) {
  return c == MxDim1Cast::cuda ? "cuda" : c == MxDim1Cast::torch ? "torch" : "triton";
}

MxDim1Cast parse_mx_dim1_cast(std::string_view name) {
  for (MxDim1Cast c : {MxDim1Cast::triton, MxDim1Cast::cuda, MxDim1Cast::torch})
    if (name == to_string(c)) return c;
  throw InputError(fmt::format(
      "unknown MXFP8 dim-1 cast kernel '{}'; use triton, cuda (torchao's kernels) or torch (a "
      "transposed copy, then the dim-0 cast), as torchtitan's mxfp8_dim1_cast_kernel_choice "
      "names them",
      name));
}

std::string_view to_string(CpMode m) {
  return m == CpMode::dynamic ? "dynamic" : m == CpMode::flex ? "flex" : "fixed";
}

std::string_view to_string(CostOrigin o) {
  switch (o) {
    case CostOrigin::catalog:
      return "catalog";
    case CostOrigin::interpolated:
      return "interpolated";
    case CostOrigin::measured:
      return "measured";
    case CostOrigin::learned:
      return "learned";
    case CostOrigin::extrapolated:
      return "extrapolated";
    case CostOrigin::calibrated:
      return "calibrated";
  }
  return "?";
}

std::string_view to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce:
      return "all_reduce";
    case CollectiveOp::all_gather:
      return "all_gather";
    case CollectiveOp::reduce_scatter:
      return "reduce_scatter";
    case CollectiveOp::all_to_all:
      return "all_to_all";
    case CollectiveOp::broadcast:
      return "broadcast";
    case CollectiveOp::reduce:
      return "reduce";
    case CollectiveOp::send_recv:
      return "send_recv";
  }
  return "?";
}

std::optional<CollectiveOp> parse_collective_op(std::string_view s) {
  // nccl-tests' short forms are aliases (fitted models of older stores wrote them).
  if (s == "alltoall") return CollectiveOp::all_to_all;
  if (s == "sendrecv") return CollectiveOp::send_recv;
  for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::all_gather,
                          CollectiveOp::reduce_scatter, CollectiveOp::all_to_all,
                          CollectiveOp::broadcast, CollectiveOp::reduce, CollectiveOp::send_recv})
    if (to_string(op) == s) return op;
  return std::nullopt;
}

std::string_view to_string(FabricLevel l) {
  return l == FabricLevel::intra_node ? "intra_node" : "inter_node";
}

int Cluster::total_gpus() const {
  int n = 0;
  for (const auto& g : groups) n += g.nodes * g.gpus_per_node;
  return n;
}

const Fabric& Cluster::network_of(size_t g) const {
  const auto& own = groups[g].inter_node;
  return own ? *own : inter_node;
}

Fabric Cluster::between(size_t a, size_t b) const {
  if (a == b) return network_of(a);
  for (const GroupLink& l : links)
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) return l.fabric;
  const Fabric& x = network_of(a);
  const Fabric& y = network_of(b);
  Fabric slower;
  const bool x_slower = x.bandwidth_Bps * x.efficiency <= y.bandwidth_Bps * y.efficiency;
  slower.bandwidth_Bps = x_slower ? x.bandwidth_Bps : y.bandwidth_Bps;
  slower.efficiency = x_slower ? x.efficiency : y.efficiency;
  slower.latency_s = std::max(x.latency_s, y.latency_s);
  return slower;
}

std::string Cluster::group_names() const {
  std::string names;
  for (const auto& g : groups) names += (names.empty() ? "" : ", ") + g.name;
  return names;
}

const NodeGroup* Cluster::group(std::string_view wanted) const {
  for (const auto& g : groups)
    if (g.name == wanted) return &g;
  return nullptr;
}

}  // namespace shardcost
