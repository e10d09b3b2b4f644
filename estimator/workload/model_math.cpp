#include "model_math.h"

#include <algorithm>

namespace shardcost {
namespace {

// Up and down projections, and a gate's with SwiGLU.
double mlp_matrices(const Model& m) {
  return m.activation == Activation::swiglu ? 3 : 2;
}

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
  return 2.0 * mlp_matrices(m) * m.hidden * ffn;
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

// A Mamba-2 mixer's input projection width: z and x (inner each), B and C (groups x state
// each), dt (one per head).
double mamba_in_width(const Model& m) {
  const Mamba& s = m.mamba;
  return 2 * s.inner() + 2.0 * s.groups * s.state + s.heads;
}

// Forward FLOPs per token of a Mamba-2 mixer: its projections, the depthwise convolution and
// the scan.
double mamba_flops(const Model& m) {
  const double h = m.hidden;
  return 2 * (h * mamba_in_width(m) + m.mamba.inner() * h) +
         2.0 * m.mamba.conv_kernel * m.mamba.conv_dim() + mamba_scan_flops_per_token(m);
}

// Width of attention's core per key position: the query-key dot products (heads x qk dim) and
// the value sums (heads x v dim). Forward FLOPs are 2 x width per query-key pair.
double attention_core_width(const Model& m) {
  if (m.is_mla()) return static_cast<double>(m.heads) * (m.mla.qk_head_dim() + m.mla.v_head_dim);
  return 2.0 * m.heads * m.head_dim();
}

}  // namespace

double layer_linear_flops_per_token(const Model& m, LayerKind kind) {
  double mixer = 0;
  if (kind.mixer == Mixer::attention) mixer = attention_linear_flops(m);
  if (kind.mixer == Mixer::mamba) mixer = mamba_flops(m);
  double ffn = 0;
  if (kind.ffn == Ffn::dense) ffn = mlp_flops(m, m.ffn_hidden);
  if (kind.ffn == Ffn::moe) {
    const double e = m.expert_ffn();
    ffn = m.moe.top_k * mlp_flops(m, e) + m.moe.shared_experts * mlp_flops(m, e) +
          2.0 * m.hidden * m.moe.experts;
  }
  return mixer + ffn;
}

namespace {

LayerKind last_layer_kind(const Model& m) {
  return m.layer_kind(m.layers - 1);
}

}  // namespace

std::vector<LayerRun> layer_runs(const Model& m) {
  std::vector<LayerRun> out;
  if (m.pattern.empty() && m.windows.empty()) {
    const Window w = m.window_of(0);
    const int dense = m.is_moe() ? std::min(m.layers, m.moe.first_dense_layers) : m.layers;
    if (dense > 0) out.push_back({{Mixer::attention, Ffn::dense, w}, dense});
    if (m.layers > dense) out.push_back({{Mixer::attention, Ffn::moe, w}, m.layers - dense});
    return out;
  }
  for (int i = 0; i < m.layers; ++i) {
    const LayerKind k = m.layer_kind(i);
    if (!out.empty() && out.back().kind == k)
      ++out.back().count;
    else
      out.push_back({k, 1});
  }
  return out;
}

double windowed_squared(const Model& m, Window w, double tokens, double squared) {
  if (w == Window::full || tokens <= 0 || squared <= 0) return squared;
  // The length-weighted mean length: each sequence's when all have one length.
  const double L = squared / tokens;
  const double span = w == Window::sliding ? m.sliding_window : m.attention_chunk;
  if (span <= 0 || L <= span) return squared;
  // Causal pairs over full attention, L(L+1)/2, against those a window leaves: each query
  // sees at most `span` keys, span L - span (span - 1) / 2; a chunk's queries see their chunk's
  // earlier keys, L (span + 1) / 2 for whole chunks.
  const double full = L * (L + 1) / 2;
  const double kept = w == Window::sliding ? span * L - span * (span - 1) / 2 : L * (span + 1) / 2;
  return squared * kept / full;
}

double mamba_scan_flops_per_token(const Model& m) {
  const Mamba& s = m.mamba;
  const double Q = s.chunk, N = s.state, P = s.head_dim;
  return 2 * Q * N * s.groups + s.heads * (2 * Q * P + 4 * N * P);
}

double mamba_scan_bytes_per_token(const Model& m, bool backward) {
  const Mamba& s = m.mamba;
  const double Q = s.chunk, N = s.state, P = s.head_dim;
  const double states = s.heads * P * N / Q;  // state elements per token
  const double scores = s.groups * Q;         // score elements per token
  return backward ? 34 * states + 24 * scores : 12 * states + 8 * scores;
}

LayerParameters layer_parameters(const Model& m, LayerKind kind) {
  const double h = m.hidden;
  const double b = m.bias ? 1.0 : 0.0;
  LayerParameters p;
  if (kind.mixer == Mixer::attention && m.is_mla()) {
    const Mla& a = m.mla;
    const double heads = m.heads;
    const double q_out = heads * a.qk_head_dim();
    // Up projections and the output projection split over TP; the down projections (and the
    // norms of their latents) run whole on every rank, as Megatron-core's MLA has them. Only
    // the output projection takes add_bias_linear's bias: Megatron-core builds the query,
    // down and up projections with bias=False (multi_latent_attention.py).
    p.attention = (a.q_lora_rank > 0 ? a.q_lora_rank * q_out : h * q_out) +
                  a.kv_lora_rank * heads * (a.qk_nope_head_dim + a.v_head_dim) +
                  heads * a.v_head_dim * h + b * h;
    p.replicated = (a.q_lora_rank > 0 ? h * a.q_lora_rank + norm_parameters(m, a.q_lora_rank) : 0) +
                   h * (a.kv_lora_rank + a.qk_rope_head_dim) + norm_parameters(m, a.kv_lora_rank);
  } else if (kind.mixer == Mixer::attention) {
    const double hd = m.head_dim();
    const double q = static_cast<double>(m.heads) * hd;
    const double kv = static_cast<double>(m.kv_heads) * hd;
    const double qkv_b = m.qkv_bias ? 1.0 : b;
    p.attention = h * (q + 2 * kv) + qkv_b * (q + 2 * kv) + q * h + b * h;
    if (m.qk_norm) p.replicated = 2 * norm_parameters(m, hd);
  } else if (kind.mixer == Mixer::mamba) {
    // in_proj, the convolution's weights and biases, dt_bias, A_log and D per head, the gated
    // RMSNorm over the inner width, out_proj (Megatron-core's MambaMixer, all split over TP).
    const Mamba& s = m.mamba;
    p.attention = h * mamba_in_width(m) + s.conv_dim() * (s.conv_kernel + 1) + 3.0 * s.heads +
                  s.inner() + s.inner() * h;
  }
  if (kind.ffn == Ffn::moe) {
    const double e = m.expert_ffn();
    p.mlp = mlp_parameters(m, e);
    p.experts = m.moe.experts;
    p.shared = m.moe.shared_experts > 0 ? mlp_parameters(m, m.moe.shared_experts * e) : 0;
    p.router = h * m.moe.experts + (m.moe.expert_bias ? m.moe.experts : 0);
  } else if (kind.ffn == Ffn::dense) {
    p.mlp = mlp_parameters(m, m.ffn_hidden);
  }
  const int parts = (kind.mixer != Mixer::none ? 1 : 0) + (kind.ffn != Ffn::none ? 1 : 0);
  p.norms = parts * (m.post_norms ? 2 : 1) * norm_parameters(m, h);
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
  return 2 * norm_parameters(m, h) + 2 * h * h + layer_parameters(m, last_layer_kind(m)).total() +
         norm_parameters(m, h);
}

double mtp_checkpoint_copies(const Model& m) {
  return m.mtp_layers * (static_cast<double>(m.vocab) * m.hidden + lm_head_parameters(m));
}

double parameter_count(const Model& m) {
  double layers = 0;
  for (const LayerRun& r : layer_runs(m)) layers += r.count * layer_parameters(m, r.kind).total();
  return layers + embedding_parameters(m) + final_norm_parameters(m) + lm_head_parameters(m);
}

double active_parameter_count(const Model& m) {
  double layers = 0;
  for (const LayerRun& r : layer_runs(m)) {
    LayerParameters p = layer_parameters(m, r.kind);
    if (p.experts > 0) p.experts = m.moe.top_k;
    layers += r.count * p.total();
  }
  return layers + embedding_parameters(m) + final_norm_parameters(m) + lm_head_parameters(m);
}

double mtp_parameter_count(const Model& m) {
  return m.mtp_layers * mtp_module_parameters(m);
}

double lora_layer_parameters(const Model& m, unsigned targets, double rank) {
  const double h = m.hidden, q = static_cast<double>(m.heads) * m.head_dim();
  const double qkv = q + 2.0 * m.kv_heads * m.head_dim();
  const double f = m.ffn_hidden, gate = m.activation == Activation::swiglu ? 2 : 1;
  double sides = 0;  // inputs + outputs of the adapted linears
  if (targets & kLoraQkv) sides += h + qkv;
  if (targets & kLoraProj) sides += q + h;
  if (targets & kLoraFc1) sides += h + gate * f;
  if (targets & kLoraFc2) sides += f + h;
  return rank * sides;
}

double layer_forward_flops_per_token(const Model& m, LayerKind kind) {
  const double n = m.seq_len;
  return layer_linear_flops_per_token(m, kind) +
         (kind.mixer == Mixer::attention
              ? 2.0 * windowed_squared(m, kind.window, n, n * n) / n * attention_core_width(m)
              : 0.0);
}

double model_flops_per_step(const Model& m, int global_batch) {
  const double n = m.seq_len;
  const double sequences = global_batch;
  return model_flops_of_batch(m, sequences * n, sequences * n * n);
}

double model_flops_of_batch(const Model& m, double tokens, double squared) {
  const double logits = 2.0 * m.hidden * m.vocab;
  // Attention layers, each weighted by the share of the causal pairs its window leaves.
  auto share = [&](Window w) {
    return w == Window::full || squared <= 0 ? 1.0
                                             : windowed_squared(m, w, tokens, squared) / squared;
  };
  double linear = 0, attention_layers = 0;
  for (const LayerRun& r : layer_runs(m)) {
    linear += r.count * layer_linear_flops_per_token(m, r.kind);
    if (r.kind.mixer == Mixer::attention) attention_layers += r.count * share(r.kind.window);
  }
  // Each multi-token-prediction module: the projection of [embedding; hidden] (2h -> h), one
  // layer as the model's last, and the output head again.
  if (m.mtp_layers > 0) {
    const double h = m.hidden;
    const LayerKind last = last_layer_kind(m);
    linear += m.mtp_layers * (2.0 * 2 * h * h + layer_linear_flops_per_token(m, last) + logits);
    if (last.mixer == Mixer::attention) attention_layers += m.mtp_layers * share(last.window);
  }
  // Attention's core as Megatron counts it: every query against the whole sequence, 2 x width
  // FLOPs per pair, so 2 x width x length^2 per sequence and layer.
  return 3.0 *
         (tokens * (linear + logits) + attention_layers * 2.0 * attention_core_width(m) * squared);
}

}  // namespace shardcost
