#include "shardcost/workload.h"

namespace shardcost {

double Op::forward_flops() const {
  switch (kind) {
    case OpKind::gemm:
      return 2.0 * gemm.m * gemm.n * gemm.k * gemm.batch;
    case OpKind::attention:
      return flops;
    default:
      return 0;
  }
}

namespace {

// torchao's MXFP8 casts (torchao/prototype/mx_formats: mx_linear.py's mx_mm, mx_tensor.py's
// to_mx), per element cast from 16 bits: one E8M0 scale a block of 32 elements, computed in the
// cast (no tensor-wide amax, nothing all-reduced; "all distributed communication for MXFP8
// training is done in high precision"), and rearranged into cuBLAS's blocked scale layout
// before torch._scaled_mm (read and write the scales again).
// - along the contiguous dimension (dim 0): compiled, one Inductor kernel reads the tensor and
//   writes the MXFP8 data and its scales (2 + 1 + 1/32); eager, ATen op by op as float8's
//   tensorwise cast, 33 B (abs, the blocks' amax, to fp32, the division, the clamp, to float8);
// - along the other (dim 1, for the GEMMs that reduce over tokens or output features): a
//   Triton or CUDA kernel of torchao's reads once and writes the transposed copy (as dim 0
//   compiled), eager or not; mx_dim1_cast=torch copies the tensor transposed in 16 bits first
//   (read 2, write 2; Inductor's own dim-1 kernel, which torchtitan calls a temporary work-
//   around for, priced as that copy and the cast).
// mx_mm saves the 16-bit input and weight, and casts per GEMM: forward the input and the
// weight along dim 0; backward the output gradient along dim 0 (input gradient) and dim 1
// (weight gradient), the weight along dim 1 and the input along dim 1.
void mx_numerics(const TorchaoFloat8& ao, Numerics& n) {
  constexpr double kScales = 1.0 / 32;
  constexpr double kCast = 2 + 1 + kScales + 2 * kScales;
  constexpr double kEagerCast = 33 + kScales + 2 * kScales, kTransposeCopy = 4;
  const double dim0 = ao.compiled ? kCast : kEagerCast;
  const double dim1 = ao.mx_dim1_torch ? kTransposeCopy + dim0 : kCast;
  n.keeps_quantized_input = false;
  n.gathers_quantized = false;
  n.ao_shared_input_casts = !ao.compiled;
  n.ao = {dim0, dim1, dim0 + dim1, dim0, dim1};
  // The experts' grouped GEMMs (_MXFP8GroupedMM) cast with torchao's Triton dim-0 and CUDA
  // dim-1 kernels whatever the linears' settings, eager or compiled.
  n.ao_experts = {kCast, kCast, 2 * kCast, kCast, kCast};
}

// torchao's float8 casts (torchao/float8: float8_linear.py's matmul_with_hp_or_float8_args,
// float8_scaling_utils.py, float8_ops.py's preprocess_addmm), in bytes per element cast from
// 16 bits (e = 2) to float8 (1):
// - eager, each cast is ATen op by op: abs (read e, write e) and max (read e) for the amax,
//   then to fp32 (e + 4), the product with the scale (4 + 4), the clamp (4 + 4) and the cast to
//   float8 (4 + 1): 33 B; rowwise the amax along a dimension costs the same;
// - compiled, Inductor fuses a cast into an amax reduction (read e) and one kernel that reads
//   the tensor again and writes float8 (e + 1): 5 B; a rowwise scale along the contiguous
//   dimension is one kernel (e + 1: 3 B), along the other a reduction first (5 B); a cast
//   whose amax is already known reads and writes once (3 B);
// - torch._scaled_mm takes its first operand row-major and its second column-major, so the
//   backward's weight, output gradient and input need float8 copies transposed: a copy of its
//   own in eager (read 1, write 1), one more write where Inductor fuses it into the cast.
void torchao_numerics(const TorchaoFloat8& ao, bool tp, Numerics& n) {
  n.torchao = true;
  n.ao_recomputes_every_gemm = !ao.sac_saves_scaled_mm;
  n.norm_fuses_cast = false;
  constexpr double kEagerCast = 33, kCompiledCast = 5, kRowCast = 3, kCopy = 2, kWrite = 1;
  // The routed experts (torchtitan's grouped-GEMM converters): MXFP8 by torchao's own kernels
  // (mx_numerics), float8 always rowwise (torchao/prototype/moe_training/fp8_grouped_mm.py,
  // _Float8GroupedMM): forward the tokens and the experts' weights scaled along their inner
  // dimension (the contiguous one: 3 B compiled, ATen's 33 eager); backward the output
  // gradient so, the weights transposed by two Triton kernels (their scales, then the cast:
  // 5 B), and for the weight gradient the output gradient and the saved 16-bit tokens each
  // cast per expert group across tokens by a two-pass Triton kernel (5 B). (From 2025-08-27 to
  // 2026-03-02 torchao copied those two column-major first, 4 B more each: not priced.)
  n.ao_quantized_experts = ao.experts;
  if (ao.mx) {
    mx_numerics(ao, n);
    return;
  }
  const double row = ao.compiled ? kRowCast : kEagerCast;
  n.ao_experts = {row, kCompiledCast, row + kCompiledCast, row, kCompiledCast};
  if (ao.recipe == Float8Recipe::tensorwise) {
    // Forward: the input and the weight cast (the weight already float8 where FSDP2 gathered
    // it so, its shard cast before the gather). Backward: the output gradient cast with its
    // transpose; the weight transposed, from the gathered float8 weight, or compiled recast
    // from the 16-bit weight with the amax the forward took (read 2, write 1: the partitioner
    // saves parameters, not their casts); the input transposed for the weight gradient, from
    // the float8 copy the compiled graph saves. Eager, torchao's autograd function saves the
    // 16-bit input and casts it again backward, and casts the output gradient once for each
    // GEMM; under tensor parallelism torchtitan's float8 TP styles cast the input once before
    // its gather (PrepareFloat8ModuleInput, Float8ColwiseParallel) and the output gradient
    // before the linear's backward (NoopFwToFloat8BwDynamic), so the linear saves and takes
    // float8 even eager.
    n.amax_reduction = true;
    n.gathers_quantized_grad = tp;
    // Without torchao's float8 TP styles (TorchaoFloat8::tp_styles off) the plain ones gather
    // the 16-bit input, which the linear then casts whole (as without TP).
    n.gathers_quantized = ao.tp_styles;
    // The amax's read (2 of 5 compiled); eager its abs and max (4 + 2 of 33).
    n.ao_saved_amax_share = ao.compiled ? 2 / kCompiledCast : 6 / kEagerCast;
    if (ao.compiled) {
      n.ao.input_fwd = kCompiledCast;
      n.ao.input_bwd = kCopy;
      n.ao.grad_bwd = kCompiledCast + kWrite;
      n.ao.weight_fwd = ao.weight_gather ? 0 : kCompiledCast;
      n.ao.weight_bwd = ao.weight_gather ? kCopy : kRowCast;
    } else {
      n.keeps_quantized_input = tp;
      n.ao_shared_input_casts = !tp;
      n.ao.input_fwd = kEagerCast;
      n.ao.input_bwd = tp ? kCopy : kEagerCast + kCopy;
      n.ao.grad_bwd = (tp ? 1 : 2) * kEagerCast + kCopy;
      n.ao.weight_fwd = ao.weight_gather ? 0 : kEagerCast;
      n.ao.weight_bwd = ao.weight_gather ? kCopy : kEagerCast + kCopy;
    }
  } else {
    // Rowwise: the output GEMM scales the input per token and the weight per output feature
    // (both along the contiguous dimension); the input gradient the output gradient per token
    // and the weight per input feature (across); the weight gradient the output gradient and
    // the input per feature (across tokens), the input cast again from its 16-bit copy. No
    // amax is shared between ranks, and sequence-parallel gathers move 16 bits.
    n.keeps_quantized_input = false;
    n.gathers_quantized = false;
    n.ao_shared_input_casts = !ao.compiled;
    if (ao.compiled) {
      n.ao.input_fwd = kRowCast;
      n.ao.input_bwd = kCompiledCast;
      n.ao.grad_bwd = kRowCast + kCompiledCast;
      n.ao.weight_fwd = kRowCast;
      n.ao.weight_bwd = kCompiledCast;
    } else {
      n.ao.input_fwd = kEagerCast;
      n.ao.input_bwd = kEagerCast + kCopy;
      n.ao.grad_bwd = 2 * kEagerCast + kCopy;
      n.ao.weight_fwd = kEagerCast;
      n.ao.weight_bwd = kEagerCast + kCopy;
    }
  }
}

}  // namespace

Numerics numerics(const Strategy& s) {
  const DType p = s.precision.value_or(DType::bf16);
  Numerics n;
  // fp32 GEMMs (the linears' and the attention's batched ones) on TF32 tensor cores where
  // the stack allows it; the elements stay 4 bytes.
  const DType math = p == DType::fp32 && s.tf32_math ? DType::tf32 : p;
  n.linear = math;
  n.other = is_quantized(p) ? DType::bf16 : math;
  n.element_bytes = p == DType::fp32 || p == DType::tf32 ? 4 : 2;
  n.q = dtype_bytes(p);
  if (p == DType::fp8 && s.fp8_any_layout) n.copies = 1;
  if (p == DType::fp8 && s.fp8_current_scaling) {
    n.cast_reads = 4;
    n.weight_cast_reads = 4;
    n.norm_fuses_cast = false;
    n.amax_reduction = true;
  }
  if ((p == DType::fp8 || p == DType::mxfp8) && s.torchao.active)
    torchao_numerics(s.torchao, s.tp > 1 && s.torchao.tp_styles, n);
  if (p == DType::nvfp4) {
    n.cast_reads = 6;
    n.weight_cast_reads = 4;
    n.norm_fuses_cast = false;
    n.amax_reduction = true;
  }
  return n;
}

void Graph::reset(size_t blocks_count) {
  blocks.resize(blocks_count);
  for (Block& b : blocks) {
    std::vector<Op> ops = std::move(b.ops);
    ops.clear();
    b = Block{};
    b.ops = std::move(ops);
  }
  boundary_bytes = 0;
}

int Graph::body_units() const {
  int n = 0;
  for (const Block& b : blocks)
    if (b.pin == Block::Pin::body) n += b.count;
  return n;
}

}  // namespace shardcost
