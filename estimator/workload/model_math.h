#pragma once
// Parameter and FLOP counts of a transformer, exact for the architecture the Model describes.
#include "shardcost/estimator.h"

namespace shardcost {

struct LayerParameters {
  double attention = 0;  // QKV and output projection, with biases
  double mlp = 0;        // one dense MLP (or one expert), with biases
  double router = 0;     // MoE router
  double norms = 0;      // the two norms of a layer
  double experts = 0;    // number of MLP copies (1 for dense)
  double total() const { return attention + experts * mlp + router + norms; }
};

LayerParameters layer_parameters(const Model&);
double embedding_parameters(const Model&);  // token (+ learned position) embedding
double final_norm_parameters(const Model&);
double lm_head_parameters(const Model&);  // 0 when tied to the embedding

// Matmul FLOPs of one forward pass per token of one layer, as Megatron counts them
// (attention over the full sequence, active experts only).
double layer_forward_flops_per_token(const Model&);
// Model FLOPs of a global batch of variable-length sequences: `tokens` in all, their squared
// lengths adding up to `squared` (fixed length N: tokens = gbs N, squared = gbs N^2).
double model_flops_of_batch(const Model&, double tokens, double squared);

}  // namespace shardcost
