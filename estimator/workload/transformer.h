#pragma once
// The transformer producer's formulas, exposed for tests: activation memory per layer
// (Korthikanti et al. 2022, generalised to GQA, gated MLPs, MoE and context parallelism).
#include "shardcost/workload.h"

namespace shardcost {

// Activation bytes one layer keeps for one micro-batch until its backward pass.
double layer_activation_bytes(const Model&, const Strategy&, AttentionKernel, Recompute);
double layer_activation_bytes(const Model&, const Strategy&, AttentionKernel, Recompute,
                              const MicroBatch&);

}  // namespace shardcost
