#include "model_math.h"

namespace shardcost {

LayerParameters layer_parameters(const Model& m) {
  const double h = m.hidden;
  const double hd = m.head_dim();
  const double q = static_cast<double>(m.heads) * hd;
  const double kv = static_cast<double>(m.kv_heads) * hd;
  const double f = m.ffn_hidden;
  const double b = m.bias ? 1.0 : 0.0;
  LayerParameters p;
  p.attention = h * (q + 2 * kv) + b * (q + 2 * kv) + q * h + b * h;
  if (m.activation == Activation::swiglu) {
    p.mlp = 3 * h * f + b * (2 * f + h);
  } else {
    p.mlp = 2 * h * f + b * (f + h);
  }
  p.experts = m.is_moe() ? m.experts : 1;
  p.router = m.is_moe() ? h * m.experts : 0;
  p.norms = 2 * (m.rmsnorm ? h : 2 * h);
  return p;
}

double embedding_parameters(const Model& m) {
  return static_cast<double>(m.vocab) * m.hidden +
         (m.learned_positions ? static_cast<double>(m.seq_len) * m.hidden : 0.0);
}

double final_norm_parameters(const Model& m) {
  return m.rmsnorm ? m.hidden : 2.0 * m.hidden;
}

double lm_head_parameters(const Model& m) {
  return m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab) * m.hidden;
}

double parameter_count(const Model& m) {
  return m.layers * layer_parameters(m).total() + embedding_parameters(m) +
         final_norm_parameters(m) + lm_head_parameters(m);
}

namespace {

// Forward matmul FLOPs per token of one layer outside attention's core (QKV, projection, MLP
// or the active experts and their router).
double layer_linear_flops_per_token(const Model& m) {
  const double h = m.hidden;
  const double hd = m.head_dim();
  const double q = static_cast<double>(m.heads) * hd;
  const double kv = static_cast<double>(m.kv_heads) * hd;
  const double f = m.ffn_hidden;
  const double mlp = (m.activation == Activation::swiglu ? 3 : 2) * h * f;
  const double active_mlp = m.is_moe() ? m.top_k * mlp + h * m.experts : mlp;
  const double attention_matmuls = h * (q + 2 * kv) + q * h;
  return 2 * (attention_matmuls + active_mlp);
}

}  // namespace

double layer_forward_flops_per_token(const Model& m) {
  const double q = static_cast<double>(m.heads) * m.head_dim();
  const double attention_core = 2.0 * m.seq_len * q;  // MACs of QK^T and AV together
  return layer_linear_flops_per_token(m) + 2 * attention_core;
}

double model_flops_per_step(const Model& m, int global_batch) {
  const double tokens = static_cast<double>(global_batch) * m.seq_len;
  const double logits = 2.0 * m.hidden * m.vocab;
  return 3.0 * tokens * (m.layers * layer_forward_flops_per_token(m) + logits);
}

}  // namespace shardcost

namespace shardcost {

double model_flops_of_batch(const Model& m, double tokens, double squared) {
  const double q = static_cast<double>(m.heads) * m.head_dim();
  const double logits = 2.0 * m.hidden * m.vocab;
  // Attention's core as the fixed-length count has it: 4 s q per token per layer (QK^T and AV
  // over the whole sequence), so 4 q s^2 per sequence.
  return 3.0 * (tokens * (m.layers * layer_linear_flops_per_token(m) + logits) +
                m.layers * 4.0 * q * squared);
}

}  // namespace shardcost
