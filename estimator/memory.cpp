#include "memory.h"

#include <algorithm>

#include "model_math.h"

namespace shardcost {

int stage_layers(const Model& m, const Strategy& s, int stage) {
  const int base = m.layers / s.pp;
  const int extra = m.layers % s.pp;
  if (extra == 0) return base;
  // Order in which stages receive one extra layer: 1 .. pp-2, then 0, then pp-1.
  const int middle = std::max(0, s.pp - 2);
  int rank_in_order;
  if (stage >= 1 && stage <= s.pp - 2) {
    rank_in_order = stage - 1;
  } else if (stage == 0) {
    rank_in_order = middle;
  } else {
    rank_in_order = middle + 1;
  }
  return base + (rank_in_order < extra ? 1 : 0);
}

StageParameters stage_parameters(const Model& m, const Strategy& s, int stage) {
  const LayerParameters lp = layer_parameters(m);
  const double layers = stage_layers(m, s, stage);
  StageParameters out;
  out.dense = layers * (lp.attention / s.tp + lp.router + lp.norms);
  out.expert = layers * lp.experts * lp.mlp / s.tp / (m.is_moe() ? s.ep : 1);
  const double vocab_shard = static_cast<double>(m.vocab) * m.hidden / s.tp;
  const double positions = m.learned_positions ? static_cast<double>(m.seq_len) * m.hidden : 0;
  if (stage == 0) out.dense += vocab_shard + positions;
  if (stage == s.pp - 1) {
    out.dense += final_norm_parameters(m);
    // A tied LM head on another stage keeps its own copy of the embedding shard.
    if (!m.tied_embeddings || s.pp > 1) out.dense += vocab_shard;
  }
  return out;
}

double layer_activation_bytes(const Model& m, const Strategy& st, AttentionKernel kernel,
                              Recompute recompute) {
  const double b = st.mbs;
  const double s_local = static_cast<double>(m.seq_len) / st.cp;
  const double T = b * s_local;
  const double h = m.hidden;
  const double t = st.tp;
  const double sp_div = st.sp ? t : 1;
  const double hd = m.head_dim();
  const double q = m.heads * hd / t;
  const double kv = std::max(1.0, static_cast<double>(m.kv_heads) / t) * hd;
  const double mask = m.dropout > 0 ? 1.0 : 0.0;

  if (recompute == Recompute::full) return 2 * T * h / sp_div;  // the layer's input only

  // Attention block: norm input and output (QKV input), Q, K, V, the projection input,
  // the dropout mask after the projection.
  double bytes = 2 * T * h / sp_div + 2 * T * h / sp_div + 2 * T * q + 2 * 2 * T * kv +
                 2 * T * q + mask * T * h / sp_div;
  // Attention core. Unfused: softmax output, dropout mask and dropout output, a*s^2 each;
  // selective recomputation drops exactly these. Fused: only the softmax statistics (fp32).
  const double scores = b * (m.heads / t) * s_local * m.seq_len;
  if (kernel == AttentionKernel::standard) {
    if (recompute != Recompute::selective) bytes += 2 * scores + mask * 3 * scores;
  } else {
    bytes += 4 * b * (m.heads / t) * s_local;
  }
  // MLP block: norm input and output (fc1 input), activation input(s), fc2 input, mask.
  const double f = static_cast<double>(m.ffn_hidden) / t;
  const double tokens_mlp = m.is_moe() ? T * m.top_k : T;
  const double act_in = m.activation == Activation::swiglu ? 2 * f : f;
  bytes += 2 * T * h / sp_div + 2 * T * h / sp_div + 2 * tokens_mlp * act_in +
           2 * tokens_mlp * f + mask * T * h / sp_div;
  if (m.is_moe()) bytes += 2 * tokens_mlp * h;  // dispatched tokens kept for the expert fc1
  return bytes;
}

MemoryBreakdown stage_memory(const Model& m, const Strategy& s, const Software& sw, int stage) {
  const StageParameters p = stage_parameters(m, s, stage);
  const double dense_shards = s.dp * s.cp;
  const double expert_shards = static_cast<double>(s.dp * s.cp) / (m.is_moe() ? s.ep : 1);
  auto sharded = [&](int from_stage) {
    return s.zero >= from_stage ? p.dense / dense_shards + p.expert / expert_shards : p.total();
  };
  MemoryBreakdown mem;
  mem.weights = MemoryModel::kWeightBytes * sharded(3);
  if (s.zero >= 3) {
    // Two layers' full weights gathered at a time (the one computing and the prefetch).
    const double layers = std::max(1, stage_layers(m, s, stage));
    mem.weights += MemoryModel::kWeightBytes * 2 * p.total() / layers;
  }
  mem.gradients = sw.grad_bytes * sharded(2);
  mem.optimizer = MemoryModel::kOptimizerBytes * sharded(1);

  const int micro_batches = s.micro_batches();
  const double layers_per_stage = stage_layers(m, s, stage);
  // 1F1B: stage i keeps (pp - i) micro-batches in flight, at most the number there are.
  double in_flight = std::min(micro_batches, s.pp - stage);
  // Interleaving keeps (1 + (p-1)/(p*v)) times more (Korthikanti et al. 2022, Sec. 4.2.3).
  if (s.vpp > 1) in_flight *= 1.0 + static_cast<double>(s.pp - 1) / (s.pp * s.vpp);
  const double per_layer = layer_activation_bytes(m, s, sw.attention, s.recompute);
  mem.activations = per_layer * layers_per_stage * in_flight;
  if (s.recompute != Recompute::none) {
    // The layer being recomputed materialises its full activations once.
    mem.activations += layer_activation_bytes(m, s, sw.attention, Recompute::none);
  }
  const double tokens = static_cast<double>(s.mbs) * m.seq_len / s.cp;
  if (stage == 0) mem.activations += in_flight * tokens * m.hidden * (m.dropout > 0 ? 1 : 0);
  if (stage == s.pp - 1) {
    // fp32 logits and their gradient for the loss, vocab-parallel.
    mem.activations += 2 * 4 * tokens * m.vocab / s.tp;
  }
  mem.buffers = MemoryModel::kFixedBytes +
                MemoryModel::kFragmentation *
                    (mem.weights + mem.gradients + mem.optimizer + mem.activations);
  return mem;
}

MemoryBreakdown peak_stage_memory(const Model& m, const Strategy& s, const Software& sw) {
  MemoryBreakdown peak = stage_memory(m, s, sw, 0);
  if (s.pp > 1) {
    const MemoryBreakdown last = stage_memory(m, s, sw, s.pp - 1);
    if (last.total() > peak.total()) peak = last;
  }
  return peak;
}

}  // namespace shardcost
