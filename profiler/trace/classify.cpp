// Kernel classification by name: one ordered table, first match wins. The order matters where
// names carry two hints ("vectorized_elementwise_kernel<FillFunctor>" is a set, not an
// elementwise pass; "fmha_cutlass" is attention, not a GEMM). docs/tracing.md shows the table.
#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "shardcost/trace.h"

namespace shardcost::trace {
namespace {

struct Rule {
  std::string_view needle;  // lower case; matched anywhere in the lower-cased name
  KernelClass cls;
};

constexpr std::array kRules = {
    // Communication first: NCCL names also contain "reduce", "copy", "gemm"-free words.
    Rule{"nccl", KernelClass::communication},
    Rule{"nvshmem", KernelClass::communication},
    Rule{"cross_device_reduce", KernelClass::communication},  // vLLM custom all-reduce
    Rule{"allreduce", KernelClass::communication},
    // Attention before GEMM: flash/fmha kernels are often CUTLASS-built.
    Rule{"flash", KernelClass::attention},
    Rule{"fmha", KernelClass::attention},
    Rule{"sdpa", KernelClass::attention},  // cuDNN SDPA ("cudnn_generated_fort_native_sdpa")
    Rule{"attention", KernelClass::attention},
    Rule{"attn", KernelClass::attention},
    Rule{"xformers", KernelClass::attention},
    // GEMM: cuBLAS/cuBLASLt (incl. "nvjet" on Hopper, cuBLAS >= 12.8), CUTLASS, xmma.
    Rule{"gemm", KernelClass::gemm},
    Rule{"gemv", KernelClass::gemm},
    Rule{"cutlass", KernelClass::gemm},
    Rule{"cublas", KernelClass::gemm},
    Rule{"nvjet", KernelClass::gemm},
    Rule{"xmma", KernelClass::gemm},
    Rule{"wgmma", KernelClass::gemm},
    Rule{"matmul", KernelClass::gemm},
    Rule{"cijk_", KernelClass::gemm},  // AMD rocBLAS/hipBLASLt Tensile: "Cijk_Alik_Bljk_..."
    // Normalisation (softmax normalises a row, so it counts here).
    Rule{"layer_norm", KernelClass::normalization},
    Rule{"layernorm", KernelClass::normalization},
    Rule{"rms_norm", KernelClass::normalization},
    Rule{"rmsnorm", KernelClass::normalization},
    Rule{"batch_norm", KernelClass::normalization},
    Rule{"batchnorm", KernelClass::normalization},
    Rule{"group_norm", KernelClass::normalization},
    Rule{"softmax", KernelClass::normalization},
    // Sets and copies before elementwise: PyTorch runs both through elementwise templates.
    Rule{"fillfunctor", KernelClass::set},
    Rule{"fill_kernel", KernelClass::set},
    Rule{"memset", KernelClass::set},
    Rule{"zero_", KernelClass::set},
    Rule{"copy", KernelClass::copy},
    Rule{"memcpy", KernelClass::copy},
    Rule{"transpose", KernelClass::copy},
    // Reductions (Triton: "triton_red_", "triton_per_" persistent reductions).
    Rule{"reduce", KernelClass::reduction},
    Rule{"reduction", KernelClass::reduction},
    Rule{"triton_red", KernelClass::reduction},
    Rule{"triton_per", KernelClass::reduction},
    Rule{"argmax", KernelClass::reduction},
    Rule{"scan", KernelClass::reduction},
    // Elementwise (Triton pointwise: "triton_poi_").
    Rule{"elementwise", KernelClass::elementwise},
    Rule{"pointwise", KernelClass::elementwise},
    Rule{"triton_poi", KernelClass::elementwise},
    Rule{"unrolled", KernelClass::elementwise},
    Rule{"gelu", KernelClass::elementwise},
    Rule{"silu", KernelClass::elementwise},
    Rule{"relu", KernelClass::elementwise},
    Rule{"dropout", KernelClass::elementwise},
    Rule{"adam", KernelClass::elementwise},
};

struct Token {
  std::string_view text;
  std::string_view value;
};

constexpr std::array kCollectives = {
    Token{"allreduce", "all_reduce"},
    Token{"allgather", "all_gather"},
    Token{"reducescatter", "reduce_scatter"},
    Token{"alltoall", "all_to_all"},
    Token{"broadcast", "broadcast"},
    Token{"reduce", "reduce"},
    Token{"sendrecv", "send_recv"},
    Token{"send", "send"},
    Token{"recv", "recv"},
};
constexpr std::array kAlgorithms = {
    Token{"ring", "ring"},   Token{"tree", "tree"}, Token{"collnet", "collnet"},
    Token{"nvls", "nvls"},   Token{"pat", "pat"},   Token{"direct", "direct"},
    Token{"chain", "chain"},
};
constexpr std::array kProtocols = {Token{"ll", "LL"}, Token{"ll128", "LL128"},
                                   Token{"simple", "simple"}};
constexpr std::array kTypes = {
    Token{"f16", "f16"},       Token{"half", "f16"},      Token{"f32", "f32"},
    Token{"float", "f32"},     Token{"f64", "f64"},       Token{"double", "f64"},
    Token{"bf16", "bf16"},     Token{"bfloat16", "bf16"}, Token{"i8", "i8"},
    Token{"int8", "i8"},       Token{"u8", "u8"},         Token{"uint8", "u8"},
    Token{"i32", "i32"},       Token{"int32", "i32"},     Token{"u32", "u32"},
    Token{"uint32", "u32"},    Token{"i64", "i64"},       Token{"int64", "i64"},
    Token{"u64", "u64"},       Token{"uint64", "u64"},    Token{"f8e4m3", "f8e4m3"},
    Token{"f8e5m2", "f8e5m2"},
};

// The name without the words that name a library rather than what the kernel does: FBGEMM
// ("fbgemm_gpu::split_embedding_codegen_forward_...", in a kernel's namespace or its template
// arguments) holds embedding, quantisation and sparse kernels, which are no GEMMs; its GEMMs
// say so in their own names ("f8f8bf16_rowwise_gemm").
std::string without_library_names(std::string s) {
  for (size_t at; (at = s.find("fbgemm")) != std::string::npos;) s.erase(at, 6);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

template <size_t N>
std::string_view lookup(const std::array<Token, N>& table, std::string_view word) {
  for (const auto& t : table)
    if (t.text == word) return t.value;
  return {};
}

// NCCL kernel names: "ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)" (NCCL >= 2.19),
// "ncclKernel_AllReduce_RING_LL_Sum_float(...)" (older), "ncclDevKernel_SendRecv(...)".
void parse_nccl(const std::string& lowered, Classification& c) {
  std::string_view s = lowered;
  s = s.substr(0, s.find('('));
  s = s.substr(0, s.find('<'));
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find('_', pos);
    if (end == std::string_view::npos) end = s.size();
    const std::string_view word = s.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) continue;
    if (auto v = lookup(kCollectives, word); !v.empty() && c.collective.empty())
      c.collective = v;
    else if (auto a = lookup(kAlgorithms, word); !a.empty()) {
      // COLLNET_DIRECT, COLLNET_CHAIN and NVLS_TREE are one algorithm spelled in two words.
      c.algorithm = c.algorithm.empty() ? std::string(a) : c.algorithm + "_" + std::string(a);
    } else if (auto p = lookup(kProtocols, word); !p.empty())
      c.protocol = p;
    else if (auto t = lookup(kTypes, word); !t.empty() && c.dtype.empty())
      c.dtype = t;
  }
}

}  // namespace

std::string_view to_string(KernelClass c) {
  switch (c) {
    case KernelClass::gemm:
      return "gemm";
    case KernelClass::attention:
      return "attention";
    case KernelClass::communication:
      return "communication";
    case KernelClass::normalization:
      return "normalization";
    case KernelClass::elementwise:
      return "elementwise";
    case KernelClass::reduction:
      return "reduction";
    case KernelClass::copy:
      return "copy";
    case KernelClass::set:
      return "set";
    case KernelClass::sync:
      return "sync";
    case KernelClass::other:
      return "other";
  }
  return "other";
}

Classification classify(std::string_view name, db::EventKind kind) {
  Classification c;
  switch (kind) {
    case db::EventKind::memcpy:
      c.cls = KernelClass::copy;
      return c;
    case db::EventKind::memset:
      c.cls = KernelClass::set;
      return c;
    case db::EventKind::sync:
      c.cls = KernelClass::sync;
      return c;
    case db::EventKind::kernel:
      break;
  }
  const std::string lowered = lower(name);
  const std::string own = without_library_names(lowered);
  for (const auto& rule : kRules) {
    if (own.find(rule.needle) == std::string::npos) continue;
    c.cls = rule.cls;
    break;
  }
  if (c.cls == KernelClass::communication && lowered.starts_with("nccl")) parse_nccl(lowered, c);
  return c;
}

}  // namespace shardcost::trace
