#pragma once
// The transformer producer's formulas, exposed for tests: activation memory per layer
// (Korthikanti et al. 2022, generalised to GQA, gated MLPs, MoE and context parallelism).
#include "shardcost/workload.h"

namespace shardcost {

// Activation bytes one layer keeps for one micro-batch until its backward pass.
double layer_activation_bytes(const Model&, const Strategy&, AttentionKernel, Recompute);
double layer_activation_bytes(const Model&, const Strategy&, AttentionKernel, Recompute,
                              const MicroBatch&);
// The same for a layer of the given kind (the others: the model's last layer's).
double layer_activation_bytes(const Model&, const Strategy&, AttentionKernel, Recompute,
                              const MicroBatch&, LayerKind);
// Tokens (top-k copies) the busiest rank's experts compute in one expert layer, of `tokens`
// on each of a TP group's ranks.
double tokens_on_experts(const Model&, const Strategy&, double tokens);
// Tokens one rank routes (and sends a copy of to each of its top-k experts) in an expert layer,
// of `tokens` on each of a TP group's ranks.
double tokens_routed_by_rank(const Strategy&, double tokens);

}  // namespace shardcost
