#include "transformer_ops.h"

#include <algorithm>

#include "model_math.h"
#include "transformer.h"

namespace shardcost {

namespace {

struct Dims {
  double b, s, s_local, tokens, squared_local, h, t, sp_div, q_local, kv_local, hd;
  Numerics num;
  double e;  // bytes of one activation element (2; 4 in fp32 and tf32)
  double w;  // e / 2: the 16-bit byte counts below scale by it
  // What recompute=selective recomputes (RecomputeModule bits): ops of these modules are
  // marked selective.
  unsigned modules = kRecomputeCoreAttn;
  bool recomputes(unsigned module) const { return (modules & module) != 0; }
  // torchtitan's per-op policy (kRecomputeOps): elementwise ops, the sequence-parallel
  // all-gathers and every second matrix multiply of a layer are recomputed.
  bool per_op() const { return recomputes(kRecomputeOps); }
  // The layer's attention made an odd number of matrix multiplies (MLA with query
  // compression: wq_a, wq_b, wkv_a, wkv_b, wo), so the MLP's alternation starts recomputing.
  bool odd_mm_parity = false;
  // LoRA (Strategy::lora): the adapters' rank, the linears adapted (LoraTarget bits) and
  // whether the model's own weights are frozen.
  double lora = 0;
  unsigned lora_linears = 0;
  bool bias = false;  // the linears have biases
  double lora_dropout = 0;
  bool frozen() const { return lora > 0; }
  bool adapts(unsigned target) const { return (lora_linears & target) != 0; }
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
  d.odd_mm_parity = m.is_mla() && m.mla.q_lora_rank > 0;
  // With more tensor-parallel ranks than kv heads, each rank holds one replicated kv head.
  d.kv_local = std::max(1.0, static_cast<double>(m.kv_heads) / st.tp);
  d.num = numerics(st);
  d.e = d.num.element_bytes;
  d.w = d.e / 2;
  if (st.recompute_modules != 0) d.modules = st.recompute_modules;
  d.lora = st.lora;
  d.lora_linears = st.lora_linears();
  d.bias = m.bias;
  d.lora_dropout = st.lora_dropout;
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

// Marks an op recomputed (a share of it) under selective recomputation.
Op& recomputed(Op& op, bool yes, double share = 1) {
  if (yes && share > 0) {
    op.selective = true;
    op.selective_share = share;
  }
  return op;
}

// The share of a linear's GEMM that torchtitan's per-op policy recomputes: `alternate`, its
// share of the layer's every second matrix multiply (aten.mm); where the linear runs in float8
// or MXFP8 (torch._scaled_mm), all of it under a torchtitan whose policy does not save
// _scaled_mm (before 2026-03-23: _op_sac_save_list held aten.mm, the attention kernels,
// reduce-scatter, max), none under one that does (pytorch/torchtitan#2357: saved always,
// outside the alternation; TorchaoFloat8::sac_saves_scaled_mm).
double per_op_share(const Dims& d, double alternate) {
  if (d.num.torchao) return d.num.ao_recomputes_every_gemm ? 1.0 : 0.0;
  return alternate;
}

// Marks every op from `first` on recomputed whole: a module under normal checkpointing, run
// again from its kept input before its backward, its collectives too.
void checkpointed(std::vector<Op>& out, size_t first) {
  for (size_t i = first; i < out.size(); ++i) recomputed(out[i], true);
}

Op pass(const char* name, double elements, double fwd_bytes_per_el, double bwd_bytes_per_el) {
  Op op;
  op.name = name;
  op.kind = OpKind::memory;
  op.bytes = elements * fwd_bytes_per_el;
  op.backward_bytes = elements * bwd_bytes_per_el;
  return op;
}

// One fp32 amax, the payload of a quantizer's amax all-reduce.
constexpr double kAmaxBytes = 4;

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
// Entering an FP8 linear from a norm that writes its output quantized (Transformer Engine's
// LayerNormLinear), the sequence-parallel all-gather moves the quantized input (q bytes an
// element; TE's userbuffers keep FP8 buffers for the all-gather overlaps), and so does the
// backward's re-gather of the saved FP8 input; the input gradient's reduce-scatter stays in
// 16 bits.
// Where the quantizer scales by the whole tensor's amax (Numerics::amax_reduction), the
// quantized input's amax is all-reduced over the TP group before the all-gather: one
// 4-byte all-reduce forward, waited for before the cast.
void tp_enter(const Dims& d, const Strategy& st, std::vector<Op>& out, bool quantized_input) {
  if (st.tp == 1) return;
  const bool q = st.sp && quantized_input && d.num.gathers_quantized;
  if (q && d.num.amax_reduction) {
    Op amax = comm("tp_input_amax_all_reduce", OpKind::collective, Axis::tp,
                   CollectiveOp::all_reduce, std::nullopt, kAmaxBytes);
    recomputed(amax, d.per_op());
    out.push_back(amax);
  }
  Op op = st.sp ? comm("tp_all_gather", OpKind::collective, Axis::tp, CollectiveOp::all_gather,
                       CollectiveOp::reduce_scatter, (q ? d.num.q : d.e) * d.tokens * d.h)
                : comm("tp_input_grad_all_reduce", OpKind::collective, Axis::tp, std::nullopt,
                       CollectiveOp::all_reduce, d.e * d.tokens * d.h);
  if (q) op.backward_bytes = d.e * d.tokens * d.h;
  op.before_column_parallel = true;
  // (A frozen linear computes no weight gradient; LoRA's adapter keeps the gathered input.)
  op.backward_regather = st.sp && !d.frozen();
  op.userbuffers = st.sp;
  recomputed(op, st.sp && d.per_op());  // the gathered input is not kept
  out.push_back(op);
}

// Leaving a quantized linear (quantized_grad) whose output gradient is scaled by its amax
// (Numerics::amax_reduction), the backward all-reduces that amax over the TP group before
// it casts and all-gathers the gradient: one 4-byte all-reduce backward.
void tp_exit(const Dims& d, const Strategy& st, std::vector<Op>& out, bool quantized_grad = false) {
  if (st.tp == 1) return;
  if (st.sp) {
    Op op = comm("tp_reduce_scatter", OpKind::collective, Axis::tp, CollectiveOp::reduce_scatter,
                 CollectiveOp::all_gather, d.e * d.tokens * d.h);
    // torchao's tensorwise TP casts the output gradient before its all-gather
    // (Float8RowwiseParallel: NoopFwToFloat8BwDynamic after the redistribute).
    if (quantized_grad && d.num.gathers_quantized_grad)
      op.backward_bytes = d.num.q * d.tokens * d.h;
    op.userbuffers = true;
    out.push_back(op);
    if (quantized_grad && d.num.amax_reduction)
      out.push_back(comm("tp_grad_amax_all_reduce", OpKind::collective, Axis::tp, std::nullopt,
                         CollectiveOp::all_reduce, kAmaxBytes));
  } else {
    out.push_back(comm("tp_all_reduce", OpKind::collective, Axis::tp, CollectiveOp::all_reduce,
                       std::nullopt, d.e * d.tokens * d.h));
  }
}

// Eager PyTorch's casts of e-byte activations to fp32 and back around its fp32 math (e + 4
// bytes each way, none where they are fp32 already).
double eager_fp32_casts(const Dims& d) {
  return d.e < 4 ? 2 * (d.e + 4) : 0;
}

// Norm: read x, write y in bf16. Backward (apex/TE kernels): read x and dy, write dx, then a
// second pass over x and dy for the weight (and bias) gradients. Feeding an FP8 or MXFP8
// linear, Transformer Engine's LayerNormLinear writes y quantized (q bytes) instead; before
// an NVFP4 one it writes bf16 and the linear's casts quantize it (Numerics::norm_fuses_cast).
// Eager PyTorch's RMSNorm (Software::eager_elementwise): at::rms_norm's composite path
// (aten/src/ATen/native/layer_norm.cpp), one kernel per ATen op, per element of e-byte
// activations: the upcast to fp32 (e + 4 where e < 4), pow (8), mean (4), the product with
// the inverse RMS (8) and with the weight (8), the cast back (4 + e): 40 B in bf16. Backward,
// each op's autograd formula: the two casts (4 + e each), the weight product and its
// reduction to the weight's gradient (8 + 16), the inverse-RMS product and its row reduction
// (8 + 16), mean's expanded gradient (4), pow's gradient (self^1, times 2, times the
// gradient: 28) and the sum of the two paths into the input (12): 104 B in bf16.
Op& eager_rms_norm(Op& op, const Dims& d, double elements) {
  op.eager_bytes = elements * (eager_fp32_casts(d) + 28);
  op.eager_backward_bytes = elements * (eager_fp32_casts(d) + 92);
  return op;
}

Op norm(const char* name, const Dims& d, bool fp8_out = false, bool rms = false) {
  const bool quantized = fp8_out && d.num.norm_fuses_cast;
  const double elements = d.tokens * d.h / d.sp_div;
  Op op = pass(name, elements, quantized ? 2 + d.num.q : 4 * d.w, 10 * d.w);
  if (rms) eager_rms_norm(op, d, elements);
  return op;
}

// Residual add, with bias and dropout fused (Megatron's bias_dropout_add): forward reads x
// and the residual, writes the sum and a one-byte mask; backward reads dy and the mask.
Op residual(const char* name, const Dims& d, bool dropout) {
  return pass(name, d.tokens * d.h / d.sp_div, 6 * d.w + (dropout ? 1 : 0),
              4 * d.w + (dropout ? 1 : 0));
}

// A linear's weight GEMM (its last op), frozen under LoRA: no weight gradient.
void frozen_linear(const Dims& d, std::vector<Op>& out) {
  out.back().frozen = d.frozen();
}

// Dropout on an adapter's input of `elements` (lora_dropout): read it, write the masked copy and
// a one-byte mask; backward, read the gradient and the mask, write the input's gradient, then
// add it into the gradient the input already has (read both, write the sum).
Op lora_dropout(const Dims& d, double elements) {
  return pass("lora_dropout", elements, 4 * d.w + 1, 4 * d.w + 1 + 6 * d.w);
}

// LoRA's adapter beside a linear (Megatron-Bridge's ParallelLinearAdapter, src/megatron/bridge/
// peft/utils.py, with LoRALinear adding its output to the linear's): x A B scaled by alpha / R,
// in 16 bits, on the T tokens the linear computes, with the tensor-parallel calls its two
// Megatron linears make (the adapter's own config runs without sequence parallelism).
// Beside a column-parallel linear (qkv, fc1; `k` inputs, `n_local` outputs here): A is
// column-parallel over the rank (R / tp columns here) with its output gathered (an all-gather
// of T x R forward, a split backward); without sequence parallelism its input gradient is
// all-reduced backward (T x h); under it Transformer Engine hands over the gathered norm output
// (return_layernorm_output_gathered), or, where userbuffers overlap the linear's all-gather,
// the adapter gathers it again itself; B column-parallel (n_local outputs), its T x R input
// gradient all-reduced backward.
// Beside a row-parallel linear (proj, fc2; `k` inputs here, h outputs), after its reduction:
// A row-parallel (k inputs here), its T x R output all-reduced forward; B column-parallel with
// its output gathered (an all-gather of T x h forward), then split back to the sequence shard
// under sequence parallelism (an all-gather of the gradient backward), its T x R input
// gradient all-reduced backward.
// Then the scale and the add: read the adapter's output, write it scaled, read it and the
// linear's output, write the sum (10 B an element in 16 bits); backward, the scale of the
// gradient (4 B).
void lora_adapter(const Dims& d, const Strategy& st, bool column, double k, double n_local,
                  std::vector<Op>& out) {
  const double r = d.lora, T = d.tokens;
  const bool tp = st.tp > 1;
  const DType type = d.num.other;
  if (column) {
    if (tp && st.sp) {
      // Under userbuffers the adapter gathers the norm's output itself (its T x h all-gather,
      // a reduce-scatter of the gradient back).
      Op gather = comm("lora_sequence_all_gather", OpKind::collective, Axis::tp,
                       CollectiveOp::all_gather, CollectiveOp::reduce_scatter, d.e * T * k);
      gather.needs_tp_comm_overlap = true;
      out.push_back(gather);
    }
    if (tp && !st.sp)
      out.push_back(comm("lora_a_input_grad_all_reduce", OpKind::collective, Axis::tp, std::nullopt,
                         CollectiveOp::all_reduce, d.e * T * k));
    // Where the norm's output is handed over ungathered, Transformer Engine's backward adds the
    // adapter's input gradient to its own (read both, write the sum: 6 B an element of the
    // rank's shard); handed over gathered, it drops it (TE since PR #1711), adding nothing.
    Op add = pass("lora_input_grad_add", T * k / d.sp_div, 0, 6 * d.w);
    add.needs_tp_comm_overlap = tp && st.sp;
    out.push_back(add);
    if (d.lora_dropout > 0) out.push_back(lora_dropout(d, T * k));
    out.push_back(gemm("lora_a", type, T, r / d.t, k));
    if (tp)
      out.push_back(comm("lora_a_all_gather", OpKind::collective, Axis::tp,
                         CollectiveOp::all_gather, std::nullopt, d.e * T * r));
  } else {
    if (d.lora_dropout > 0) out.push_back(lora_dropout(d, T * k));
    out.push_back(gemm("lora_a", type, T, r, k));
    if (tp)
      out.push_back(comm("lora_a_all_reduce", OpKind::collective, Axis::tp,
                         CollectiveOp::all_reduce, std::nullopt, d.e * T * r));
  }
  if (tp)
    out.push_back(comm("lora_b_input_grad_all_reduce", OpKind::collective, Axis::tp, std::nullopt,
                       CollectiveOp::all_reduce, d.e * T * r));
  out.push_back(gemm("lora_b", type, T, n_local, r));
  double added = T * n_local;
  if (!column && tp) {
    out.push_back(comm("lora_b_all_gather", OpKind::collective, Axis::tp, CollectiveOp::all_gather,
                       std::nullopt, d.e * T * d.h));
    // The gather along the last dimension ends in a concatenation (a copy of T x h); backward,
    // the split's contiguous copy of the rank's T x h / tp.
    out.push_back(pass("lora_gather_concat", T * d.h, 4 * d.w, 4 * d.w / d.t));
    if (st.sp)
      out.push_back(comm("lora_sequence_grad_all_gather", OpKind::collective, Axis::tp,
                         std::nullopt, CollectiveOp::all_gather, d.e * T * d.h));
    added = T * d.h / d.sp_div;
  }
  out.push_back(pass("lora_scale_add", added, 10 * d.w, 4 * d.w));
}

// Transformer Engine's casts around one FP8 linear (delayed scaling, Hopper's TN-only FP8
// GEMMs): forward, the bf16 input cast to FP8 with its transpose for the weight gradient
// (read 2, write 1 + 1 bytes per element), or, where a norm already wrote it in FP8, only the
// transpose, made in backward (read 1, write 1); backward, the output gradient cast to FP8
// with its transpose (read 2, write 1 + 1). Placed after the GEMM so that a collective
// before the GEMM still sees it as its neighbour. MXFP8 and NVFP4 (Blackwell) likewise write a
// row-wise and a column-wise copy (their scaling blocks run along one dimension), each q bytes
// per element with its scales: q = 1 for FP8, 1 + 1/32 for MXFP8, 1/2 + 1/16 for NVFP4.
// NVFP4 reads each tensor three times (Numerics::cast_reads: 6 bytes, not 2), and its norms
// do not fuse the cast: the input the norm wrote (norm_elements, its own sequence-parallel
// shard, quantized before the gather) is cast whole in forward.
// Where FP8 GEMMs take either layout (Blackwell), a cast writes one copy and nothing is
// transposed (Numerics::copies).
Op fp8_casts(const Numerics& n, const char* name, double inputs, double outputs,
             double norm_elements = 0) {
  const double cast = n.cast_reads + n.copies * n.q;  // read the 16-bit tensor, write the copies
  if (norm_elements > 0 && n.norm_fuses_cast)
    return pass(name, 1, 0, cast * outputs + (n.copies - 1) * 2 * n.q * inputs);
  return pass(name, 1, cast * (norm_elements > 0 ? norm_elements : inputs), cast * outputs);
}

// The casts around a frozen FP8 linear (LoRA): no column-wise copy of its input, which only a
// weight gradient reads (Transformer Engine quantizes it column-wise where backward_needs_input);
// the output gradient cast with `grad_copies` copies (TE's LayerNormLinear always casts it both
// ways, its Linear only where the layer has a bias). `norm_elements`: the norm's output this
// linear takes, quantized by the norm itself where `fused` (else cast here), or 0 where the
// input is cast whole here (`inputs`).
Op frozen_fp8_casts(const Numerics& n, const char* name, double inputs, double outputs,
                    double norm_elements, bool fused, double grad_copies) {
  const double fwd =
      fused ? 0 : (n.cast_reads + n.q) * (norm_elements > 0 ? norm_elements : inputs);
  return pass(name, 1, fwd, (n.cast_reads + grad_copies * n.q) * outputs);
}

// A linear's FP8 casts: as trained, or frozen (above). `layernorm`: TE's LayerNormLinear (qkv,
// fc1), whose norm quantizes its output unless an adapter takes that output (`adapted`: it is
// then written in 16 bits, gathered so and cast whole after the gather).
// torchao's casts around one float8 linear, each micro-batch (Numerics::torchao; the bytes per
// element in graph.cpp's torchao_numerics): its input (the sequence shard where a tensorwise
// input is cast before its all-gather), its output gradient and its weight, whose elements
// are the linear's inputs and outputs per token multiplied.
// `sharers`: the separate linears torchtitan's model has where this one is fused (wq, wk, wv:
// 3; w1, w3: 2), each of which casts the same input itself unless Inductor merges the casts or
// the input arrives already cast (Numerics::ao_shared_input_casts).
Op ao_casts(const Numerics::AoCasts& c, const char* name, double cast_in, double inputs,
            double outputs, double weights, double times) {
  return pass(name, 1, times * c.input_fwd * cast_in + c.weight_fwd * weights,
              times * c.input_bwd * inputs + c.grad_bwd * outputs + c.weight_bwd * weights);
}

Op torchao_casts(const Dims& d, const char* name, double inputs, double outputs,
                 double norm_elements, int sharers) {
  const Numerics& n = d.num;
  const double cast_in = n.gathers_quantized && norm_elements > 0 ? norm_elements : inputs;
  const double weights = inputs / d.tokens * (outputs / d.tokens);
  const double times = n.ao_shared_input_casts ? sharers : 1;
  Op op = ao_casts(n.ao, name, cast_in, inputs, outputs, weights, times);
  // Under the per-op policy the forward's casts run again with their GEMMs, but for the
  // tensorwise amax passes, whose aten.max the policy saves.
  return recomputed(op, d.per_op(), 1 - n.ao_saved_amax_share);
}

Op linear_fp8_casts(const Dims& d, const char* name, double inputs, double outputs,
                    double norm_elements, bool layernorm = false, bool adapted = false,
                    int sharers = 1) {
  if (d.num.torchao) return torchao_casts(d, name, inputs, outputs, norm_elements, sharers);
  if (!d.frozen()) return fp8_casts(d.num, name, inputs, outputs, norm_elements);
  const double copies = layernorm || d.bias ? d.num.copies : 1;
  if (adapted) return frozen_fp8_casts(d.num, name, inputs, outputs, 0, false, copies);
  return frozen_fp8_casts(d.num, name, inputs, outputs, norm_elements,
                          norm_elements > 0 && d.num.norm_fuses_cast, copies);
}

// The tokens a rank's experts compute, over the mean: the busiest expert's load factor.
// Under the all-to-all dispatcher (expert parallelism, or an expert TP degree of its own) each
// rank routes its own tokens: T/tp under sequence parallelism. Without it every TP rank routes
// all T tokens (after tp_enter's all-gather) and computes its slice of every expert.
// Under a stack that wraps the MoE layer in its TP collectives (Strategy::moe_tp_wrapped) every
// TP rank has all T tokens, and with etp=1 the experts' ranks split them over the TP group.
bool moe_dispatcher(const Strategy& st) {
  return !st.moe_tp_wrapped && (st.ep > 1 || st.expert_tp() != st.tp);
}

}  // namespace

double tokens_routed_by_rank(const Strategy& st, double tokens) {
  if (st.moe_tp_wrapped) return st.ep > 1 && st.expert_tp() == 1 ? tokens / st.tp : tokens;
  return moe_dispatcher(st) && st.tp > 1 ? tokens / st.tp : tokens;
}

double tokens_on_experts(const Model& m, const Strategy& st, double tokens) {
  const double local = tokens_routed_by_rank(st, tokens) * m.moe.top_k;
  // One rank holding every expert (ep = 1) computes the mean: imbalance only moves tokens
  // between ranks.
  const double load = st.ep > 1 ? m.moe.load_factor() : 1.0;
  return (moe_dispatcher(st) ? local * st.expert_tp() : local) * load;
}

namespace {

// A dense MLP of `ffn` hidden features split over TP, on all T tokens (after tp_enter).
void mlp_ops(const char* const names[4], const Dims& d, const Strategy& st, double ffn,
             Activation act, bool fp8, bool input_from_norm, std::vector<Op>& out,
             bool adapted = false) {
  const bool swiglu = act == Activation::swiglu;
  const double f_local = ffn / d.t;
  const double fc1_out = (swiglu ? 2 : 1) * f_local;
  // Per op: w1 kept and w3 recomputed (SwiGLU's fused fc1 is w1 and w3), w2 kept; a plain
  // MLP's w1 kept, w2 recomputed (matrix multiplies 5 and 6 of a layer).
  out.push_back(gemm(names[0], d.num.linear, d.tokens, fc1_out, d.h));
  // (After MLA's five: w1 recomputed, w3 kept, w2 recomputed.)
  const bool odd = d.odd_mm_parity;
  recomputed(out.back(), d.per_op(), per_op_share(d, swiglu ? 0.5 : odd ? 1 : 0));
  frozen_linear(d, out);
  if (fp8)
    out.push_back(linear_fp8_casts(d, names[2], d.tokens * d.h, d.tokens * fc1_out,
                                   input_from_norm ? d.tokens * d.h / d.sp_div : 0, input_from_norm,
                                   adapted && d.adapts(kLoraFc1), swiglu ? 2 : 1));
  if (adapted && d.adapts(kLoraFc1)) lora_adapter(d, st, true, d.h, fc1_out, out);
  // Squared ReLU reads and writes as GeLU does (read x, write y; backward read x and dy, write
  // dx).
  out.push_back(swiglu ? pass("swiglu", d.tokens * f_local, 6 * d.w, 10 * d.w)
                : act == Activation::relu2
                    ? pass("squared_relu", d.tokens * f_local, 4 * d.w, 6 * d.w)
                    : pass("bias_gelu", d.tokens * f_local, 4 * d.w, 6 * d.w));
  recomputed(out.back(), d.per_op());
  out.push_back(gemm(names[1], d.num.linear, d.tokens, d.h, f_local));
  recomputed(out.back(), d.per_op(), per_op_share(d, (swiglu != odd) ? 0 : 1));
  frozen_linear(d, out);
  if (fp8) out.push_back(linear_fp8_casts(d, names[3], d.tokens * f_local, d.tokens * d.h, 0));
}

// A mixture-of-experts MLP: route, dispatch over expert parallelism, the local experts, combine,
// with shared experts beside them.
// Without the dispatcher (ep = 1, etp = tp; or under tp_enter's all-gather), every TP rank
// routes all T tokens. With it, Megatron-core's all-to-all dispatcher (which needs sequence
// parallelism with tp > 1) has each TP rank route its own T/tp tokens, send them over the
// expert-parallel group and only then gather what arrived over the experts' TP group (etp) for
// its shard of the experts; combine is the reverse. Expert-parallel traffic is the rank's T/tp
// tokens, not all T (a TP group does not send the same tokens tp times); ETP moves the routed
// tokens instead. The busiest rank receives and computes load_factor() times the mean.
void moe_ops(const Model& m, const Strategy& st, const Dims& d, std::vector<Op>& out) {
  const bool dispatcher = moe_dispatcher(st);
  const int etp = st.expert_tp();
  const double f_local = static_cast<double>(m.expert_ffn()) / etp;
  const bool swiglu = m.activation == Activation::swiglu;
  const double load = st.ep > 1 ? m.moe.load_factor() : 1.0;
  const double local = tokens_routed_by_rank(st, d.tokens);  // tokens this rank routes
  const double routed_local = local * m.moe.top_k;
  const double routed = tokens_on_experts(m, st, d.tokens);  // what experts compute
  if (m.moe.shared_experts > 0) {
    // Shared experts: a dense MLP on every token, split over TP; under the dispatcher with
    // sequence parallelism it gathers its input and scatters its output itself.
    static const char* const names[4] = {"shared_expert_fc1", "shared_expert_fc2",
                                         "shared_expert_fc1_fp8_casts",
                                         "shared_expert_fc2_fp8_casts"};
    const bool own_tp = dispatcher && st.tp > 1;
    const size_t first = out.size();
    if (own_tp) tp_enter(d, st, out, false);
    mlp_ops(names, d, st, static_cast<double>(m.moe.shared_experts) * m.expert_ffn(), m.activation,
            d.num.quantized(), false, out);
    if (own_tp) tp_exit(d, st, out);
    if (d.recomputes(kRecomputeSharedExperts)) checkpointed(out, first);
  }
  const size_t routed_first = out.size();
  // (Wrapped in the TP collectives, the router runs on all the tokens, replicated.)
  const double scored = st.moe_tp_wrapped ? d.tokens : local;
  out.push_back(gemm("moe_router", d.num.other, scored, m.moe.experts, d.h));
  // The router's scores in fp32 (Megatron-core's moe_router_dtype fp32 in the performance
  // recipes): softmax or sigmoid, the top-k (within the best groups), the probabilities
  // gathered: the logits read, the scores written and read back, forward; backward alike.
  out.push_back(pass("moe_router_topk", scored * m.moe.experts, 12, 12));
  // Where the copies go, for a dispatcher that sends each token once per node and GPU.
  const Routing routing{m.moe.experts, m.moe.top_k, m.moe.groups, m.moe.group_top_k};
  out.push_back(comm("ep_dispatch", OpKind::collective, Axis::ep, CollectiveOp::all_to_all,
                     CollectiveOp::all_to_all, d.e * routed_local * load * d.h));
  out.back().routing = routing;
  const bool gather = dispatcher && etp > 1;
  if (gather) {
    Op g = comm("moe_tp_all_gather", OpKind::collective, Axis::etp, CollectiveOp::all_gather,
                CollectiveOp::reduce_scatter, d.e * routed * d.h);
    g.before_column_parallel = true;
    g.backward_regather = true;
    out.push_back(g);
  }
  // The copies that arrived, sorted into expert order for the grouped GEMMs (Megatron-core's
  // permute, fused or not: read and write each copy); backward, the gradient un-sorted alike.
  // In 16-bit units (d.w) per routed element: 2 bytes read, 2 written.
  out.push_back(pass("moe_permute", routed * d.h, 4 * d.w, 4 * d.w));
  const double local_experts = static_cast<double>(m.moe.experts) / st.ep;
  const double tokens_per_expert = routed * st.ep / m.moe.experts;
  const double fc1_out = (swiglu ? 2 : 1) * f_local;
  out.push_back(
      gemm("expert_fc1", d.num.experts(), tokens_per_expert, fc1_out, d.h, local_experts));
  out.back().per_expert_kernels = true;
  // Fused grouped GEMMs (Software::fused_grouped_mlp) take block-scaled SwiGLU experts: the
  // fc1 input's cast forward and fc2's output gradient's backward stay, the rest is in their
  // epilogues.
  const bool fusable = swiglu && (d.num.linear == DType::mxfp8 || d.num.linear == DType::nvfp4);
  // torchao's grouped GEMMs cast their operands themselves, each micro-batch: the routed
  // tokens and the weights of the rank's local experts.
  auto expert_casts = [&](const char* name, double in_f, double out_f) {
    if (!d.num.torchao) return fp8_casts(d.num, name, routed * in_f, routed * out_f);
    return ao_casts(d.num.ao_experts, name, routed * in_f, routed * in_f, routed * out_f,
                    local_experts * in_f * out_f, 1);
  };
  if (d.num.experts_quantized()) {
    out.push_back(expert_casts("expert_fc1_fp8_casts", d.h, fc1_out));
    if (fusable) {
      out.back().grouped_mlp_bytes = out.back().bytes;
      out.back().grouped_mlp_backward_bytes = 0;
    }
  }
  out.push_back(swiglu ? pass("expert_swiglu", routed * f_local, 6 * d.w, 10 * d.w)
                       : pass("expert_bias_gelu", routed * f_local, 4 * d.w, 6 * d.w));
  out.back().selective = d.recomputes(kRecomputeMoeAct);
  if (fusable) out.back().grouped_mlp_bytes = out.back().grouped_mlp_backward_bytes = 0;
  out.push_back(
      gemm("expert_fc2", d.num.experts(), tokens_per_expert, d.h, f_local, local_experts));
  out.back().per_expert_kernels = true;
  if (d.num.experts_quantized()) {
    out.push_back(expert_casts("expert_fc2_fp8_casts", f_local, d.h));
    if (fusable) {
      out.back().grouped_mlp_bytes = 0;
      out.back().grouped_mlp_backward_bytes = out.back().backward_bytes;
    }
  }
  if (gather)
    out.push_back(comm("moe_tp_reduce_scatter", OpKind::collective, Axis::etp,
                       CollectiveOp::reduce_scatter, CollectiveOp::all_gather, d.e * routed * d.h));
  // The experts' outputs un-sorted back into token order, scaled by their routing
  // probabilities and summed per token (unpermute: each copy read, each token written, 1/k of
  // a copy); backward, the token's gradient read, each copy's gradient written, and each
  // probability's gradient a dot product with the output it scaled (read once more).
  const double per_token = 1.0 / m.moe.top_k;
  out.push_back(
      pass("moe_unpermute", routed * d.h, 2 * d.w * (1 + per_token), 2 * d.w * (2 + per_token)));
  out.push_back(comm("ep_combine", OpKind::collective, Axis::ep, CollectiveOp::all_to_all,
                     CollectiveOp::all_to_all, d.e * routed_local * load * d.h));
  out.back().routing = routing;
  // torchtitan's per-op policy in an MoE layer: it saves the all-to-alls' outputs (and the
  // host's copy of the token counts), so nothing is sent again; the router's matrix multiply
  // (always recomputed: its policy excludes the gate), the top-k, the reorders and the experts'
  // grouped GEMMs (torch._grouped_mm is not in its save list) run again with their casts. The
  // shared experts alternate their matrix multiplies as a dense MLP's (mlp_ops).
  if (d.per_op())
    for (size_t i = routed_first; i < out.size(); ++i)
      if (out[i].kind != OpKind::collective) recomputed(out[i], true);
}

// Attention's core over the local heads: `qk` and `v` dims per head (MLA's differ).
void attention_core_ops(const Model& m, AttentionKernel kernel, const Dims& d, double qk, double v,
                        Window window, bool ring, std::vector<Op>& out) {
  const bool dropout = m.dropout > 0;
  const double heads_batch = d.b * d.q_local;
  // Score elements: each sequence's queries against its own keys (causal, per document).
  const double scores = d.q_local * d.squared_local;
  if (kernel == AttentionKernel::flash) {
    Op a;
    a.name = "flash_attention";
    a.kind = OpKind::attention;
    // QK^T and AV, causal: half of the score matrix is computed; a sliding or chunked window
    // skips the blocks outside it.
    // Ring context parallelism passes every K/V block around and masks: the whole square.
    const double kept = window == Window::full || ring
                            ? scores
                            : d.q_local * windowed_squared(m, window, d.tokens, d.squared_local);
    a.flops = 2 * kept * (qk + v) * 0.5;
    a.dtype = d.num.other;
    a.fp8_capable = d.num.quantized();
    // Keys per query over the square: the sequence length for fixed-length causal data, the
    // work-weighted mean document length (sum n^2 / sum n) for packed data, the window's span
    // under a window.
    a.attention_seq = d.tokens > 0 && d.q_local > 0 ? kept / (d.q_local * d.tokens) : 0;
    a.attention_head_dim = (qk + v) / 2;
    out.push_back(a);
  } else {
    Op qk_op = gemm("attention_qk", d.num.other, d.s_local, d.s, qk, heads_batch);
    qk_op.selective = d.recomputes(kRecomputeCoreAttn);
    qk_op.core_attention = true;
    out.push_back(qk_op);
    // Fused scale-mask-softmax: read and write the scores; backward reads y and dy, writes dx.
    Op softmax = pass("attention_softmax", scores, 4 * d.w, 6 * d.w);
    softmax.selective = d.recomputes(kRecomputeCoreAttn);
    softmax.core_attention = true;
    out.push_back(softmax);
    if (dropout) {
      Op drop = pass("attention_dropout", scores, 4 * d.w + 1, 4 * d.w + 1);
      drop.selective = d.recomputes(kRecomputeCoreAttn);
      drop.core_attention = true;
      out.push_back(drop);
    }
    Op av = gemm("attention_av", d.num.other, d.s_local, v, d.s, heads_batch);
    av.selective = d.recomputes(kRecomputeCoreAttn);
    av.core_attention = true;
    out.push_back(av);
  }
}

// Grouped-query attention: QKV, the core, context parallelism's exchanges, the projection.
void gqa_ops(const Model& m, const Strategy& st, AttentionKernel kernel, const Dims& d,
             Window window, std::vector<Op>& out) {
  const bool fp8 = d.num.quantized();
  const double qkv_out = (d.q_local + 2 * d.kv_local) * d.hd;
  out.push_back(gemm("qkv", d.num.linear, d.tokens, qkv_out, d.h));
  // Per op: wq and wv kept, wk recomputed (matrix multiplies 1-3 of a layer, fused here).
  recomputed(out.back(), d.per_op(), per_op_share(d, d.kv_local * d.hd / qkv_out));
  frozen_linear(d, out);
  if (fp8)
    out.push_back(linear_fp8_casts(d, "qkv_fp8_casts", d.tokens * d.h, d.tokens * qkv_out,
                                   d.tokens * d.h / d.sp_div, true, d.adapts(kLoraQkv), 3));
  if (d.adapts(kLoraQkv)) lora_adapter(d, st, true, d.h, qkv_out, out);
  // Per-head query and key norms (Qwen3): read and write Q and K.
  if (m.qk_norm) {
    const double elements = d.tokens * (d.q_local + d.kv_local) * d.hd;
    out.push_back(pass("qk_norm", elements, 4 * d.w, 10 * d.w));
    eager_rms_norm(out.back(), d, elements);
    recomputed(out.back(), d.per_op());
  }
  // Rotary embedding on Q and K. Fused (Transformer Engine's fused_apply_rotary_pos_emb, which
  // Megatron-core applies unless --no-rope-fusion): one kernel reads each element and writes it
  // rotated, the angles computed from a table per position; backward the same for the
  // gradient: 2e B an element each way. Eager PyTorch (torchtitan's apply_rotary_emb,
  // Software::eager_elementwise) casts each to fp32 (e + 4), multiplies it as complex numbers
  // by the frequencies (8) and casts back (4 + e), and its backward runs the same three
  // passes: 20 B an element each way in bf16.
  if (!m.learned_positions) {
    const double elements = d.tokens * (d.q_local + d.kv_local) * d.hd;
    Op rope = pass("rope", elements, 2 * d.e, 2 * d.e);
    rope.eager_bytes = rope.eager_backward_bytes = elements * (eager_fp32_casts(d) + 8);
    out.push_back(recomputed(rope, d.per_op()));
  }
  // Eager grouped-query attention through SDPA (torchtitan's repeat_kv): K and V expanded to
  // every query head and copied (reshape of an expanded view), read at their own size and
  // written at the queries'; backward sums the copies back, the same bytes.
  if (d.q_local > d.kv_local) {
    const double bytes = 2 * d.e * d.tokens * (d.kv_local + d.q_local) * d.hd;
    Op repeat = pass("repeat_kv", 0, 0, 0);
    repeat.eager_bytes = repeat.eager_backward_bytes = bytes;
    // Compiled, the copy stays (SDPA, an extern kernel, reads the expanded K and V), each
    // written once at the queries' size.
    repeat.compiled_bytes = repeat.compiled_backward_bytes = bytes;
    out.push_back(recomputed(repeat, d.per_op()));
  }
  // Ulysses: Q, K and V all-to-all'd from a sequence split to a head split (K and V heads
  // replicated up to cp where there are fewer); backward, their gradients back.
  const bool ulysses = st.cp > 1 && st.cp_kind == CpKind::ulysses;
  if (ulysses)
    out.push_back(
        comm("cp_ulysses_qkv_all_to_all", OpKind::collective, Axis::cp, CollectiveOp::all_to_all,
             CollectiveOp::all_to_all,
             d.e * d.tokens * (d.q_local + 2 * std::max(d.kv_local, static_cast<double>(st.cp))) *
                 d.hd));
  attention_core_ops(m, kernel, d, d.hd, d.hd, window, st.cp > 1 && st.cp_kind == CpKind::ring,
                     out);
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
  // (SDPA's output needs no copy before wo: the flash and memory-efficient kernels write it
  // (batch, sequence, heads, dim), so the model's transpose back makes it contiguous as is;
  // PyTorch's attention.cu.)
  out.push_back(gemm("attention_proj", d.num.linear, d.tokens, d.h, d.q_local * d.hd));
  recomputed(out.back(), d.per_op(), per_op_share(d, 1));  // wo, the fourth matrix multiply
  frozen_linear(d, out);
  if (fp8)
    out.push_back(linear_fp8_casts(d, "attention_proj_fp8_casts", d.tokens * d.q_local * d.hd,
                                   d.tokens * d.h, 0));
}

// Multi-head latent attention as Megatron-core runs it in training (the up projections
// materialised, not absorbed): the down projections run whole on each rank's own tokens
// (sequence-parallel shard), their latents are normed and all-gathered over TP (instead of
// the hidden states: (q_lora + kv_lora + rope) elements per token, not h), the up
// projections split the heads over TP, then the core and the output projection.
void mla_ops(const Model& m, const Strategy& st, AttentionKernel kernel, const Dims& d,
             Window window, std::vector<Op>& out) {
  const Mla& a = m.mla;
  const bool fp8 = d.num.quantized();
  // torchtitan's per-op policy (tp = 1) keeps every second matrix multiply in the order they
  // run: wq (or wq_a, wq_b), wkv_a, wkv_b, wo; the norms, the rotary step and K's assembly are
  // recomputed, attention's outputs kept (attention_core_ops).
  const int q_mms = a.q_lora_rank > 0 ? 2 : 1;
  auto per_op_mm = [&](int run_order) {
    recomputed(out.back(), d.per_op(), per_op_share(d, run_order % 2));
  };
  const double own = d.tokens / d.sp_div;  // tokens this rank holds before the gather
  const double qk = a.qk_head_dim(), v = a.v_head_dim;
  const double latent = a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim;
  if (a.q_lora_rank > 0) {
    out.push_back(gemm("mla_q_down", d.num.linear, own, a.q_lora_rank, d.h));
    per_op_mm(0);
    out.push_back(pass("mla_q_norm", own * a.q_lora_rank, 4 * d.w, 10 * d.w));
    recomputed(out.back(), d.per_op());
  }
  out.push_back(gemm("mla_kv_down", d.num.linear, own, a.kv_lora_rank + a.qk_rope_head_dim, d.h));
  per_op_mm(q_mms);
  if (fp8)
    out.push_back(fp8_casts(d.num, "mla_down_fp8_casts", own * d.h, own * latent, own * d.h));
  out.push_back(pass("mla_kv_norm", own * a.kv_lora_rank, 4 * d.w, 10 * d.w));
  recomputed(out.back(), d.per_op());
  if (st.tp > 1) {
    Op op = st.sp ? comm("mla_latent_all_gather", OpKind::collective, Axis::tp,
                         CollectiveOp::all_gather, CollectiveOp::reduce_scatter,
                         d.e * d.tokens * latent)
                  : comm("mla_latent_grad_all_reduce", OpKind::collective, Axis::tp, std::nullopt,
                         CollectiveOp::all_reduce, d.e * d.tokens * latent);
    op.before_column_parallel = true;
    out.push_back(op);
  }
  const double q_out = d.q_local * qk;
  const double q_in = a.q_lora_rank > 0 ? a.q_lora_rank : d.h;
  // The up projections, their casts and the rotary step: what recompute_modules=mla_up_proj
  // runs again in backward instead of keeping Q, K and V.
  const size_t up_first = out.size();
  // Without query compression the query projection is column-parallel over the hidden states:
  // they are gathered over TP as any such linear's input.
  if (a.q_lora_rank == 0) tp_enter(d, st, out, d.num.quantized());
  out.push_back(gemm("mla_q_up", d.num.linear, d.tokens, q_out, q_in));
  per_op_mm(q_mms - 1);
  const double kv_out = d.q_local * (a.qk_nope_head_dim + v);
  out.push_back(gemm("mla_kv_up", d.num.linear, d.tokens, kv_out, a.kv_lora_rank));
  per_op_mm(q_mms + 1);
  if (fp8)
    out.push_back(fp8_casts(d.num, "mla_up_fp8_casts", d.tokens * (a.q_lora_rank + a.kv_lora_rank),
                            d.tokens * (q_out + kv_out)));
  // Rotary embedding on the query's and the shared key's rotary parts, and K assembled from its
  // two parts (read the parts, write K).
  out.push_back(
      pass("mla_rope_and_k",
           d.tokens * (d.q_local * a.qk_rope_head_dim + d.q_local * qk + a.qk_rope_head_dim),
           4 * d.w, 4 * d.w));
  recomputed(out.back(), d.per_op());
  if (d.recomputes(kRecomputeMlaUpProj))
    for (size_t i = up_first; i < out.size(); ++i) out[i].selective = true;
  const bool ulysses = st.cp > 1 && st.cp_kind == CpKind::ulysses;
  if (ulysses)
    out.push_back(comm("cp_ulysses_qkv_all_to_all", OpKind::collective, Axis::cp,
                       CollectiveOp::all_to_all, CollectiveOp::all_to_all,
                       d.e * d.tokens * d.q_local * (2 * qk + v)));
  attention_core_ops(m, kernel, d, qk, v, window, st.cp > 1 && st.cp_kind == CpKind::ring, out);
  if (st.cp > 1 && st.cp_kind == CpKind::ring) {
    const double kv_bytes = d.e * d.tokens * d.q_local * (qk + v);
    out.push_back(comm("cp_ring_exchange", OpKind::ring, Axis::cp, CollectiveOp::send_recv,
                       CollectiveOp::send_recv, kv_bytes * (st.cp - 1)));
  }
  if (ulysses)
    out.push_back(comm("cp_ulysses_out_all_to_all", OpKind::collective, Axis::cp,
                       CollectiveOp::all_to_all, CollectiveOp::all_to_all,
                       d.e * d.tokens * d.q_local * v));
  out.push_back(gemm("attention_proj", d.num.linear, d.tokens, d.h, d.q_local * v));
  per_op_mm(q_mms + 2);
  if (fp8)
    out.push_back(
        fp8_casts(d.num, "attention_proj_fp8_casts", d.tokens * d.q_local * v, d.tokens * d.h));
}

// A Mamba-2 mixer as Megatron-core's MambaMixer runs it, split over TP by heads and groups:
// the input projection (z, x, B, C, dt), the depthwise convolution over x, B and C, the chunked
// scan (SSD), the gated RMSNorm, the output projection. Context parallelism trades the
// sequence split for a head split around the convolution and scan (all-to-alls, as Ulysses).
void mamba_ops(const Model& m, const Strategy& st, const Dims& d, std::vector<Op>& out) {
  const Mamba& s = m.mamba;
  const bool fp8 = d.num.quantized();
  const double in_local = (2 * s.inner() + 2.0 * s.groups * s.state + s.heads) / d.t;
  const double inner_local = s.inner() / d.t;
  out.push_back(gemm("mamba_in_proj", d.num.linear, d.tokens, in_local, d.h));
  if (fp8)
    out.push_back(fp8_casts(d.num, "mamba_in_proj_fp8_casts", d.tokens * d.h, d.tokens * in_local,
                            d.tokens * d.h / d.sp_div));
  const bool cp = st.cp > 1;
  if (cp)
    out.push_back(comm("cp_mamba_in_all_to_all", OpKind::collective, Axis::cp,
                       CollectiveOp::all_to_all, CollectiveOp::all_to_all,
                       d.e * d.tokens * in_local));
  // Causal depthwise convolution and its SiLU: read x, B, C and write them; backward reads the
  // input and the gradient, writes both gradients.
  out.push_back(pass("mamba_conv1d", d.tokens * s.conv_dim() / d.t, 4 * d.w, 8 * d.w));
  Op scan;
  scan.name = "mamba_ssd_scan";
  scan.kind = OpKind::attention;  // a fused kernel of its own FLOPs, priced as attention's
  scan.flops = mamba_scan_flops_per_token(m) * d.tokens / d.t;
  // ... and its HBM traffic, which outweighs its FLOPs at today's state sizes: the op takes the
  // longer of the two.
  scan.bytes = mamba_scan_bytes_per_token(m, false) * d.tokens / d.t;
  scan.backward_bytes = mamba_scan_bytes_per_token(m, true) * d.tokens / d.t;
  scan.dtype = d.num.other;
  out.push_back(scan);
  // Gated RMSNorm: read y and z, write the output; backward reads them and dy, writes dy, dz.
  out.push_back(pass("mamba_gated_norm", d.tokens * inner_local, 6 * d.w, 10 * d.w));
  if (cp)
    out.push_back(comm("cp_mamba_out_all_to_all", OpKind::collective, Axis::cp,
                       CollectiveOp::all_to_all, CollectiveOp::all_to_all,
                       d.e * d.tokens * inner_local));
  out.push_back(gemm("mamba_out_proj", d.num.linear, d.tokens, d.h, inner_local));
  if (fp8)
    out.push_back(
        fp8_casts(d.num, "mamba_out_proj_fp8_casts", d.tokens * inner_local, d.tokens * d.h));
}

// One layer: its mixer (attention or Mamba) and its MLP (or experts), each with its norm and
// residual, either one absent in a hybrid pattern's layers.
void block_ops(const Model& m, const Strategy& st, AttentionKernel kernel, const Dims& d,
               LayerKind kind, std::vector<Op>& out) {
  const bool dropout = m.dropout > 0;
  const bool fp8 = d.num.quantized();
  // An adapter beside qkv or fc1 takes the norm's output (LoRA): Transformer Engine then writes
  // it in 16 bits and gathers it so, not quantized, and runs that gather without userbuffers.
  const bool qkv_adapted = d.adapts(kLoraQkv), fc1_adapted = d.adapts(kLoraFc1);
  auto adapted_gather = [&](bool adapted) {
    if (adapted && st.tp > 1) out.back().userbuffers = false;
  };
  if (kind.mixer != Mixer::none) {
    out.push_back(norm("input_norm", d, fp8 && !qkv_adapted, m.rmsnorm));
    out.back().selective = d.recomputes(kRecomputeLayernorm) || d.per_op();
    if (kind.mixer == Mixer::mamba) {
      tp_enter(d, st, out, fp8);
      mamba_ops(m, st, d, out);
    } else if (m.is_mla()) {
      mla_ops(m, st, kernel, d, kind.window, out);
    } else {
      tp_enter(d, st, out, fp8 && !qkv_adapted);
      adapted_gather(qkv_adapted);
      gqa_ops(m, st, kernel, d, kind.window, out);
    }
    tp_exit(d, st, out, fp8);
    if (kind.mixer == Mixer::attention && !m.is_mla() && d.adapts(kLoraProj))
      lora_adapter(d, st, false, d.q_local * d.hd, d.h / d.t, out);
    if (m.post_norms) {
      out.push_back(norm("post_attention_norm", d, false, m.rmsnorm));
      out.back().selective = d.recomputes(kRecomputeLayernorm) || d.per_op();
    }
    out.push_back(
        residual(kind.mixer == Mixer::mamba ? "mamba_residual" : "attention_residual", d, dropout));
    recomputed(out.back(), d.per_op());
  }
  if (kind.ffn == Ffn::none) return;
  const bool moe_layer = kind.ffn == Ffn::moe;
  const bool dispatcher = moe_layer && moe_dispatcher(st);
  // A dense layer's norm runs inside its MLP module (Transformer Engine's LayerNormLinear as
  // fc1; an MoE layer's is a module of its own): recompute_modules=mlp checkpoints it with the
  // MLP, from the layer's residual stream on.
  const size_t mlp_first = out.size();
  out.push_back(norm("mlp_norm", d, fp8 && !moe_layer && !fc1_adapted, m.rmsnorm));
  out.back().selective = d.recomputes(kRecomputeLayernorm) || d.per_op();
  const size_t moe_first = out.size();
  // Under the dispatcher the experts move their tokens over TP themselves (moe_ops).
  if (!dispatcher) {
    tp_enter(d, st, out, fp8 && !moe_layer && !fc1_adapted);
    adapted_gather(fc1_adapted && !moe_layer);
  }
  if (!moe_layer) {
    static const char* const names[4] = {"mlp_fc1", "mlp_fc2", "mlp_fc1_fp8_casts",
                                         "mlp_fc2_fp8_casts"};
    mlp_ops(names, d, st, m.ffn_hidden, m.activation, fp8, true, out, true);
  } else {
    moe_ops(m, st, d, out);
  }
  if (!dispatcher) tp_exit(d, st, out, fp8 && !moe_layer);
  if (!moe_layer && d.adapts(kLoraFc2))
    lora_adapter(d, st, false, static_cast<double>(m.ffn_hidden) / d.t, d.h / d.t, out);
  if (!moe_layer && d.recomputes(kRecomputeMlp)) checkpointed(out, mlp_first);
  if (moe_layer && d.recomputes(kRecomputeMoe)) checkpointed(out, moe_first);
  if (m.post_norms) {
    out.push_back(norm("post_mlp_norm", d, false, m.rmsnorm));
    out.back().selective = d.recomputes(kRecomputeLayernorm) || d.per_op();
  }
  out.push_back(residual("mlp_residual", d, dropout));
  recomputed(out.back(), d.per_op());
  if (m.bias) {
    // Bias gradients: a reduction over the tokens of every biased linear's output gradient.
    const bool swiglu = m.activation == Activation::swiglu;
    double attention_out = 0;
    if (kind.mixer == Mixer::attention)
      attention_out =
          (m.is_mla() ? d.q_local * m.mla.qk_head_dim() : (d.q_local + 2 * d.kv_local) * d.hd) +
          d.h;
    const double f_local = static_cast<double>(moe_layer ? m.expert_ffn() : m.ffn_hidden) / st.tp;
    const double outputs =
        attention_out + (swiglu ? 2 : 1) * f_local * (moe_layer ? m.moe.top_k : 1) + d.h;
    out.push_back(pass("bias_grads", d.tokens * outputs, 0, d.e));
  } else if (m.qkv_bias && kind.mixer == Mixer::attention && !m.is_mla()) {
    // Biases on the query, key and value projections only (Qwen2): their gradient's reduction.
    out.push_back(pass("qkv_bias_grads", d.tokens * (d.q_local + 2 * d.kv_local) * d.hd, 0, d.e));
  }
}

}  // namespace

void layer_ops(const Model& m, const Strategy& st, AttentionKernel kernel, const MicroBatch& mb,
               LayerKind kind, std::vector<Op>& out) {
  block_ops(m, st, kernel, dims(m, st, mb), kind, out);
}

void embedding_ops(const Model& m, const Strategy& st, const MicroBatch& mb, std::vector<Op>& out) {
  const Dims d = dims(m, st, mb);
  const size_t first = out.size();
  // Vocab-parallel lookup writes the (partial) embeddings; backward scatters into the table.
  out.push_back(
      pass("embedding_lookup", d.tokens * d.h, (m.learned_positions ? 6 : 2) * d.w, 6 * d.w));
  tp_exit(d, st, out);
  // A frozen table (LoRA) takes no gradient, and nothing before it does: autograd runs none
  // of its backward.
  if (d.frozen())
    for (size_t i = first; i < out.size(); ++i) {
      if (out[i].kind == OpKind::memory) out[i].backward_bytes = 0;
      out[i].backward_op.reset();
    }
}

void head_ops(const Model& m, const Strategy& st, const MicroBatch& mb, std::vector<Op>& out) {
  const Dims d = dims(m, st, mb);
  out.push_back(norm("final_norm", d, false, m.rmsnorm));
  tp_enter(d, st, out, false);
  // Megatron's output layer is its own ColumnParallelLinear (GPTModel.output_layer), not a
  // Transformer Engine linear with a userbuffers name: its sequence-parallel all-gather runs
  // whole before the GEMM (its backward's re-gather and reduce-scatter stay asynchronous).
  if (st.tp > 1) out.back().userbuffers = false;
  const double v_local = static_cast<double>(m.vocab) / st.tp;
  // Under fp8 the head stays in 16 bits (Megatron's output layer is not a TE linear).
  out.push_back(gemm("lm_head", d.num.other, d.tokens, v_local, d.h));
  frozen_linear(d, out);
  // Vocab-parallel cross entropy in fp32, as Megatron's passes run: .float() (read 2, write
  // 4), max (4), sub_ (8), exp (8), sum (4), div_ (8); backward: softmax minus one-hot in
  // place (8) and the cast back to 16 bits (6).
  // A soft cap on the logits (Gemma-2): cap * tanh(logits / cap) in fp32 before the loss, read
  // and written forward (4 + 4), its gradient scaled by 1 - tanh^2 backward (read the capped
  // logits and the gradient, write it: 12).
  if (m.logit_softcap > 0) out.push_back(pass("logit_softcap", d.tokens * v_local, 8, 12));
  Op loss = pass("cross_entropy", d.tokens * v_local, 38, 14);
  // Transformer Engine's fused cross entropy (Software::cross_entropy te; transformer_engine/
  // pytorch/triton/cross_entropy.py): forward, online_softmax_kernel reads the 16-bit logits
  // for each row's max and sum, then cross_entropy_kernel reads them again and writes the
  // gradient over them (read e, read e and write e); backward, element_mul_kernel scales that
  // gradient by each token's loss gradient in place (read e, write e; Megatron keeps the loss
  // per token, so the multiply runs). A soft-capped head keeps the unfused passes (the kernels
  // take raw logits; Megatron-Bridge's Gemma recipes turn the fusion off).
  // Compiled (Software::cross_entropy compiled: torchtitan's cross_entropy_loss under
  // torch.compile, the upcast to fp32 inside it): forward, a reduction over each row of the
  // 16-bit logits for its max and another for the sum of exponentials (read e twice);
  // backward, one kernel reads the logits and writes the 16-bit gradient (read e, write e).
  if (m.logit_softcap <= 0) {
    loss.te_loss_bytes = d.tokens * v_local * 3 * d.e;
    loss.te_loss_backward_bytes = d.tokens * v_local * 2 * d.e;
    loss.compiled_bytes = d.tokens * v_local * 2 * d.e;
    loss.compiled_backward_bytes = d.tokens * v_local * 2 * d.e;
  }
  out.push_back(loss);
}

void mtp_ops(const Model& m, const Strategy& st, AttentionKernel kernel, const MicroBatch& mb,
             std::vector<Op>& out) {
  const Dims d = dims(m, st, mb);
  // The next tokens' embedding from the module's copy of the table (vocab-parallel), the norms
  // of it and of the main model's hidden state, and their concatenation projected back to h:
  // priced as a row-parallel linear of 2h inputs (the FLOPs of the projection, and one
  // reduce-scatter of h).
  embedding_ops(m, st, mb, out);
  out.push_back(norm("mtp_embedding_norm", d, false, m.rmsnorm));
  out.push_back(norm("mtp_hidden_norm", d, false, m.rmsnorm));
  tp_enter(d, st, out, false);
  out.push_back(gemm("mtp_projection", d.num.linear, d.tokens, d.h, 2 * d.h / d.t));
  tp_exit(d, st, out);
  block_ops(m, st, kernel, d, m.layer_kind(m.layers - 1), out);
  head_ops(m, st, mb, out);
}

}  // namespace shardcost
