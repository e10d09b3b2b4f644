#pragma once
// A model expanded into the operators one GPU runs for one micro-batch, with the exact
// per-GPU shapes after the strategy's splits. Forward ops carry what their backward costs.
#include <optional>
#include <vector>

#include "pricing.h"
#include "shardcost/estimator.h"

namespace shardcost {

enum class OpClass { gemm, attention, elementwise, tp_comm, cp_comm, ep_comm };

struct Op {
  const char* name = "";
  OpClass cls = OpClass::elementwise;
  GemmShape gemm;              // gemm (also the batched GEMMs of unfused attention)
  double flops = 0;            // fused attention, forward
  double bytes = 0;            // elementwise: HBM bytes forward; comm: buffer bytes
  double backward_bytes = 0;   // elementwise: HBM bytes backward
  std::optional<CollectiveOp> op;           // forward collective (none: identity)
  std::optional<CollectiveOp> backward_op;  // backward collective (none: identity)
  GroupPlacement group;
  bool selective = false;      // recomputed under selective recomputation
  // Backward collective of a column-parallel linear's input: it can run behind the weight-
  // gradient GEMM of the next op (Software::async_tp_backward).
  bool before_column_parallel = false;
  // Sequence parallelism keeps only the local shard of a column-parallel linear's input, so
  // its backward all-gathers the input again for the weight gradient (Megatron-LM and
  // Transformer Engine run it asynchronously behind the input-gradient GEMM).
  bool backward_regather = false;
};

// Parallel group placements, tensor parallel innermost, then context, data, pipeline
// (Megatron's order); experts are spread over data/context-parallel ranks.
struct Placement {
  GroupPlacement tp, cp, dp_cp, ep, expert_dp;
  int pp_stride = 1;
};
Placement placement(const Strategy&);

// Backward of Y[m x n] = X[m x k] W[k x n]: the input gradient dX = dY W^T (m x k, inner n)
// and the weight gradient dW = X^T dY (k x n, inner m).
inline GemmShape dgrad_shape(const GemmShape& g) { return {g.m, g.k, g.n, g.batch}; }
inline GemmShape wgrad_shape(const GemmShape& g) { return {g.k, g.n, g.m, g.batch}; }

// Forward ops of one transformer layer for one micro-batch.
void layer_ops(const Model&, const Strategy&, AttentionKernel, std::vector<Op>& out);
// Forward ops of the input embedding (first stage) and of the final norm, LM head and loss
// (last stage).
void embedding_ops(const Model&, const Strategy&, std::vector<Op>& out);
void head_ops(const Model&, const Strategy&, std::vector<Op>& out);

}  // namespace shardcost
