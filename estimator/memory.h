#pragma once
// Per-GPU memory: weights, gradients, optimizer state (ZeRO 0-3), activations (Korthikanti et
// al. 2022, generalised to GQA, gated MLPs, MoE and context parallelism) and an allowance.
#include "shardcost/estimator.h"

namespace shardcost {

// Layers of pipeline stage `stage`. When pp does not divide the layers, the middle stages
// take the remainder first (the first and last also hold the embedding and the head).
int stage_layers(const Model&, const Strategy&, int stage);

// Parameters one GPU of a pipeline stage holds, split into the part replicated over the
// data-parallel group and the expert part replicated over the expert-data-parallel group.
struct StageParameters {
  double dense = 0;
  double expert = 0;
  double total() const { return dense + expert; }
};
StageParameters stage_parameters(const Model&, const Strategy&, int stage);

// Activation bytes one layer keeps for one micro-batch until its backward pass.
double layer_activation_bytes(const Model&, const Strategy&, AttentionKernel, Recompute);

struct MemoryBreakdown {
  double weights = 0, gradients = 0, optimizer = 0, activations = 0, buffers = 0;
  double total() const { return weights + gradients + optimizer + activations + buffers; }
};
MemoryBreakdown stage_memory(const Model&, const Strategy&, const Software&, int stage);
// The more loaded of the first and last pipeline stage: what must fit on every GPU.
MemoryBreakdown peak_stage_memory(const Model&, const Strategy&, const Software&);

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
