#include "transformer_ops.h"

#include <algorithm>

namespace shardcost {

namespace {

struct Dims {
  double b, s, s_local, tokens, squared_local, h, t, sp_div, q_local, kv_local, hd;
  Numerics num;
  double e;  // bytes of one activation element (2; 4 in fp32 and tf32)
  double w;  // e / 2: the 16-bit byte counts below scale by it
};

Dims dims(const Model& m, const Strategy& st, const MicroBatch& mb) {
  Dims d;
  d.b = mb.sequences;
  d.s = m.seq_len;
  d.s_local = static_cast<double>(m.seq_len) / st.cp;
  d.tokens = mb.tokens / st.cp;
  d.squared_local = mb.squared / st.cp;  // each rank's queries against whole sequences' keys
  d.h = m.hidden;
  d.t = st.tp;
  d.sp_div = st.sp ? st.tp : 1;
  d.hd = m.head_dim();
  d.q_local = static_cast<double>(m.heads) / st.tp;
  // With more tensor-parallel ranks than kv heads, each rank holds one replicated kv head.
  d.kv_local = std::max(1.0, static_cast<double>(m.kv_heads) / st.tp);
  d.num = numerics(st);
  d.e = d.num.element_bytes;
  d.w = d.e / 2;
  return d;
}

// Dimensions are whole and at least 1: an average below one (a few tokens spread over many
// experts) still runs a GEMM of one row, never one of none (which would price as 0/0).
Op gemm(const char* name, DType dtype, double m, double n, double k, double batch = 1) {
  Op op;
  op.name = name;
  op.kind = OpKind::gemm;
  op.dtype = dtype;
  auto dim = [](double x) { return std::max<int64_t>(1, static_cast<int64_t>(x)); };
  op.gemm = {dim(m), dim(n), dim(k), dim(batch)};
  return op;
}

Op pass(const char* name, double elements, double fwd_bytes_per_el, double bwd_bytes_per_el) {
  Op op;
  op.name = name;
  op.kind = OpKind::memory;
  op.bytes = elements * fwd_bytes_per_el;
  op.backward_bytes = elements * bwd_bytes_per_el;
  return op;
}

Op comm(const char* name, OpKind kind, Axis axis, std::optional<CollectiveOp> fwd,
        std::optional<CollectiveOp> bwd, double bytes) {
  Op op;
  op.name = name;
  op.kind = kind;
  op.axis = axis;
  op.op = fwd;
  op.backward_op = bwd;
  op.bytes = bytes;
  return op;
}

// Tensor-parallel communication around a block (Megatron's f and g). Without sequence
// parallelism: entering is the identity forward and an all-reduce of the input gradient
// backward; leaving is an all-reduce forward and the identity backward. With it: all-gather
// entering (reduce-scatter backward), reduce-scatter leaving (all-gather backward).
void tp_enter(const Dims& d, const Strategy& st, std::vector<Op>& out) {
  if (st.tp == 1) return;
  Op op = st.sp ? comm("tp_all_gather", OpKind::collective, Axis::tp, CollectiveOp::all_gather,
                       CollectiveOp::reduce_scatter, d.e * d.tokens * d.h)
                : comm("tp_input_grad_all_reduce", OpKind::collective, Axis::tp, std::nullopt,
                       CollectiveOp::all_reduce, d.e * d.tokens * d.h);
  op.before_column_parallel = true;
  op.backward_regather = st.sp;
  op.userbuffers = st.sp;
  out.push_back(op);
}

void tp_exit(const Dims& d, const Strategy& st, std::vector<Op>& out) {
  if (st.tp == 1) return;
  if (st.sp) {
    Op op = comm("tp_reduce_scatter", OpKind::collective, Axis::tp, CollectiveOp::reduce_scatter,
                 CollectiveOp::all_gather, d.e * d.tokens * d.h);
    op.userbuffers = true;
    out.push_back(op);
  } else {
    out.push_back(comm("tp_all_reduce", OpKind::collective, Axis::tp, CollectiveOp::all_reduce,
                       std::nullopt, d.e * d.tokens * d.h));
  }
}

// Norm: read x, write y in bf16. Backward (apex/TE kernels): read x and dy, write dx, then a
// second pass over x and dy for the weight (and bias) gradients. Feeding an FP8 linear,
// Transformer Engine's LayerNormLinear writes y in FP8 (one byte) instead.
Op norm(const char* name, const Dims& d, bool fp8_out = false) {
  return pass(name, d.tokens * d.h / d.sp_div, fp8_out ? 3 : 4 * d.w, 10 * d.w);
}

// Residual add, with bias and dropout fused (Megatron's bias_dropout_add): forward reads x
// and the residual, writes the sum and a one-byte mask; backward reads dy and the mask.
Op residual(const char* name, const Dims& d, bool dropout) {
  return pass(name, d.tokens * d.h / d.sp_div, 6 * d.w + (dropout ? 1 : 0),
              4 * d.w + (dropout ? 1 : 0));
}

// Transformer Engine's casts around one FP8 linear (delayed scaling, Hopper's TN-only FP8
// GEMMs): forward, the bf16 input cast to FP8 with its transpose for the weight gradient
// (read 2, write 1 + 1 bytes per element), or, where a norm already wrote it in FP8, only the
// transpose, made in backward (read 1, write 1); backward, the output gradient cast to FP8
// with its transpose (read 2, write 1 + 1). Placed after the GEMM so that a collective
// before the GEMM still sees it as its neighbour.
Op fp8_casts(const char* name, double inputs, double outputs, bool input_from_norm) {
  Op op = pass(name, 1, input_from_norm ? 0 : 4 * inputs,
               4 * outputs + (input_from_norm ? 2 * inputs : 0));
  return op;
}

// A mixture-of-experts MLP: route, dispatch over expert parallelism, the local experts, combine.
// Without both tp and ep (or under tp_enter's all-gather), every TP rank routes all T tokens.
// With both, Megatron-core's all-to-all dispatcher (which needs sequence parallelism) has each
// TP rank route its own T/tp tokens, send them over the expert-parallel group and only then
// gather what arrived over TP for its shard of the experts; combine is the reverse. Expert-
// parallel traffic is the rank's T/tp tokens, not all T (a TP group does not send the same
// tokens tp times); TP moves the routed tokens instead.
void moe_ops(const Model& m, const Strategy& st, const Dims& d, bool over_tp,
             std::vector<Op>& out) {
  const double f_local = static_cast<double>(m.ffn_hidden) / st.tp;
  const bool swiglu = m.activation == Activation::swiglu;
  const double local = over_tp ? d.tokens / st.tp : d.tokens;  // tokens this rank routes
  const double routed_local = local * m.top_k;
  const double routed = over_tp ? routed_local * st.tp : routed_local;  // what experts compute
  out.push_back(gemm("moe_router", d.num.other, local, m.experts, d.h));
  out.push_back(comm("ep_dispatch", OpKind::collective, Axis::ep, CollectiveOp::all_to_all,
                     CollectiveOp::all_to_all, d.e * routed_local * d.h));
  if (over_tp) {
    Op gather = comm("moe_tp_all_gather", OpKind::collective, Axis::tp, CollectiveOp::all_gather,
                     CollectiveOp::reduce_scatter, d.e * routed * d.h);
    gather.before_column_parallel = true;
    gather.backward_regather = true;
    out.push_back(gather);
  }
  const double local_experts = static_cast<double>(m.experts) / st.ep;
  const double tokens_per_expert = routed * st.ep / m.experts;
  const double fc1_out = (swiglu ? 2 : 1) * f_local;
  out.push_back(gemm("expert_fc1", d.num.linear, tokens_per_expert, fc1_out, d.h, local_experts));
  if (d.num.fp8())
    out.push_back(fp8_casts("expert_fc1_fp8_casts", routed * d.h, routed * fc1_out, false));
  out.push_back(swiglu ? pass("expert_swiglu", routed * f_local, 6 * d.w, 10 * d.w)
                       : pass("expert_bias_gelu", routed * f_local, 4 * d.w, 6 * d.w));
  out.push_back(gemm("expert_fc2", d.num.linear, tokens_per_expert, d.h, f_local, local_experts));
  if (d.num.fp8())
    out.push_back(fp8_casts("expert_fc2_fp8_casts", routed * f_local, routed * d.h, false));
  if (over_tp)
    out.push_back(comm("moe_tp_reduce_scatter", OpKind::collective, Axis::tp,
                       CollectiveOp::reduce_scatter, CollectiveOp::all_gather, d.e * routed * d.h));
  out.push_back(comm("ep_combine", OpKind::collective, Axis::ep, CollectiveOp::all_to_all,
                     CollectiveOp::all_to_all, d.e * routed_local * d.h));
}

}  // namespace

void layer_ops(const Model& m, const Strategy& st, AttentionKernel kernel, const MicroBatch& mb,
               std::vector<Op>& out) {
  const Dims d = dims(m, st, mb);
  const bool dropout = m.dropout > 0;

  const bool fp8 = d.num.fp8();
  out.push_back(norm("input_norm", d, fp8));
  tp_enter(d, st, out);
  const double qkv_out = (d.q_local + 2 * d.kv_local) * d.hd;
  out.push_back(gemm("qkv", d.num.linear, d.tokens, qkv_out, d.h));
  if (fp8) out.push_back(fp8_casts("qkv_fp8_casts", d.tokens * d.h, d.tokens * qkv_out, true));
  // Ulysses: Q, K and V all-to-all'd from a sequence split to a head split (K and V heads
  // replicated up to cp where there are fewer); backward, their gradients back.
  const bool ulysses = st.cp > 1 && st.cp_kind == CpKind::ulysses;
  if (ulysses)
    out.push_back(
        comm("cp_ulysses_qkv_all_to_all", OpKind::collective, Axis::cp, CollectiveOp::all_to_all,
             CollectiveOp::all_to_all,
             d.e * d.tokens * (d.q_local + 2 * std::max(d.kv_local, static_cast<double>(st.cp))) *
                 d.hd));

  const double heads_batch = d.b * d.q_local;
  // Score elements: each sequence's queries against its own keys (causal, per document).
  const double scores = d.q_local * d.squared_local;
  if (kernel == AttentionKernel::flash) {
    Op a;
    a.name = "flash_attention";
    a.kind = OpKind::attention;
    // QK^T and AV, causal: half of the score matrix is computed.
    a.flops = 4 * scores * d.hd * 0.5;
    a.dtype = d.num.other;
    out.push_back(a);
  } else {
    Op qk = gemm("attention_qk", d.num.other, d.s_local, d.s, d.hd, heads_batch);
    qk.selective = true;
    out.push_back(qk);
    // Fused scale-mask-softmax: read and write the scores; backward reads y and dy, writes dx.
    Op softmax = pass("attention_softmax", scores, 4 * d.w, 6 * d.w);
    softmax.selective = true;
    out.push_back(softmax);
    if (dropout) {
      Op drop = pass("attention_dropout", scores, 4 * d.w + 1, 4 * d.w + 1);
      drop.selective = true;
      out.push_back(drop);
    }
    Op av = gemm("attention_av", d.num.other, d.s_local, d.hd, d.s, heads_batch);
    av.selective = true;
    out.push_back(av);
  }
  if (st.cp > 1 && st.cp_kind == CpKind::ring) {
    // Ring attention: K and V blocks travel cp-1 hops around the ring, overlapped with the
    // attention of the block in hand; backward also returns dK and dV (twice the bytes).
    const double kv_bytes = 2 * d.e * d.tokens * d.kv_local * d.hd;
    out.push_back(comm("cp_ring_exchange", OpKind::ring, Axis::cp, CollectiveOp::send_recv,
                       CollectiveOp::send_recv, kv_bytes * (st.cp - 1)));
  }
  // Ulysses: the attention output all-to-all'd back to the sequence split.
  if (ulysses)
    out.push_back(comm("cp_ulysses_out_all_to_all", OpKind::collective, Axis::cp,
                       CollectiveOp::all_to_all, CollectiveOp::all_to_all,
                       d.e * d.tokens * d.q_local * d.hd));
  out.push_back(gemm("attention_proj", d.num.linear, d.tokens, d.h, d.q_local * d.hd));
  if (fp8)
    out.push_back(
        fp8_casts("attention_proj_fp8_casts", d.tokens * d.q_local * d.hd, d.tokens * d.h, false));
  tp_exit(d, st, out);
  out.push_back(residual("attention_residual", d, dropout));

  const bool over_tp = m.is_moe() && st.ep > 1 && st.tp > 1;
  out.push_back(norm("mlp_norm", d, fp8 && !m.is_moe()));
  const double f_local = static_cast<double>(m.ffn_hidden) / st.tp;
  const bool swiglu = m.activation == Activation::swiglu;
  // With tp and ep, the MoE dispatcher moves tokens over TP itself (moe_ops).
  if (!over_tp) tp_enter(d, st, out);
  if (!m.is_moe()) {
    const double fc1_out = (swiglu ? 2 : 1) * f_local;
    out.push_back(gemm("mlp_fc1", d.num.linear, d.tokens, fc1_out, d.h));
    if (fp8)
      out.push_back(fp8_casts("mlp_fc1_fp8_casts", d.tokens * d.h, d.tokens * fc1_out, true));
    out.push_back(swiglu ? pass("swiglu", d.tokens * f_local, 6 * d.w, 10 * d.w)
                         : pass("bias_gelu", d.tokens * f_local, 4 * d.w, 6 * d.w));
    out.push_back(gemm("mlp_fc2", d.num.linear, d.tokens, d.h, f_local));
    if (fp8)
      out.push_back(fp8_casts("mlp_fc2_fp8_casts", d.tokens * f_local, d.tokens * d.h, false));
  } else {
    moe_ops(m, st, d, over_tp, out);
  }
  if (!over_tp) tp_exit(d, st, out);
  out.push_back(residual("mlp_residual", d, dropout));
  if (m.bias) {
    // Bias gradients: a reduction over the tokens of every biased linear's output gradient.
    const double outputs = (d.q_local + 2 * d.kv_local) * d.hd + d.h +
                           (swiglu ? 2 : 1) * f_local * (m.is_moe() ? m.top_k : 1) + d.h;
    out.push_back(pass("bias_grads", d.tokens * outputs, 0, d.e));
  }
}

void embedding_ops(const Model& m, const Strategy& st, const MicroBatch& mb, std::vector<Op>& out) {
  const Dims d = dims(m, st, mb);
  // Vocab-parallel lookup writes the (partial) embeddings; backward scatters into the table.
  out.push_back(
      pass("embedding_lookup", d.tokens * d.h, (m.learned_positions ? 6 : 2) * d.w, 6 * d.w));
  tp_exit(d, st, out);
}

void head_ops(const Model& m, const Strategy& st, const MicroBatch& mb, std::vector<Op>& out) {
  const Dims d = dims(m, st, mb);
  out.push_back(norm("final_norm", d));
  tp_enter(d, st, out);
  const double v_local = static_cast<double>(m.vocab) / st.tp;
  // Under fp8 the head stays in 16 bits (Megatron's output layer is not a TE linear).
  out.push_back(gemm("lm_head", d.num.other, d.tokens, v_local, d.h));
  // Vocab-parallel cross entropy in fp32, as Megatron's passes run: .float() (read 2, write
  // 4), max (4), sub_ (8), exp (8), sum (4), div_ (8); backward: softmax minus one-hot in
  // place (8) and the cast back to 16 bits (6).
  out.push_back(pass("cross_entropy", d.tokens * v_local, 38, 14));
}

}  // namespace shardcost
