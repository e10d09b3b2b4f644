#pragma once
// Parameter and FLOP counts of a transformer, exact for the architecture the Model describes
// (derivations in docs/estimator.md, "Model families").
#include "shardcost/estimator.h"

namespace shardcost {

struct LayerParameters {
  double attention = 0;   // split over tensor parallelism: QKV (or MLA's up projections) and
                          // the output projection, with biases
  double replicated = 0;  // held whole on every TP rank: MLA's down projections and their
                          // norms, per-head query and key norms
  double mlp = 0;         // one dense MLP, or one routed expert, with biases
  double experts = 0;     // routed experts (0 in a dense layer)
  double shared = 0;      // shared experts, all together (TP-split like a dense MLP)
  double router = 0;      // MoE router, and its per-expert bias where the model has one
  double norms = 0;       // the two norms of a layer
  double total() const {
    return attention + replicated + (experts > 0 ? experts : 1) * mlp + shared + router + norms;
  }
};

// Layer parameters of a dense layer or, in an MoE model, of an expert layer.
LayerParameters layer_parameters(const Model&, bool moe_layer);
double embedding_parameters(const Model&);  // token (+ learned position) embedding
double final_norm_parameters(const Model&);
double lm_head_parameters(const Model&);  // 0 when tied to the embedding
// One multi-token-prediction module's own weights: its two input norms, the projection of the
// concatenated embedding and hidden state (2h -> h), one layer as the model's last, and its
// final norm. It shares the embedding and the output head with the main model.
double mtp_module_parameters(const Model&);
// What a released checkpoint stores besides: each module's copy of the embedding and of the
// output head (DeepSeek-V3's layer 61 holds embed_tokens and shared_head.head).
double mtp_checkpoint_copies(const Model&);

// Matmul FLOPs of one forward pass per token of one layer, as Megatron counts them
// (attention over the full sequence, active experts only).
double layer_forward_flops_per_token(const Model&, bool moe_layer);
// Model FLOPs of a global batch of variable-length sequences: `tokens` in all, their squared
// lengths adding up to `squared` (fixed length N: tokens = gbs N, squared = gbs N^2).
double model_flops_of_batch(const Model&, double tokens, double squared);

}  // namespace shardcost
