#pragma once
// Parameter and FLOP counts of a transformer or hybrid model, exact for the architecture the
// Model describes (derivations in docs/estimator.md, "Model families").
#include <vector>

#include "shardcost/estimator.h"

namespace shardcost {

struct LayerParameters {
  double attention = 0;   // split over tensor parallelism: QKV (or MLA's up projections) and
                          // the output projection, with biases; a Mamba mixer's projections,
                          // convolution, per-head terms and gated norm
  double replicated = 0;  // held whole on every TP rank: MLA's down projections and their
                          // norms, per-head query and key norms
  double mlp = 0;         // one dense MLP, or one routed expert, with biases
  double experts = 0;     // routed experts (0 in a dense layer)
  double shared = 0;      // shared experts, all together (TP-split like a dense MLP)
  double router = 0;      // MoE router, and its per-expert bias where the model has one
  double norms = 0;       // the layer's norms (one per mixer and feed-forward part)
  double total() const {
    return attention + replicated + (experts > 0 ? experts : 1) * mlp + shared + router + norms;
  }
};

// Consecutive layers of one kind, in order (a transformer: a dense run and an expert run; a
// hybrid pattern: its runs).
struct LayerRun {
  LayerKind kind;
  int count = 0;
};
std::vector<LayerRun> layer_runs(const Model&);

LayerParameters layer_parameters(const Model&, LayerKind);
double embedding_parameters(const Model&);  // token (+ learned position) embedding
double final_norm_parameters(const Model&);
double lm_head_parameters(const Model&);  // 0 when tied to the embedding
// One multi-token-prediction module's own weights: its two input norms, the projection of the
// concatenated embedding and hidden state (2h -> h), one layer as the model's last, and its
// final norm. It shares the embedding and the output head with the main model.
double mtp_module_parameters(const Model&);

// Forward FLOPs per token of one layer as Megatron counts them: its matmuls, attention over the
// full sequence, active experts only, a Mamba mixer's scan.
double layer_forward_flops_per_token(const Model&, LayerKind);
// Forward FLOPs per token of a layer's linears alone (its mixer's and MLP's or experts').
double layer_linear_flops_per_token(const Model&, LayerKind);
// LoRA (Strategy::lora): the adapters' weights of one dense attention layer, whole (before any
// tensor-parallel split): rank x (inputs + outputs) of each linear `targets` names (LoraTarget
// bits).
double lora_layer_parameters(const Model&, unsigned targets, double rank);
// Forward FLOPs of a Mamba-2 mixer's chunked scan per token, over all its heads: per chunk of
// Q, the scores C B^T per group (2 Q N), their product with x per head (2 Q P), and the chunk
// state in and out per head (2 x 2 N P).
double mamba_scan_flops_per_token(const Model&);
// HBM bytes of the same scan per token, forward or backward, as mamba_ssm's Triton kernels
// (ops/triton/ssd_combined.py) move them: each chunk's state (heads x P x N) materialized
// between kernels and the chunk's scores C B^T (groups x Q x Q, fp32). Forward: the states
// written in fp32 (chunk_state), read and written in 16 bits (state_passing), read (chunk_scan):
// 4 + 4 + 2 + 2 = 12 bytes a state element; the scores written and read, 8 a score. Backward
// (which recomputes the states): chunk_state 4, state_passing in fp32 4 + 4, the states'
// gradient written in fp32 4, state_passing's backward reading both in fp32 and writing both
// in 16 bits 4 + 4 + 2 + 2, then read by the dx, dB and dC kernels 2 + 2 + 2: 34 a state
// element; the scores recomputed 4, read by the dx kernel 4 and by ddA 4, their gradient
// written 4 and read by both bmm backward kernels 4 + 4: 24 a score. The states dominate; x,
// B, C and the outputs (read and written as the projections' activations are) are left out.
double mamba_scan_bytes_per_token(const Model&, bool backward);
// What a window leaves of a batch's squared lengths (`squared`, over `tokens`): the full
// value scaled by the causal pairs the window keeps, at the batch's length-weighted mean
// length (exact for sequences of one length).
double windowed_squared(const Model&, Window, double tokens, double squared);
// Model FLOPs of a global batch of variable-length sequences: `tokens` in all, their squared
// lengths adding up to `squared` (fixed length N: tokens = gbs N, squared = gbs N^2).
double model_flops_of_batch(const Model&, double tokens, double squared);

}  // namespace shardcost
