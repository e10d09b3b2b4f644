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
  n.linear = p;
  n.other = is_quantized(p) ? DType::bf16 : p;
  n.element_bytes = p == DType::fp32 || p == DType::tf32 ? 4 : 2;
  n.q = dtype_bytes(p);
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
