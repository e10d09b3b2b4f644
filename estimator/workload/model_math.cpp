#include "model_math.h"

#include <algorithm>

namespace shardcost {
namespace {

double mlp_parameters(const Model& m, double ffn) {
  const double h = m.hidden, b = m.bias ? 1.0 : 0.0;
  if (m.activation == Activation::swiglu) return 3 * h * ffn + b * (2 * ffn + h);
  return 2 * h * ffn + b * (ffn + h);
}

double norm_parameters(const Model& m, double width) {
  return m.rmsnorm ? width : 2 * width;
}

// Forward matmul FLOPs per token of one MLP of `ffn` hidden features.
double mlp_flops(const Model& m, double ffn) {
  return 2.0 * (m.activation == Activation::swiglu ? 3 : 2) * m.hidden * ffn;
}

// Forward matmul FLOPs per token of attention's linears.
double attention_linear_flops(const Model& m) {
  const double h = m.hidden, heads = m.heads;
  if (m.is_mla()) {
    const Mla& a = m.mla;
    const double q = a.q_lora_rank > 0 ? h * a.q_lora_rank + a.q_lora_rank * heads * a.qk_head_dim()
                                       : h * heads * a.qk_head_dim();
    const double kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) +
                      a.kv_lora_rank * heads * (a.qk_nope_head_dim + a.v_head_dim);
    return 2 * (q + kv + heads * a.v_head_dim * h);
  }
  const double hd = m.head_dim();
  const double q = heads * hd, kv = static_cast<double>(m.kv_heads) * hd;
  return 2 * (h * (q + 2 * kv) + q * h);
}

// Width of attention's core per key position: the query-key dot products (heads x qk dim) and
// the value sums (heads x v dim). Forward FLOPs are 2 x width per query-key pair.
double attention_core_width(const Model& m) {
  if (m.is_mla()) return static_cast<double>(m.heads) * (m.mla.qk_head_dim() + m.mla.v_head_dim);
  return 2.0 * m.heads * m.head_dim();
}

double layer_linear_flops_per_token(const Model& m, bool moe_layer) {
  double ffn = mlp_flops(m, m.ffn_hidden);
  if (moe_layer) {
    const double e = m.expert_ffn();
    ffn = m.moe.top_k * mlp_flops(m, e) + m.moe.shared_experts * mlp_flops(m, e) +
          2.0 * m.hidden * m.moe.experts;
  }
  return attention_linear_flops(m) + ffn;
}

int dense_layers(const Model& m) {
  return m.is_moe() ? std::min(m.layers, m.moe.first_dense_layers) : m.layers;
}

bool last_layer_moe(const Model& m) {
  return m.moe_layer(m.layers - 1);
}

}  // namespace

LayerParameters layer_parameters(const Model& m, bool moe_layer) {
  const double h = m.hidden;
  const double b = m.bias ? 1.0 : 0.0;
  LayerParameters p;
  if (m.is_mla()) {
    const Mla& a = m.mla;
    const double heads = m.heads;
    const double q_out = heads * a.qk_head_dim();
    // Up projections and the output projection split over TP; the down projections (and the
    // norms of their latents) run whole on every rank, as Megatron-core's MLA has them.
    p.attention = (a.q_lora_rank > 0 ? a.q_lora_rank * q_out : h * q_out) +
                  a.kv_lora_rank * heads * (a.qk_nope_head_dim + a.v_head_dim) +
                  heads * a.v_head_dim * h + b * (q_out + h);
    p.replicated = (a.q_lora_rank > 0 ? h * a.q_lora_rank + norm_parameters(m, a.q_lora_rank) : 0) +
                   h * (a.kv_lora_rank + a.qk_rope_head_dim) + norm_parameters(m, a.kv_lora_rank);
  } else {
    const double hd = m.head_dim();
    const double q = static_cast<double>(m.heads) * hd;
    const double kv = static_cast<double>(m.kv_heads) * hd;
    p.attention = h * (q + 2 * kv) + b * (q + 2 * kv) + q * h + b * h;
    if (m.qk_norm) p.replicated = 2 * norm_parameters(m, hd);
  }
  if (moe_layer) {
    const double e = m.expert_ffn();
    p.mlp = mlp_parameters(m, e);
    p.experts = m.moe.experts;
    p.shared = m.moe.shared_experts > 0 ? mlp_parameters(m, m.moe.shared_experts * e) : 0;
    p.router = h * m.moe.experts + (m.moe.expert_bias ? m.moe.experts : 0);
  } else {
    p.mlp = mlp_parameters(m, m.ffn_hidden);
  }
  p.norms = 2 * norm_parameters(m, h);
  return p;
}

double embedding_parameters(const Model& m) {
  return static_cast<double>(m.vocab) * m.hidden +
         (m.learned_positions ? static_cast<double>(m.seq_len) * m.hidden : 0.0);
}

double final_norm_parameters(const Model& m) {
  return norm_parameters(m, m.hidden);
}

double lm_head_parameters(const Model& m) {
  return m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab) * m.hidden;
}

double mtp_module_parameters(const Model& m) {
  const double h = m.hidden;
  return 2 * norm_parameters(m, h) + 2 * h * h + layer_parameters(m, last_layer_moe(m)).total() +
         norm_parameters(m, h);
}

double mtp_checkpoint_copies(const Model& m) {
  return m.mtp_layers * (static_cast<double>(m.vocab) * m.hidden + lm_head_parameters(m));
}

double parameter_count(const Model& m) {
  const int dense = dense_layers(m);
  double layers = dense * layer_parameters(m, false).total();
  if (m.layers > dense) layers += (m.layers - dense) * layer_parameters(m, true).total();
  return layers + embedding_parameters(m) + final_norm_parameters(m) + lm_head_parameters(m);
}

double mtp_parameter_count(const Model& m) {
  return m.mtp_layers * mtp_module_parameters(m);
}

double layer_forward_flops_per_token(const Model& m, bool moe_layer) {
  return layer_linear_flops_per_token(m, moe_layer) + 2.0 * m.seq_len * attention_core_width(m);
}

double model_flops_per_step(const Model& m, int global_batch) {
  const double n = m.seq_len;
  const double sequences = global_batch;
  return model_flops_of_batch(m, sequences * n, sequences * n * n);
}

double model_flops_of_batch(const Model& m, double tokens, double squared) {
  const double logits = 2.0 * m.hidden * m.vocab;
  const int dense = dense_layers(m);
  double linear = dense * layer_linear_flops_per_token(m, false);
  if (m.layers > dense) linear += (m.layers - dense) * layer_linear_flops_per_token(m, true);
  // Attention's core as Megatron counts it: every query against the whole sequence, 2 x width
  // FLOPs per pair, so 2 x width x length^2 per sequence and layer.
  double core_layers = m.layers;
  // Each multi-token-prediction module: the projection of [embedding; hidden] (2h -> h), one
  // layer as the model's last, and the output head again.
  if (m.mtp_layers > 0) {
    const double h = m.hidden;
    linear += m.mtp_layers *
              (2.0 * 2 * h * h + layer_linear_flops_per_token(m, last_layer_moe(m)) + logits);
    core_layers += m.mtp_layers;
  }
  return 3.0 * (tokens * (linear + logits) + core_layers * 2.0 * attention_core_width(m) * squared);
}

}  // namespace shardcost
