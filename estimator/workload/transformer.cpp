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
  double parameters() const override { return parameter_count(m_); }
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
    if (m_.kv_heads % s.tp != 0 && s.tp % m_.kv_heads != 0)
      return fmt::format("tp={} and the {} kv heads do not divide each other", s.tp, m_.kv_heads);
    if (m_.ffn_hidden % s.tp != 0)
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
    if (m_.is_moe()) {
      if (m_.experts % s.ep != 0)
        return fmt::format("ep={} does not divide the {} experts", s.ep, m_.experts);
      // Megatron-core: "When using expert parallelism and tensor parallelism, sequence
      // parallelism must be used" (its token dispatcher routes each TP rank's own tokens).
      if (s.ep > 1 && s.tp > 1 && !s.sp) return "ep>1 with tp>1 needs sp=true";
      if ((s.dp * s.cp) % s.ep != 0)
        return fmt::format(
            "ep={} does not divide dp*cp = {} (experts are spread over the data-"
            "parallel ranks)",
            s.ep, s.dp * s.cp);
    }
    return std::nullopt;
  }

  void graph_of(const Strategy& s, AttentionKernel kernel, const MicroBatch& mb,
                Graph& g) const override {
    g.reset(3);
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

    Block& layer = g.blocks[1];
    layer.name = "layer";
    layer.count = m_.layers;
    layer_ops(m_, s, kernel, mb, layer.ops);
    const LayerParameters lp = layer_parameters(m_);
    layer.dense_params = lp.attention / s.tp + lp.router + lp.norms;
    layer.expert_params = lp.experts * lp.mlp / s.tp / (m_.is_moe() ? s.ep : 1);
    // Tensors: qkv and the projection, the MLP's two (a gated MLP's gate and up fused, as
    // Megatron's), each with its bias where the model has them; the two norms' scale (and
    // shift for LayerNorm); a router; every expert's two.
    const double f = static_cast<double>(m_.ffn_hidden) / s.tp;
    const int per_linear = m_.bias ? 2 : 1;
    const int mlps = m_.is_moe() ? m_.experts / s.ep : 1;
    layer.param_tensors =
        per_linear * (2 + 2 * mlps) + 2 * (m_.rmsnorm ? 1 : 2) + (m_.is_moe() ? 1 : 0);
    const double q = static_cast<double>(m_.heads) * m_.head_dim() / s.tp;
    const double kv = std::max(1.0, static_cast<double>(m_.kv_heads) / s.tp) * m_.head_dim();
    const double fc1 = (m_.activation == Activation::swiglu ? 2 : 1) * f * m_.hidden;
    layer.largest_tensor_params = std::max({m_.hidden * (q + 2 * kv), q * m_.hidden, fc1});
    // The linears Transformer Engine runs in FP8: attention's and the MLP's (or experts').
    if (numerics(s).fp8()) layer.fp8_params = lp.attention / s.tp + layer.expert_params;
    for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full})
      layer.kept_bytes[static_cast<size_t>(r)] = layer_activation_bytes(m_, s, kernel, r, mb);

    Block& head = g.blocks[2];
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
    return m_.is_moe() ? divisors(m_.experts, m_.experts) : std::vector<int>{1};
  }
  // With fused attention nothing is left for selective recomputation to drop.
  bool has_selective_recompute(AttentionKernel kernel) const override {
    return kernel == AttentionKernel::standard;
  }

 private:
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
  const double T = mb.tokens / st.cp;
  const double h = m.hidden;
  const double t = st.tp;
  const double sp_div = st.sp ? t : 1;
  const double hd = m.head_dim();
  const double q = m.heads * hd / t;
  const double kv = std::max(1.0, static_cast<double>(m.kv_heads) / t) * hd;
  const double mask = m.dropout > 0 ? 1.0 : 0.0;
  const Numerics num = numerics(st);
  const double e = num.element_bytes;
  // A linear's input, kept for its weight gradient: in FP8 under precision=fp8 (Transformer
  // Engine saves the cast copy), else an activation element.
  const double li = num.fp8() ? 1 : e;

  if (recompute == Recompute::full) return e * T * h / sp_div;  // the layer's input only

  // Attention block: norm input and output (QKV input), Q, K, V, the projection input,
  // the dropout mask after the projection.
  double bytes = e * T * h / sp_div + li * T * h / sp_div + e * T * q + 2 * e * T * kv +
                 li * T * q + mask * T * h / sp_div;
  // Attention core. Unfused: softmax output, dropout mask and dropout output, a*s^2 each;
  // selective recomputation drops exactly these. Fused: only the softmax statistics (fp32).
  const double scores = (m.heads / t) * (mb.squared / st.cp);
  if (kernel == AttentionKernel::standard) {
    if (recompute != Recompute::selective) bytes += e * scores + mask * (1 + e) * scores;
  } else {
    bytes += 4 * (m.heads / t) * T;
  }
  // MLP block: norm input and output (fc1 input), activation input(s), fc2 input, mask.
  const double f = static_cast<double>(m.ffn_hidden) / t;
  const double tokens_mlp = m.is_moe() ? T * m.top_k : T;
  const double act_in = m.activation == Activation::swiglu ? 2 * f : f;
  const double fc1_in = m.is_moe() ? e : li;  // experts' inputs are the dispatched tokens
  bytes += e * T * h / sp_div + fc1_in * T * h / sp_div + e * tokens_mlp * act_in +
           li * tokens_mlp * f + mask * T * h / sp_div;
  if (m.is_moe()) bytes += li * tokens_mlp * h;  // dispatched tokens kept for the expert fc1
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
