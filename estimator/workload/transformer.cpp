// The built-in transformer as a workload: the input embedding on the first stage, the layers
// as the pipeline's body, the final norm, LM head and loss on the last stage.
#include "transformer.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "model_math.h"
#include "shardcost/divisors.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "transformer_ops.h"

namespace shardcost {
namespace {

class Transformer final : public Workload {
 public:
  explicit Transformer(const Model& m) : m_(m), runs_(layer_runs(m)) {
    for (const LayerRun& r : runs_) {
      attention_ = attention_ || r.kind.mixer == Mixer::attention;
      mamba_ = mamba_ || r.kind.mixer == Mixer::mamba;
      dense_ = dense_ || r.kind.ffn == Ffn::dense;
    }
  }

  const std::string& name() const override { return m_.name; }
  double parameters() const override { return parameter_count(m_) + mtp_parameter_count(m_); }
  double model_flops(int global_batch) const override {
    return model_flops_per_step(m_, global_batch);
  }
  // Under LoRA the frozen weights' gradients are not computed: the linears and the head count
  // forward and input gradient (4 FLOPs a weight and token, not 6), attention's core in full,
  // and the adapters' weights 6 each.
  double trained_flops(const Strategy& s) const override {
    const double all = model_flops(s.gbs);
    if (s.lora <= 0) return all;
    const double tokens = static_cast<double>(s.gbs) * m_.seq_len;
    double linear = 2.0 * m_.hidden * m_.vocab, adapters = 0;
    for (const LayerRun& r : runs_) {
      linear += r.count * layer_linear_flops_per_token(m_, r.kind);
      adapters += r.count * lora_layer_parameters(m_, s.lora_linears(), s.lora);
    }
    return all - tokens * linear + 6 * tokens * adapters;
  }
  double model_flops_of(double tokens, double squared) const override {
    return model_flops_of_batch(m_, tokens, squared);
  }
  double tokens_per_sample() const override { return m_.seq_len; }
  int layers() const override { return m_.layers; }

  std::optional<std::string> check(const Strategy& s) const override {
    if (auto why = tp_problem(s.tp)) return why;
    if (s.schedule == PipeSchedule::local && m_.mtp_layers > 0)
      return "schedule=local copies the head to every stage; with multi-token prediction the last "
             "stage holds more than a head (not priced): use schedule=1f1b";
    // A tied head's projection is the embedding's table: both sharded, or both replicated.
    if (m_.tied_embeddings && s.zero_layers.size() >= 2 &&
        (s.zero_layers.front() > 0) != (s.zero_layers.back() > 0))
      return "tied embeddings: the head's projection is the embedding's table; mark the head as "
             "the embedding (both s or both r) in zero_layers";
    if (s.cp > 1 && s.cp_kind == CpKind::ring && m_.seq_len % (2 * s.cp) != 0)
      return fmt::format("cp={} needs seq_len ({}) divisible by 2*cp", s.cp, m_.seq_len);
    if (s.cp > 1 && s.cp_kind == CpKind::ulysses && attention_) {
      if (m_.seq_len % s.cp != 0)
        return fmt::format("cp={} needs seq_len ({}) divisible by cp", s.cp, m_.seq_len);
      if ((m_.heads / s.tp) % s.cp != 0)
        return fmt::format(
            "cp_kind=ulysses splits heads: the {} heads per tensor-parallel rank do not divide by "
            "cp={}",
            m_.heads / s.tp, s.cp);
    }
    // Mamba layers under context parallelism trade the sequence split for a head split.
    if (s.cp > 1 && mamba_) {
      const int heads = m_.mamba.heads / s.tp, groups = m_.mamba.groups / s.tp;
      if (heads % s.cp != 0 || groups % s.cp != 0)
        return fmt::format(
            "cp={} splits Mamba heads and groups: the {} heads and {} groups per tensor-parallel "
            "rank do not divide by cp",
            s.cp, heads, groups);
    }
    if ((s.recompute_modules & kRecomputeOps) && mamba_)
      return "recompute_modules=ops (torchtitan's per-op policy) is modelled for attention "
             "layers with dense or expert MLPs; this model has Mamba layers";
    if ((s.recompute_modules & kRecomputeOps) && m_.is_mla() && s.tp > 1)
      return "recompute_modules=ops with latent attention is modelled at tp=1 (under TP "
             "torchtitan runs MLA's down projections replicated on the gathered tokens); use "
             "tp=1 or recompute=full";
    if (s.lora > 0) {
      if (mamba_ || m_.is_mla() || m_.is_moe() || m_.mtp_layers > 0 || !dense_)
        return "lora is modelled for dense transformer layers (multi-head or grouped-query "
               "attention and dense MLPs); this model has experts, latent attention, Mamba "
               "layers or multi-token prediction";
      if ((s.lora_linears() & (kLoraQkv | kLoraFc1)) && s.lora % s.tp != 0)
        return fmt::format(
            "lora={} needs a rank divisible by tp={} (the adapters beside qkv and fc1 split it "
            "over the tensor-parallel ranks)",
            s.lora, s.tp);
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
    // Blocks: the embedding, the runs of layers of one kind (a transformer: dense then expert
    // layers; a hybrid pattern: its runs), the head, the multi-token-prediction modules.
    g.reset(2 + runs_.size() + (m_.mtp_layers > 0 ? 1 : 0));
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
    // LoRA freezes every weight of the model; only the layers' adapters train.
    embedding.frozen = s.lora > 0;

    size_t next = 1;
    for (const LayerRun& r : runs_) {
      Block& layer = g.blocks[next++];
      layer.name = runs_.size() == 1 ? "layer" : block_name(r.kind);
      layer.count = r.count;
      layer_ops(m_, s, kernel, mb, r.kind, layer.ops);
      fill_layer(s, kernel, mb, r.kind, layer);
    }

    Block& head = g.blocks[next++];
    head.name = "head";
    head.pin = Block::Pin::last_stage;
    head.frozen = s.lora > 0;
    head_ops(m_, s, mb, head.ops);
    head.dense_params = final_norm_parameters(m_);
    head.param_tensors = (m_.rmsnorm ? 1 : 2) + (m_.tied_embeddings ? 0 : 1);
    head.largest_tensor_params = m_.tied_embeddings ? m_.hidden : vocab_shard;
    head.vector_tensors = m_.rmsnorm ? 1 : 2;
    head.vector_params = head.vector_tensors * static_cast<double>(m_.hidden);
    head.largest_vector_params = m_.hidden;
    // A tied LM head is the embedding's table; an untied one is its own.
    if (m_.tied_embeddings)
      head.tied_params = vocab_shard;
    else
      head.dense_params += vocab_shard;
    // fp32 logits and their gradient for the loss, vocab-parallel.
    head.working_bytes = 2 * 4 * tokens * m_.vocab / s.tp;
    // Under Transformer Engine's fused cross entropy the 16-bit logits hold their gradient
    // until the head's backward; no fp32 copy (a soft-capped head keeps the unfused loss).
    if (m_.logit_softcap <= 0)
      head.te_loss_working_bytes = numerics(s).element_bytes * tokens * m_.vocab / s.tp;

    if (m_.mtp_layers > 0) {
      // Multi-token prediction on the last stage (as DeepSeek-V3 and Megatron-core place it):
      // a layer as the model's last, with its own norms and projection, the main head again,
      // and a copy of the embedding table tied to the first stage's.
      Block& mtp = g.blocks[next++];
      mtp_ops(m_, s, kernel, mb, mtp.ops);
      fill_layer(s, kernel, mb, m_.layer_kind(m_.layers - 1), mtp);
      mtp.name = "mtp";
      mtp.pin = Block::Pin::last_stage;
      mtp.count = m_.mtp_layers;
      const double norm = m_.rmsnorm ? m_.hidden : 2.0 * m_.hidden;
      mtp.dense_params += 3 * norm + 2.0 * m_.hidden * m_.hidden / s.tp;
      // Three norms (the hidden state's, the embedding's and the output's) and a projection.
      mtp.param_tensors += 3 * (m_.rmsnorm ? 1 : 2) + 1;
      mtp.vector_tensors += 3 * (m_.rmsnorm ? 1 : 2);
      mtp.vector_params += 3 * norm;
      mtp.tied_params = vocab_shard;
      mtp.largest_tensor_params = std::max(mtp.largest_tensor_params, vocab_shard);
      // What it keeps: the layer's activations, the projection's input (2h) and the two
      // norms' inputs, and the loss's logits while it runs. Its layer follows selective
      // recomputation as the body's do (Megatron-core builds the MTP layer from the model's
      // layer spec and config, recompute settings included; DeepSeek-V3 recomputes every
      // RMSNorm and MLA up-projection); under full recomputation it is kept whole (the layer
      // alone recomputed, not the head and loss beside it, is not modelled).
      const double e = numerics(s).element_bytes;
      const double sp_div = s.sp ? s.tp : 1;
      const double besides = 4 * e * tokens * m_.hidden / sp_div;
      const double whole = mtp.kept_bytes[static_cast<size_t>(Recompute::none)] + besides;
      const double selective = mtp.kept_bytes[static_cast<size_t>(Recompute::selective)] + besides;
      mtp.kept_bytes.fill(whole);
      mtp.kept_bytes[static_cast<size_t>(Recompute::selective)] = selective;
      mtp.follows_selective = true;
      mtp.working_bytes = head.working_bytes;
      mtp.te_loss_working_bytes = head.te_loss_working_bytes;
    }

    g.boundary_bytes = numerics(s).element_bytes * tokens * m_.hidden;
  }

  std::vector<int> tp_candidates(int max_tp) const override {
    std::vector<int> v;
    const int widest = attention_ ? m_.heads : m_.mamba.heads;
    for (int t : divisors(widest, max_tp))
      if (!tp_problem(t)) v.push_back(t);
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
  // Whether recomputing these modules changes anything in this model: attention's core only
  // where it is not fused, MLA's up projections only in MLA layers, the experts' activation
  // and the MoE layer only in MoE layers, shared experts only where there are some, a dense
  // MLP only in dense layers; the norms and torchtitan's per-op policy everywhere.
  bool has_selective_recompute(AttentionKernel kernel, unsigned modules) const override {
    if (modules == 0) modules = kRecomputeCoreAttn;
    const bool core = attention_ && kernel == AttentionKernel::standard;
    return ((modules & kRecomputeCoreAttn) != 0 && core) ||
           (modules & (kRecomputeLayernorm | kRecomputeOps)) != 0 ||
           ((modules & kRecomputeMlaUpProj) != 0 && attention_ && m_.is_mla()) ||
           ((modules & (kRecomputeMoeAct | kRecomputeMoe)) != 0 && m_.is_moe()) ||
           ((modules & kRecomputeSharedExperts) != 0 && m_.is_moe() && m_.moe.shared_experts > 0) ||
           ((modules & kRecomputeMlp) != 0 && dense_);
  }

 private:
  static const char* block_name(LayerKind k) {
    if (k.mixer == Mixer::attention) return k.ffn == Ffn::moe ? "moe_layer" : "dense_layer";
    if (k.mixer == Mixer::mamba) return "mamba";
    return k.ffn == Ffn::moe ? "moe" : "mlp";
  }

  // Why a tensor-parallel degree does not split the model's layers, or nothing.
  std::optional<std::string> tp_problem(int t) const {
    if (attention_) {
      if (m_.heads % t != 0) return fmt::format("tp={} does not divide the {} heads", t, m_.heads);
      if (!m_.is_mla() && m_.kv_heads % t != 0 && t % m_.kv_heads != 0)
        return fmt::format("tp={} and the {} kv heads do not divide each other", t, m_.kv_heads);
    }
    if (mamba_ && (m_.mamba.heads % t != 0 || m_.mamba.groups % t != 0))
      return fmt::format("tp={} does not divide the {} Mamba heads and {} groups", t,
                         m_.mamba.heads, m_.mamba.groups);
    // Transformer layers: the dense MLP's size (an MoE model's too, as it always has).
    if ((m_.pattern.empty() || dense_) && m_.ffn_hidden % t != 0)
      return fmt::format("tp={} does not divide ffn_hidden={}", t, m_.ffn_hidden);
    return std::nullopt;
  }

  // One layer's parameters, tensors and activations on one device (its ops are the caller's:
  // a body layer's, or a multi-token-prediction module's around one).
  void fill_layer(const Strategy& s, AttentionKernel kernel, const MicroBatch& mb, LayerKind kind,
                  Block& layer) const {
    const bool moe = kind.ffn == Ffn::moe;
    const LayerParameters lp = layer_parameters(m_, kind);
    const int etp = s.expert_tp();
    layer.dense_params =
        lp.attention / s.tp + lp.replicated + lp.router + lp.norms + lp.shared / s.tp;
    // Experts are held by the expert-data-parallel ranks; a dense MLP like the attention.
    const double mlp_local = moe ? lp.experts * lp.mlp / etp / s.ep : lp.mlp / s.tp;
    (moe ? layer.expert_params : layer.dense_params) += mlp_local;
    // Tensors: the attention's linears (qkv and the projection; MLA's down and up projections,
    // the projection and two latent norms), each with its bias where the model has them; a
    // Mamba mixer's two projections, convolution weight and bias, three per-head vectors and
    // norm; the norms' scale (and shift for LayerNorm); per-head query and key norms; a router
    // (and its bias); shared experts' two; every local expert's two.
    const int per_linear = m_.bias ? 2 : 1;
    const int norm_tensors = m_.rmsnorm ? 1 : 2;
    int mixer_tensors = 0;
    if (kind.mixer == Mixer::attention)
      mixer_tensors = m_.is_mla() ? per_linear * (m_.mla.q_lora_rank > 0 ? 4 : 3) +
                                        norm_tensors * (m_.mla.q_lora_rank > 0 ? 2 : 1)
                                  : per_linear * 2 + (m_.qk_norm ? 2 * norm_tensors : 0) +
                                        (m_.qkv_bias && !m_.bias ? 1 : 0);
    if (kind.mixer == Mixer::mamba) mixer_tensors = 8;
    const int mlps = kind.ffn == Ffn::none ? 0 : moe ? m_.moe.experts / s.ep : 1;
    const int parts = (kind.mixer != Mixer::none ? 1 : 0) + (kind.ffn != Ffn::none ? 1 : 0);
    layer.param_tensors = mixer_tensors + per_linear * 2 * mlps +
                          parts * norm_tensors * (m_.post_norms ? 2 : 1) +
                          (moe ? 1 + (m_.moe.expert_bias ? 1 : 0) : 0) +
                          (moe && m_.moe.shared_experts > 0 ? per_linear * 2 : 0);
    const double f =
        static_cast<double>(moe ? m_.expert_ffn() : m_.ffn_hidden) / (moe ? etp : s.tp);
    const double gate = m_.activation == Activation::swiglu ? 2 : 1;
    const double fc1 = kind.ffn == Ffn::none ? 0 : gate * f * m_.hidden;
    double mixer_largest = 0;
    if (kind.mixer == Mixer::attention && m_.is_mla()) {
      const Mla& a = m_.mla;
      const double heads = static_cast<double>(m_.heads) / s.tp;
      mixer_largest = std::max({static_cast<double>(a.q_lora_rank > 0 ? a.q_lora_rank : m_.hidden) *
                                    heads * a.qk_head_dim(),
                                a.kv_lora_rank * heads * (a.qk_nope_head_dim + a.v_head_dim),
                                heads * a.v_head_dim * m_.hidden});
    } else if (kind.mixer == Mixer::attention) {
      const double q = static_cast<double>(m_.heads) * m_.head_dim() / s.tp;
      const double kv = std::max(1.0, static_cast<double>(m_.kv_heads) / s.tp) * m_.head_dim();
      mixer_largest = std::max(m_.hidden * (q + 2 * kv), q * m_.hidden);
    } else if (kind.mixer == Mixer::mamba) {
      const Mamba& mb_ = m_.mamba;
      mixer_largest =
          m_.hidden * (2 * mb_.inner() + 2.0 * mb_.groups * mb_.state + mb_.heads) / s.tp;
    }
    const double shared_fc1 =
        moe ? gate * m_.moe.shared_experts * static_cast<double>(m_.expert_ffn()) / s.tp * m_.hidden
            : 0;
    layer.largest_tensor_params = std::max({mixer_largest, fc1, shared_fc1});
    // The one-dimensional tensors: all but the linears' weights (the attention's two, MLA's
    // three or four projections, a Mamba mixer's two and its convolution's, two per MLP, the
    // router). Their sizes: the hidden size (norms, the output projections' biases), the
    // query-key-value and fc1 biases, a Mamba mixer's inner width, the expert bias.
    int matrices = 2 * mlps + (moe ? 1 : 0) + (moe && m_.moe.shared_experts > 0 ? 2 : 0);
    if (kind.mixer == Mixer::attention)
      matrices += m_.is_mla() ? (m_.mla.q_lora_rank > 0 ? 4 : 3) : 2;
    if (kind.mixer == Mixer::mamba) matrices += 3;
    layer.vector_tensors = layer.param_tensors - matrices;
    const double h = m_.hidden;
    const double qkv_bias =
        kind.mixer == Mixer::attention && !m_.is_mla() && (m_.bias || m_.qkv_bias)
            ? static_cast<double>(m_.heads + 2 * m_.kv_heads) * m_.head_dim() / s.tp
            : 0;
    const double fc1_bias = m_.bias && kind.ffn != Ffn::none ? gate * f : 0;
    const double mamba_inner = kind.mixer == Mixer::mamba ? m_.mamba.inner() / s.tp : 0;
    const double expert_bias = moe && m_.moe.expert_bias ? m_.moe.experts : 0;
    layer.largest_vector_params = std::max({h, qkv_bias, fc1_bias, mamba_inner, expert_bias});
    // Their parameters: the biases named, the rest at the hidden size (norms and output
    // biases; MLA's and Mamba's vectors, a few hundred to thousands each, counted alike).
    const int named =
        (qkv_bias > 0 ? 1 : 0) + (fc1_bias > 0 ? mlps : 0) + (expert_bias > 0 ? 1 : 0);
    layer.vector_params =
        qkv_bias + fc1_bias * mlps + expert_bias + std::max(0, layer.vector_tensors - named) * h;
    // The linears Transformer Engine runs in FP8: the mixer's and the MLP's (or experts').
    // Under torchao the routed experts stay in 16 bits unless quantize_experts.
    if (const Numerics n = numerics(s); n.quantized())
      layer.fp8_params =
          lp.attention / s.tp +
          (kind.ffn == Ffn::none || (moe && !n.experts_quantized()) ? 0 : mlp_local) +
          lp.shared / s.tp;
    for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full})
      layer.kept_bytes[static_cast<size_t>(r)] = layer_activation_bytes(m_, s, kernel, r, mb, kind);
    // LoRA: the layer's weights frozen, its adapters (two tensors each, split over TP) trained.
    if (s.lora > 0) {
      layer.frozen = true;
      layer.adapter_params = lora_layer_parameters(m_, s.lora_linears(), s.lora) / s.tp;
      layer.dense_params += layer.adapter_params;
      const int adapters = std::popcount(s.lora_linears());
      layer.param_tensors += 2 * adapters;
    }
  }

  Model m_;
  std::vector<LayerRun> runs_;
  bool attention_ = false, mamba_ = false, dense_ = false;
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
  return layer_activation_bytes(m, st, kernel, recompute, mb, m.layer_kind(m.layers - 1));
}

namespace {

// What a layer keeps under torchtitan's per-op policy: the layer's input (the checkpoint's),
// the outputs of every second matrix multiply in the order they run (aten.mm's alternation:
// GQA's wq and wv; MLA's wq and wkv_b, or with query compression wq_a, wkv_a and wo; then the
// MLP's w1 and, gated, w2, or after MLA's five w3, or w2 ungated), attention's output and
// softmax statistics, the reduce-scatters' outputs; in an MoE layer the all-to-alls' outputs
// (the copies received, the rank's own sent back) and the shared experts' kept outputs, the
// router and the experts recomputed. Float8 and MXFP8 linears (torch._scaled_mm) keep no output
// before torchtitan's 2026-03-23 policy and every one after (sac_saves_scaled_mm).
double per_op_layer_bytes(const Model& m, const Strategy& st, const Numerics& num, double T,
                          LayerKind kind) {
  const double e = num.element_bytes, h = m.hidden, t = st.tp;
  const double sp_div = st.sp ? t : 1;
  const double heads = m.heads / t;
  const bool gated = m.activation == Activation::swiglu;
  const double scattered = st.sp && t > 1 ? 2 * e * T * h / t : 0.0;
  // Each matrix multiply's output features a token, in the order they run.
  std::vector<double> attention_mms;
  double attention_out = 0;
  if (m.is_mla()) {
    const Mla& a = m.mla;
    if (a.q_lora_rank > 0) attention_mms.push_back(a.q_lora_rank);
    attention_mms.push_back(heads * a.qk_head_dim());
    attention_mms.push_back(a.kv_lora_rank + a.qk_rope_head_dim);
    attention_mms.push_back(heads * (a.qk_nope_head_dim + a.v_head_dim));
    attention_out = heads * a.v_head_dim;
  } else {
    const double hd = m.head_dim();
    const double kv = std::max(1.0, static_cast<double>(m.kv_heads) / t) * hd;
    attention_mms = {heads * hd, kv, kv};
    attention_out = heads * hd;
  }
  attention_mms.push_back(h);  // wo: the partial sums before the reduce-scatter
  const bool moe = kind.ffn == Ffn::moe;
  const double f = moe ? static_cast<double>(m.moe.shared_experts) * m.expert_ffn() / t
                       : static_cast<double>(m.ffn_hidden) / t;
  std::vector<double> mms = attention_mms;
  if (f > 0) {
    mms.push_back(f);
    if (gated) mms.push_back(f);
    mms.push_back(h);
  }
  double kept = 0;
  for (size_t i = 0; i < mms.size(); ++i) {
    if (num.torchao)
      kept += num.ao_recomputes_every_gemm ? 0.0 : mms[i];
    else if (i % 2 == 0)
      kept += mms[i];
  }
  double routed = 0;
  if (moe) {
    // The copies of the rank's own routed tokens come back whatever the experts' imbalance.
    const bool all_to_all = st.ep > 1 || (!st.moe_tp_wrapped && st.expert_tp() != st.tp);
    if (all_to_all)
      routed = e * (tokens_on_experts(m, st, T) + tokens_routed_by_rank(st, T) * m.moe.top_k) * h;
  }
  return e * T * h / sp_div + e * T * kept + e * T * attention_out + 4 * heads * T + scattered +
         routed;
}

}  // namespace

double layer_activation_bytes(const Model& m, const Strategy& st, AttentionKernel kernel,
                              Recompute recompute, const MicroBatch& mb, LayerKind kind) {
  const double T = mb.tokens / st.cp;
  const double h = m.hidden;
  const double t = st.tp;
  const double sp_div = st.sp ? t : 1;
  const double heads = m.heads / t;
  const double mask = m.dropout > 0 ? 1.0 : 0.0;
  const Numerics num = numerics(st);
  const double e = num.element_bytes;
  // A linear's input, kept for its weight gradient: in FP8 under precision=fp8 (Transformer
  // Engine saves the cast copy; torchao compiled and tensorwise too), else an activation
  // element (Numerics::kept_input_bytes).
  const double li = num.kept_input_bytes();

  if (recompute == Recompute::full) return e * T * h / sp_div;  // the layer's input only
  // Selective recomputation drops what its modules recompute: attention's core (the default),
  // the norms' outputs, MLA's Q, K and V, the experts' activation output, what a dense MLP, an
  // MoE layer or its shared experts keep past their input.
  const unsigned modules = recompute != Recompute::selective ? 0u
                           : st.recompute_modules != 0       ? st.recompute_modules
                                                       : static_cast<unsigned>(kRecomputeCoreAttn);
  auto dropped = [&](unsigned module) { return (modules & module) != 0; };
  const double norm_out = dropped(kRecomputeLayernorm) ? 0.0 : 1.0;
  // LoRA beside qkv or fc1: Transformer Engine's LayerNormLinear, returning its norm output to
  // the adapter, keeps its own copy of it where that is not the same tensor: the sequence shard
  // under sequence parallelism, the quantized copy under FP8.
  const double ln_out =
      st.lora > 0 && ((st.sp && t > 1) || num.quantized()) ? norm_out * li * T * h / sp_div : 0;

  if (dropped(kRecomputeOps) && kind.mixer == Mixer::attention && kind.ffn != Ffn::none)
    return per_op_layer_bytes(m, st, num, T, kind);

  double bytes = 0;
  if (kind.mixer == Mixer::attention && m.is_mla()) {
    // MLA: norm input and output (the down projections' input, the rank's own tokens), the
    // latents before their norms and after (the up projections' inputs, gathered), Q, K, V
    // (rotary parts applied), the projection input, the dropout mask after it.
    const Mla& a = m.mla;
    const double latent = a.q_lora_rank + a.kv_lora_rank;
    bytes = e * T * h / sp_div + norm_out * li * T * h / sp_div +
            e * T * (latent + a.qk_rope_head_dim) / sp_div + li * T * latent +
            (dropped(kRecomputeMlaUpProj) ? 0.0 : 1.0) * e * T * heads *
                (2 * a.qk_head_dim() + a.v_head_dim) +
            li * T * heads * a.v_head_dim + mask * T * h / sp_div;
  } else if (kind.mixer == Mixer::attention) {
    // Attention block: norm input and output (QKV input), Q, K, V, the projection input,
    // the dropout mask after the projection; under per-head norms, Q and K before them.
    const double hd = m.head_dim();
    const double q = heads * hd;
    const double kv = std::max(1.0, static_cast<double>(m.kv_heads) / t) * hd;
    bytes = e * T * h / sp_div + norm_out * li * T * h / sp_div + e * T * q + 2 * e * T * kv +
            li * T * q + mask * T * h / sp_div;
    if (st.lora > 0) {
      // LoRA: the frozen linears keep no input (Transformer Engine saves one only where the
      // weight requires a gradient, backward_needs_input); an adapter keeps its input in 16
      // bits, beside qkv the gathered norm output (T x h, not the sequence shard), beside the
      // projection the attention's output (which the attention's backward reads anyway), and
      // its B the T x R low-rank activation.
      const unsigned lora = st.lora_linears();
      bytes += -norm_out * li * T * h / sp_div - li * T * q + e * T * q;
      if (lora & kLoraQkv) bytes += norm_out * e * T * h + e * T * st.lora + ln_out;
      if (lora & kLoraProj) bytes += e * T * st.lora;
      // Under lora_dropout each adapter keeps its masked input instead (beside the projection
      // a copy: the attention's backward reads the output itself) and the mask.
      if (st.lora_dropout > 0) {
        if (lora & kLoraQkv) bytes += T * h;
        if (lora & kLoraProj) bytes += (e + 1) * T * q;
      }
    }
    if (m.qk_norm) bytes += e * T * (q + kv);
  } else if (kind.mixer == Mixer::mamba) {
    // Mamba-2: norm input and output (in_proj input), in_proj's output (z, x, B, C, dt), the
    // convolution's output, the scan's output, the gated norm's output (out_proj input), the
    // mask. The scan kernels keep no chunk states: backward recomputes them from these.
    const Mamba& s = m.mamba;
    const double in = 2 * s.inner() + 2.0 * s.groups * s.state + s.heads;
    bytes = e * T * h / sp_div + norm_out * li * T * h / sp_div + e * T * in / t +
            e * T * s.conv_dim() / t + e * T * s.inner() / t + li * T * s.inner() / t +
            mask * T * h / sp_div;
  }
  // A post-sublayer norm (Gemma-2) keeps its input, the sublayer's output.
  if (m.post_norms && kind.mixer != Mixer::none) bytes += e * T * h / sp_div;
  if (kind.mixer == Mixer::attention) {
    // Attention core. Unfused: softmax output, dropout mask and dropout output, a*s^2 each;
    // selective recomputation drops exactly these. Fused: only the softmax statistics (fp32).
    const double scores = heads * (mb.squared / st.cp);
    if (kernel == AttentionKernel::standard) {
      if (!dropped(kRecomputeCoreAttn)) bytes += e * scores + mask * (1 + e) * scores;
    } else {
      bytes += 4 * heads * T;
    }
  }
  if (kind.ffn == Ffn::none) return bytes;
  // MLP block: norm input and output (fc1 input), activation input(s), fc2 input, mask.
  const double gate = m.activation == Activation::swiglu ? 2 : 1;
  bytes += e * T * h / sp_div + mask * T * h / sp_div;
  if (m.post_norms) bytes += e * T * h / sp_div;
  if (kind.ffn == Ffn::dense) {
    // recompute_modules=mlp keeps only the checkpoint's input, the norm's input above.
    if (dropped(kRecomputeMlp)) return bytes;
    const double f = static_cast<double>(m.ffn_hidden) / t;
    if (st.lora > 0) {
      // LoRA: the activation's input(s) alone, and the adapters' inputs (as above: beside fc1
      // the gathered norm output, beside fc2 its input) with their low-rank activations.
      const unsigned lora = st.lora_linears();
      bytes += e * T * gate * f;
      if (lora & kLoraFc1) bytes += norm_out * e * T * h + e * T * st.lora + ln_out;
      if (lora & kLoraFc2) bytes += e * T * f + e * T * st.lora;
      if (st.lora_dropout > 0)
        bytes += ((lora & kLoraFc1) ? T * h : 0.0) + ((lora & kLoraFc2) ? T * f : 0.0);
      return bytes;
    }
    bytes += norm_out * li * T * h / sp_div + e * T * gate * f + li * T * f;
    return bytes;
  }
  // The norm's output, kept in 16 bits: what the experts' dispatch starts from, and all that
  // recompute_modules=moe keeps (its checkpoint's input), nothing of the experts or the shared
  // experts.
  bytes += norm_out * e * T * h / sp_div;
  if (dropped(kRecomputeMoe)) return bytes;
  // Experts: their inputs are the dispatched tokens, kept for the expert fc1, and each routed
  // token's activation input(s) and fc2 input, on the busiest rank.
  const double f = static_cast<double>(m.expert_ffn()) / st.expert_tp();
  const double routed = tokens_on_experts(m, st, T);
  // The SwiGLU inputs in 16 bits, or quantized where the stack caches them so.
  const double act_in = st.quantized_moe_act_input ? num.q : e;
  const double le = num.expert_kept_input_bytes();
  bytes += act_in * routed * gate * f + (dropped(kRecomputeMoeAct) ? 0.0 : 1.0) * le * routed * f +
           le * routed * h;
  if (m.moe.shared_experts > 0 && !dropped(kRecomputeSharedExperts)) {
    // Shared experts, a dense MLP beside them: input (sequence-parallel shard, gathered again
    // in backward), activation input(s), fc2 input; recompute_modules=shared_experts keeps
    // only their checkpoint's input, the norm's output counted above.
    const double fs = static_cast<double>(m.moe.shared_experts) * m.expert_ffn() / t;
    bytes += li * T * h / sp_div + e * T * gate * fs + li * T * fs;
  }
  return bytes;
}

std::unique_ptr<Workload> transformer_workload(const Model& m) {
  return std::make_unique<Transformer>(m);
}

std::vector<NamedGemm> gemm_shapes(const Workload& w, const Strategy& s, AttentionKernel kernel) {
  // A split the model cannot take (tp=3 of 32 heads) has no shapes of its own to invent.
  if (auto why = w.check(s)) throw InputError(*why);
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
