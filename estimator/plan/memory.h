#pragma once
// Per-GPU memory of a pipeline stage, from the graph's blocks: weights, gradients and
// optimizer state under ZeRO 0-3, activations kept per micro-batch in flight under the
// schedule, working memory, and an allowance. Independent of the model family.
#include "shardcost/estimator.h"
#include "stages.h"

namespace shardcost {

// Parameters one GPU of a stage holds: the part replicated over the data-parallel group and
// the expert part replicated over the expert-data-parallel group.
struct StageParameters {
  double dense = 0;
  double expert = 0;
  double total() const { return dense + expert; }
};
StageParameters stage_parameters(const Graph&, const StageSpan&);

struct MemoryBreakdown {
  double weights = 0, gradients = 0, optimizer = 0, activations = 0, buffers = 0;
  double total() const { return weights + gradients + optimizer + activations + buffers; }
};
MemoryBreakdown stage_memory(const Graph&, const Strategy&, const Software&, const StageSpan&,
                             int stage);
// The most loaded pipeline stage, over every stage: what must fit on every GPU.
MemoryBreakdown peak_stage_memory(const Graph&, const Strategy&, const Software&,
                                  const StageLayout&);

// Mixed precision with Adam: 16-bit weights, gradients of Software::grad_bytes (fp32 main
// gradients for bf16), fp32 master weights plus Adam's two moments.
struct MemoryModel {
  static constexpr double kWeightBytes = 2;
  static constexpr double kOptimizerBytes = 12;  // gradients: Software::grad_bytes
  // Allowance: CUDA context and kernels (~0.5 GiB), NCCL channel buffers for several
  // communicators, cuBLAS workspaces; plus a share of the rest for caching-allocator
  // fragmentation (PyTorch's allocator typically reserves 5-10 % above what it allocates).
  static constexpr double kFixedBytes = 2.0 * 1024 * 1024 * 1024;
  static constexpr double kFragmentation = 0.05;
};

}  // namespace shardcost
