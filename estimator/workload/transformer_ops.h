#pragma once
// The transformer's operators one GPU runs for one micro-batch, with the exact per-GPU shapes
// after the strategy's splits (Megatron's tensor, sequence, context and expert parallelism).
// Forward ops carry what their backward costs.
#include <vector>

#include "shardcost/workload.h"

namespace shardcost {

// Forward ops of one transformer layer for one micro-batch: dense, or an expert layer
// (moe_layer) of an MoE model.
void layer_ops(const Model&, const Strategy&, AttentionKernel, const MicroBatch&, LayerKind,
               std::vector<Op>& out);
// Forward ops of one multi-token-prediction module (last stage): the shifted tokens' embedding,
// the two norms and the projection of their concatenation, one layer as the model's last, the
// shared output head and its loss.
void mtp_ops(const Model&, const Strategy&, AttentionKernel, const MicroBatch&,
             std::vector<Op>& out);
// Forward ops of the input embedding (first stage) and of the final norm, LM head and loss
// (last stage).
void embedding_ops(const Model&, const Strategy&, const MicroBatch&, std::vector<Op>& out);
void head_ops(const Model&, const Strategy&, const MicroBatch&, std::vector<Op>& out);

}  // namespace shardcost
