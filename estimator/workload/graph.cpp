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
