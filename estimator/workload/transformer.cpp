// The built-in transformer as a workload: the input embedding on the first stage, the layers
// as the pipeline's body, the final norm, LM head and loss on the last stage.
#include "transformer.h"

#include <fmt/format.h>

#include <algorithm>

#include "model_math.h"
#include "shardcost/divisors.h"
#include "shardcost/estimator.h"
#include "transformer_ops.h"

namespace shardcost {
namespace {

class Transformer final : public Workload {
 public:
  explicit Transformer(const Model& m) : m_(m) {}

  const std::string& name() const override { return m_.name; }
  double parameters() const override { return parameter_count(m_) + mtp_parameter_count(m_); }
  double model_flops(int global_batch) const override {
    return model_flops_per_step(m_, global_batch);
  }
  double model_flops_of(double tokens, double squared) const override {
    return model_flops_of_batch(m_, tokens, squared);
  }
  double tokens_per_sample() const override { return m_.seq_len; }
  int layers() const override { return m_.layers; }

  std::optional<std::string> check(const Strategy& s) const override {
    if (m_.heads % s.tp != 0)
      return fmt::format("tp={} does not divide the {} heads", s.tp, m_.heads);
    if (!m_.is_mla() && m_.kv_heads % s.tp != 0 && s.tp % m_.kv_heads != 0)
      return fmt::format("tp={} and the {} kv heads do not divide each other", s.tp, m_.kv_heads);
    if (has_dense_layers() && m_.ffn_hidden % s.tp != 0)
      return fmt::format("tp={} does not divide ffn_hidden={}", s.tp, m_.ffn_hidden);
    if (s.cp > 1 && s.cp_kind == CpKind::ring && m_.seq_len % (2 * s.cp) != 0)
      return fmt::format("cp={} needs seq_len ({}) divisible by 2*cp", s.cp, m_.seq_len);
    if (s.cp > 1 && s.cp_kind == CpKind::ulysses) {
      if (m_.seq_len % s.cp != 0)
        return fmt::format("cp={} needs seq_len ({}) divisible by cp", s.cp, m_.seq_len);
      if ((m_.heads / s.tp) % s.cp != 0)
        return fmt::format(
            "cp_kind=ulysses splits heads: the {} heads per tensor-parallel rank do not divide by "
            "cp={}",
            m_.heads / s.tp, s.cp);
    }
    if (!m_.is_moe() && s.ep != 1) return "ep>1 needs a mixture-of-experts model";
    if (!m_.is_moe() && s.etp > 0 && s.etp != s.tp)
      return "etp (expert tensor parallelism) needs a mixture-of-experts model";
    if (m_.is_moe()) {
      const int etp = s.expert_tp();
      if (m_.moe.experts % s.ep != 0)
        return fmt::format("ep={} does not divide the {} experts", s.ep, m_.moe.experts);
      if (m_.expert_ffn() % etp != 0)
        return fmt::format(
            "etp={} does not divide the experts' ffn size {} (moe_intermediate_size)", etp,
            m_.expert_ffn());
      const int64_t shared = int64_t{m_.moe.shared_experts} * m_.expert_ffn();
      if (shared % s.tp != 0)
        return fmt::format("tp={} does not divide the shared experts' ffn size {}", s.tp, shared);
      // Megatron-core: "When using expert parallelism and tensor parallelism, sequence
      // parallelism must be used" (its token dispatcher routes each TP rank's own tokens).
      if ((s.ep > 1 || etp != s.tp) && s.tp > 1 && !s.sp)
        return s.etp > 0 ? "ep>1 or etp != tp with tp>1 needs sp=true"
                         : "ep>1 with tp>1 needs sp=true";
      if (s.etp > 0) {
        const int64_t stage = int64_t{s.tp} * s.cp * s.dp, folded = int64_t{s.ep} * etp;
        if (stage % folded != 0)
          return fmt::format(
              "ep*etp = {} does not divide tp*cp*dp = {} (expert layers fold a stage's ranks "
              "into etp, ep and expert data parallelism)",
              folded, stage);
      } else if ((s.dp * s.cp) % s.ep != 0) {
        return fmt::format(
            "ep={} does not divide dp*cp = {} (experts are spread over the data-"
            "parallel ranks)",
            s.ep, s.dp * s.cp);
      }
    }
    return std::nullopt;
  }

  void graph_of(const Strategy& s, AttentionKernel kernel, const MicroBatch& mb,
                Graph& g) const override {
    // Blocks: the embedding, a run of dense layers and a run of expert layers (either may be
    // missing), the head, the multi-token-prediction modules.
    const int dense = m_.is_moe() ? std::min(m_.layers, m_.moe.first_dense_layers) : m_.layers;
    const int expert = m_.layers - dense;
    const size_t body = (dense > 0 ? 1 : 0) + (expert > 0 ? 1 : 0);
    g.reset(2 + body + (m_.mtp_layers > 0 ? 1 : 0));
    const double vocab_shard = static_cast<double>(m_.vocab) * m_.hidden / s.tp;
    const double tokens = mb.tokens / s.cp;

    Block& embedding = g.blocks[0];
    embedding.name = "embedding";
    embedding.pin = Block::Pin::first_stage;
    embedding_ops(m_, s, mb, embedding.ops);
    const double positions = m_.learned_positions ? static_cast<double>(m_.seq_len) * m_.hidden : 0;
    embedding.dense_params = vocab_shard + positions;
    embedding.param_tensors = m_.learned_positions ? 2 : 1;
    embedding.largest_tensor_params = vocab_shard;
    // The embedding's dropout mask, one byte per element.
    embedding.kept_bytes.fill(tokens * m_.hidden * (m_.dropout > 0 ? 1 : 0));

    size_t next = 1;
    if (dense > 0) {
      Block& layer = g.blocks[next++];
      layer.name = expert > 0 ? "dense_layer" : "layer";
      layer.count = dense;
      fill_layer(s, kernel, mb, false, layer);
    }
    if (expert > 0) {
      Block& layer = g.blocks[next++];
      layer.name = dense > 0 ? "moe_layer" : "layer";
      layer.count = expert;
      fill_layer(s, kernel, mb, true, layer);
    }

    Block& head = g.blocks[next++];
    head.name = "head";
    head.pin = Block::Pin::last_stage;
    head_ops(m_, s, mb, head.ops);
    head.dense_params = final_norm_parameters(m_);
    head.param_tensors = (m_.rmsnorm ? 1 : 2) + (m_.tied_embeddings ? 0 : 1);
    head.largest_tensor_params = m_.tied_embeddings ? m_.hidden : vocab_shard;
    // A tied LM head is the embedding's table; an untied one is its own.
    if (m_.tied_embeddings)
      head.tied_params = vocab_shard;
    else
      head.dense_params += vocab_shard;
    // fp32 logits and their gradient for the loss, vocab-parallel.
    head.working_bytes = 2 * 4 * tokens * m_.vocab / s.tp;

    if (m_.mtp_layers > 0) {
      // Multi-token prediction on the last stage (as DeepSeek-V3 and Megatron-core place it):
      // a layer as the model's last, with its own norms and projection, the main head again,
      // and a copy of the embedding table tied to the first stage's.
      Block& mtp = g.blocks[next++];
      const bool moe = m_.moe_layer(m_.layers - 1);
      fill_layer(s, kernel, mb, moe, mtp);
      mtp.ops.clear();
      mtp_ops(m_, s, kernel, mb, mtp.ops);
      mtp.name = "mtp";
      mtp.pin = Block::Pin::last_stage;
      mtp.count = m_.mtp_layers;
      const double norm = m_.rmsnorm ? m_.hidden : 2.0 * m_.hidden;
      mtp.dense_params += 3 * norm + 2.0 * m_.hidden * m_.hidden / s.tp;
      mtp.param_tensors += 4;
      mtp.tied_params = vocab_shard;
      mtp.largest_tensor_params = std::max(mtp.largest_tensor_params, vocab_shard);
      // Pinned blocks are not recomputed: the layer's activations, the projection's input
      // (2h) and the two norms' inputs, and the loss's logits while it runs.
      const double e = numerics(s).element_bytes;
      const double sp_div = s.sp ? s.tp : 1;
      mtp.kept_bytes.fill(mtp.kept_bytes[static_cast<size_t>(Recompute::none)] +
                          4 * e * tokens * m_.hidden / sp_div);
      mtp.working_bytes = head.working_bytes;
    }

    g.boundary_bytes = numerics(s).element_bytes * tokens * m_.hidden;
  }

  std::vector<int> tp_candidates(int max_tp) const override {
    std::vector<int> v;
    for (int t : divisors(m_.heads, max_tp))
      if (m_.ffn_hidden % t == 0 && (m_.kv_heads % t == 0 || t % m_.kv_heads == 0)) v.push_back(t);
    return v;
  }
  std::vector<int> cp_candidates(int max_cp) const override {
    std::vector<int> v;
    for (int x = 1; x <= max_cp && m_.seq_len % (2 * x) == 0; x *= 2) v.push_back(x);
    return v;
  }
  std::vector<int> ep_candidates() const override {
    return m_.is_moe() ? divisors(m_.moe.experts, m_.moe.experts) : std::vector<int>{1};
  }
  // With fused attention nothing is left for selective recomputation to drop.
  bool has_selective_recompute(AttentionKernel kernel) const override {
    return kernel == AttentionKernel::standard;
  }

 private:
  bool has_dense_layers() const { return !m_.is_moe() || m_.moe.first_dense_layers > 0; }

  // One body layer's parameters, tensors and activations on one device.
  void fill_layer(const Strategy& s, AttentionKernel kernel, const MicroBatch& mb, bool moe,
                  Block& layer) const {
    layer_ops(m_, s, kernel, mb, moe, layer.ops);
    const LayerParameters lp = layer_parameters(m_, moe);
    const int etp = s.expert_tp();
    layer.dense_params =
        lp.attention / s.tp + lp.replicated + lp.router + lp.norms + lp.shared / s.tp;
    // Experts are held by the expert-data-parallel ranks; a dense MLP like the attention.
    const double mlp_local = moe ? lp.experts * lp.mlp / etp / s.ep : lp.mlp / s.tp;
    (moe ? layer.expert_params : layer.dense_params) += mlp_local;
    // Tensors: the attention's linears (qkv and the projection; MLA's down and up projections,
    // the projection and two latent norms), each with its bias where the model has them; the
    // two norms' scale (and shift for LayerNorm); per-head query and key norms; a router (and
    // its bias); shared experts' two; every local expert's two.
    const int per_linear = m_.bias ? 2 : 1;
    const int norm_tensors = m_.rmsnorm ? 1 : 2;
    const int attention_tensors = m_.is_mla()
                                      ? per_linear * (m_.mla.q_lora_rank > 0 ? 4 : 3) +
                                            norm_tensors * (m_.mla.q_lora_rank > 0 ? 2 : 1)
                                      : per_linear * 2 + (m_.qk_norm ? 2 * norm_tensors : 0);
    const int mlps = moe ? m_.moe.experts / s.ep : 1;
    layer.param_tensors = attention_tensors + per_linear * 2 * mlps + 2 * norm_tensors +
                          (moe ? 1 + (m_.moe.expert_bias ? 1 : 0) : 0) +
                          (moe && m_.moe.shared_experts > 0 ? per_linear * 2 : 0);
    const double f =
        static_cast<double>(moe ? m_.expert_ffn() : m_.ffn_hidden) / (moe ? etp : s.tp);
    const double gate = m_.activation == Activation::swiglu ? 2 : 1;
    const double fc1 = gate * f * m_.hidden;
    double attention_largest;
    if (m_.is_mla()) {
      const Mla& a = m_.mla;
      const double heads = static_cast<double>(m_.heads) / s.tp;
      attention_largest =
          std::max({static_cast<double>(a.q_lora_rank > 0 ? a.q_lora_rank : m_.hidden) * heads *
                        a.qk_head_dim(),
                    a.kv_lora_rank * heads * (a.qk_nope_head_dim + a.v_head_dim),
                    heads * a.v_head_dim * m_.hidden});
    } else {
      const double q = static_cast<double>(m_.heads) * m_.head_dim() / s.tp;
      const double kv = std::max(1.0, static_cast<double>(m_.kv_heads) / s.tp) * m_.head_dim();
      attention_largest = std::max(m_.hidden * (q + 2 * kv), q * m_.hidden);
    }
    const double shared_fc1 =
        moe ? gate * m_.moe.shared_experts * static_cast<double>(m_.expert_ffn()) / s.tp * m_.hidden
            : 0;
    layer.largest_tensor_params = std::max({attention_largest, fc1, shared_fc1});
    // The linears Transformer Engine runs in FP8: attention's and the MLP's (or experts').
    if (numerics(s).fp8()) layer.fp8_params = lp.attention / s.tp + mlp_local + lp.shared / s.tp;
    for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full})
      layer.kept_bytes[static_cast<size_t>(r)] = layer_activation_bytes(m_, s, kernel, r, mb, moe);
  }

  Model m_;
};

}  // namespace

double layer_activation_bytes(const Model& m, const Strategy& st, AttentionKernel kernel,
                              Recompute recompute) {
  const double n = m.seq_len;
  return layer_activation_bytes(m, st, kernel, recompute,
                                {static_cast<double>(st.mbs), st.mbs * n, st.mbs * n * n});
}

double layer_activation_bytes(const Model& m, const Strategy& st, AttentionKernel kernel,
                              Recompute recompute, const MicroBatch& mb) {
  return layer_activation_bytes(m, st, kernel, recompute, mb, m.moe_layer(m.layers - 1));
}

double layer_activation_bytes(const Model& m, const Strategy& st, AttentionKernel kernel,
                              Recompute recompute, const MicroBatch& mb, bool moe_layer) {
  const double T = mb.tokens / st.cp;
  const double h = m.hidden;
  const double t = st.tp;
  const double sp_div = st.sp ? t : 1;
  const double heads = m.heads / t;
  const double mask = m.dropout > 0 ? 1.0 : 0.0;
  const Numerics num = numerics(st);
  const double e = num.element_bytes;
  // A linear's input, kept for its weight gradient: in FP8 under precision=fp8 (Transformer
  // Engine saves the cast copy), else an activation element.
  const double li = num.fp8() ? 1 : e;

  if (recompute == Recompute::full) return e * T * h / sp_div;  // the layer's input only

  double bytes = 0;
  if (m.is_mla()) {
    // MLA: norm input and output (the down projections' input, the rank's own tokens), the
    // latents before their norms and after (the up projections' inputs, gathered), Q, K, V
    // (rotary parts applied), the projection input, the dropout mask after it.
    const Mla& a = m.mla;
    const double latent = a.q_lora_rank + a.kv_lora_rank;
    bytes = e * T * h / sp_div + li * T * h / sp_div +
            e * T * (latent + a.qk_rope_head_dim) / sp_div + li * T * latent +
            e * T * heads * (2 * a.qk_head_dim() + a.v_head_dim) + li * T * heads * a.v_head_dim +
            mask * T * h / sp_div;
  } else {
    // Attention block: norm input and output (QKV input), Q, K, V, the projection input,
    // the dropout mask after the projection; under per-head norms, Q and K before them.
    const double hd = m.head_dim();
    const double q = heads * hd;
    const double kv = std::max(1.0, static_cast<double>(m.kv_heads) / t) * hd;
    bytes = e * T * h / sp_div + li * T * h / sp_div + e * T * q + 2 * e * T * kv + li * T * q +
            mask * T * h / sp_div;
    if (m.qk_norm) bytes += e * T * (q + kv);
  }
  // Attention core. Unfused: softmax output, dropout mask and dropout output, a*s^2 each;
  // selective recomputation drops exactly these. Fused: only the softmax statistics (fp32).
  const double scores = heads * (mb.squared / st.cp);
  if (kernel == AttentionKernel::standard) {
    if (recompute != Recompute::selective) bytes += e * scores + mask * (1 + e) * scores;
  } else {
    bytes += 4 * heads * T;
  }
  // MLP block: norm input and output (fc1 input), activation input(s), fc2 input, mask.
  const double gate = m.activation == Activation::swiglu ? 2 : 1;
  bytes += e * T * h / sp_div + mask * T * h / sp_div;
  if (!moe_layer) {
    const double f = static_cast<double>(m.ffn_hidden) / t;
    bytes += li * T * h / sp_div + e * T * gate * f + li * T * f;
    return bytes;
  }
  // Experts: their inputs are the dispatched tokens (the norm's output is kept in 16 bits),
  // kept for the expert fc1, and each routed token's activation input(s) and fc2 input, on the
  // busiest rank.
  const double f = static_cast<double>(m.expert_ffn()) / st.expert_tp();
  const double routed = tokens_on_experts(m, st, T);
  bytes += e * T * h / sp_div + e * routed * gate * f + li * routed * f + li * routed * h;
  if (m.moe.shared_experts > 0) {
    // Shared experts, a dense MLP beside them: input (sequence-parallel shard, gathered again
    // in backward), activation input(s), fc2 input.
    const double fs = static_cast<double>(m.moe.shared_experts) * m.expert_ffn() / t;
    bytes += li * T * h / sp_div + e * T * gate * fs + li * T * fs;
  }
  return bytes;
}

std::unique_ptr<Workload> transformer_workload(const Model& m) {
  return std::make_unique<Transformer>(m);
}

std::vector<NamedGemm> gemm_shapes(const Workload& w, const Strategy& s, AttentionKernel kernel) {
  Graph g;
  w.graph(s, kernel, g);
  std::vector<NamedGemm> out;
  auto add = [&](std::string name, GemmShape shape) {
    for (const auto& x : out)
      if (x.shape == shape) return;
    out.push_back({std::move(name), shape});
  };
  for (const Block& b : g.blocks) {
    for (const Op& op : b.ops) {
      if (op.kind != OpKind::gemm) continue;
      add(op.name, op.gemm);
      add(std::string(op.name) + ".dgrad", dgrad_shape(op.gemm));
      add(std::string(op.name) + ".wgrad", wgrad_shape(op.gemm));
    }
  }
  return out;
}

std::vector<NamedGemm> gemm_shapes(const Model& m, const Strategy& s, AttentionKernel kernel) {
  return gemm_shapes(*transformer_workload(m), s, kernel);
}

}  // namespace shardcost
