#pragma once
// Workloads: what is trained, as a graph of the operators one device runs for one
// micro-batch. A producer (the built-in transformer, later ONNX, embedding tables) expands
// its model under a strategy's splits; pricing, memory, scheduling and search read graphs
// and never ask which producer made one.
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shardcost/hardware.h"
#include "shardcost/model.h"
#include "shardcost/strategy.h"

namespace shardcost {

enum class OpKind {
  gemm,        // Y[m x n] = X[m x k] W[k x n] (batch: independent copies)
  attention,   // fused attention: `flops` forward, its backward recomputes the scores
  memory,      // memory-bound pass: `bytes` forward, `backward_bytes` backward
  collective,  // `op` forward and `backward_op` backward over the group `axis`
  ring,        // ring exchange over `axis`: `bytes` in (ranks - 1) neighbour steps, hidden
               // behind the block's attention (context parallelism)
};

// The parallel group a communication operator runs over; the plan places it on ranks (etp:
// the experts' tensor-parallel group).
enum class Axis { tp, cp, ep, etp };

struct Op {
  const char* name = "";
  OpKind kind = OpKind::memory;
  GemmShape gemm;             // gemm (also the batched GEMMs of unfused attention)
  DType dtype = DType::bf16;  // gemm and attention: the type they compute in
  double flops = 0;           // attention, forward
  // attention: the sequence length its kernel's rate is read at (keys per query over the whole
  // square) and its head dimension; 0: the device's one figure (Mamba's scan).
  double attention_seq = 0, attention_head_dim = 0;
  double bytes = 0;           // memory: HBM bytes read and written forward; comm: buffer bytes
  double backward_bytes = 0;  // memory: HBM bytes backward; comm: the backward collective's
                              // buffer bytes where they differ from `bytes` (0: the same)
  // memory: the bytes forward and backward where the stack runs the pass as eager PyTorch
  // composites, one kernel per ATen op (Software::eager_elementwise); negative: as above.
  double eager_bytes = -1, eager_backward_bytes = -1;
  // memory: the bytes forward and backward where the experts' SwiGLU MLP runs as fused grouped
  // GEMMs (Software::fused_grouped_mlp), whose epilogues apply the activation and quantize its
  // output, and whose backward fuses the activation's gradient; negative: as above.
  double grouped_mlp_bytes = -1, grouped_mlp_backward_bytes = -1;
  // memory: the loss's bytes forward and backward under Transformer Engine's fused cross
  // entropy (Software::cross_entropy te); negative: not a loss it runs.
  double te_loss_bytes = -1, te_loss_backward_bytes = -1;
  // memory: the bytes forward and backward under torch.compile (Software::compile for a
  // layer's passes, Software::cross_entropy compiled for the loss): Inductor's fused kernels;
  // negative: the fused `bytes` (a layer's pass) or not a loss it compiles (the loss).
  double compiled_bytes = -1, compiled_backward_bytes = -1;
  std::optional<CollectiveOp> op;           // forward collective (none: identity)
  std::optional<CollectiveOp> backward_op;  // backward collective (none: identity)
  Axis axis = Axis::tp;
  bool selective = false;  // recomputed under selective recomputation (its module's)
  // The share of its forward that selective recomputation repeats (a fused QKV GEMM of which
  // torchtitan's per-op policy recomputes only wk's columns).
  double selective_share = 1;
  // Unfused attention's core (scores, softmax, dropout, values): what ring attention's K/V
  // exchange hides behind.
  bool core_attention = false;
  // Backward collective of a column-parallel linear's input: it can run behind the weight-
  // gradient GEMM of the next op (Software::async_tp_backward).
  bool before_column_parallel = false;
  // Sequence parallelism keeps only the local shard of a column-parallel linear's input, so
  // its backward all-gathers the input again for the weight gradient.
  bool backward_regather = false;
  // A sequence-parallel TP all-gather before a column-parallel linear or reduce-scatter after a
  // row-parallel one: what Transformer Engine's userbuffers can overlap with that linear's
  // GEMMs (Software::tp_comm_overlap).
  bool userbuffers = false;
  // The expert-parallel dispatch and combine: where their copies go (top_k 0: not routed).
  Routing routing;
  // A grouped GEMM over the local experts (gemm.batch of them): under a stack that runs one
  // kernel per expert (Software::grouped_gemm_per_expert) each pays its own launch.
  bool per_expert_kernels = false;
  // gemm: the weight is frozen (LoRA fine-tuning): the backward computes the input gradient
  // only, no weight gradient.
  bool frozen = false;
  // The op runs only under a stack that overlaps the sequence-parallel all-gathers with their
  // GEMMs (Software::tp_comm_overlap): LoRA's adapter then gathers its input itself, since
  // Transformer Engine hands over the gathered norm output only without userbuffers.
  bool needs_tp_comm_overlap = false;
  // attention: the run quantizes its linears, so a stack may compute attention in FP8 too
  // (Software::fp8_attention; Transformer Engine's fp8_dot_product_attention).
  bool fp8_capable = false;

  // Forward FLOPs (GEMMs and attention; memory passes and communication count none).
  double forward_flops() const;
};

// Backward of Y[m x n] = X[m x k] W[k x n]: the input gradient dX = dY W^T (m x k, inner n)
// and the weight gradient dW = X^T dY (k x n, inner m).
inline GemmShape dgrad_shape(const GemmShape& g) {
  return {g.m, g.k, g.n, g.batch};
}
inline GemmShape wgrad_shape(const GemmShape& g) {
  return {g.k, g.n, g.m, g.batch};
}

// A block: operators that run in order for one micro-batch (each depends on the one before,
// the block on the block before), with the parameters and activations it holds on a device.
struct Block {
  // Body blocks are the units a pipeline splits into stages; the others stay on the first
  // (input embedding) or the last stage (head and loss).
  enum class Pin { body, first_stage, last_stage };

  const char* name = "";
  Pin pin = Pin::body;
  int count = 1;  // consecutive identical copies (a transformer's layers)
  std::vector<Op> ops;
  // Parameters per device and copy: replicated over the data-parallel ranks (dense) or over
  // the expert-data-parallel ranks (expert).
  double dense_params = 0;
  double expert_params = 0;
  // Weights tied to the first-stage block's (an LM head sharing the input embedding): held
  // once where both sit on one stage; on different stages each holds a copy and their
  // gradients are all-reduced between the two stages.
  double tied_params = 0;
  // Frozen weights (LoRA fine-tuning): the block's parameters (tied ones too) take no gradient,
  // no optimizer state and no data-parallel reduction, but for adapter_params of them, the
  // adapters' own (counted in dense_params).
  bool frozen = false;
  double adapter_params = 0;
  // Of dense_params and expert_params, those of FP8 linears (precision=fp8): Transformer
  // Engine holds an FP8 copy and its transpose of each, cast once per step.
  double fp8_params = 0;
  // Parameter tensors per copy (weights, biases, norms: what a per-tensor ZeRO-3 gathers one
  // by one) and the largest one's parameters.
  int param_tensors = 1;
  double largest_tensor_params = 0;
  // Of them, the one-dimensional ones (biases, norm scales and shifts, per-head vectors, an
  // expert bias), their parameters and the largest one's: what DeepSpeed's ZeRO-3 keeps
  // whole on every rank below its persistence threshold (Software::zero3_persistence_params).
  int vector_tensors = 0;
  double vector_params = 0;
  double largest_vector_params = 0;
  // Activation bytes one copy keeps per micro-batch in flight until its backward, by
  // recomputation mode (index: Recompute); pinned blocks are not recomputed, but for one
  // whose layer follows selective recomputation (below).
  std::array<double, 3> kept_bytes{};
  // A pinned block holding a layer (a multi-token-prediction module) that selective
  // recomputation recomputes as it does the body's layers: its marked ops run again in
  // backward and kept_bytes[selective] is what it keeps then.
  bool follows_selective = false;
  // Bytes the block needs while it runs and frees after (the loss's fp32 logits).
  double working_bytes = 0;
  // The same under Transformer Engine's fused cross entropy (Software::cross_entropy te), which
  // writes the gradient into the 16-bit logits; negative: as working_bytes.
  double te_loss_working_bytes = -1;
};

struct Graph {
  std::vector<Block> blocks;  // execution order of the forward pass
  // Bytes of the activation that crosses a pipeline-stage boundary per micro-batch, as each
  // tensor-parallel rank holds it before any split.
  double boundary_bytes = 0;

  // Clears the graph for reuse, keeping its allocations (search rebuilds graphs often).
  void reset(size_t blocks_count);
  int body_units() const;
};

// The sequences of one micro-batch on one data-parallel rank, before any context-parallel
// split: how many, their tokens, and the sum of their squared lengths (what causal attention
// over each sequence, as varlen kernels compute it, grows with). Fixed-length batches are mbs
// sequences of the model's length; packed variable-length ones are any mix (docs/variable-
// length.md).
struct MicroBatch {
  double sequences = 0;
  double tokens = 0;
  double squared = 0;  // sum of length^2
  // The attention work its kernels do, in squared tokens: the sum of attention_work() over
  // its sequences, tiles counted whole (0: not counted; `squared` stands in).
  double attention = 0;
};

// A model family's producer of graphs. Implementations: transformer_workload(), mlp_workload().
class Workload {
 public:
  virtual ~Workload() = default;
  virtual const std::string& name() const = 0;
  virtual double parameters() const = 0;
  // Model FLOPs per step for a global batch of samples (forward and backward, no
  // recomputation), as the family's papers count them: the numerator of MFU.
  virtual double model_flops(int global_batch) const = 0;
  // The same for what the strategy trains: under LoRA (Strategy::lora) the frozen weights'
  // gradients are not computed, and the adapters' FLOPs are added. Default: model_flops.
  virtual double trained_flops(const Strategy& s) const { return model_flops(s.gbs); }
  virtual double tokens_per_sample() const = 0;  // sequence length (1: not a sequence model)
  virtual int layers() const = 0;                // body units a pipeline splits
  // Why the strategy's splits (tp, cp, ep, ...) do not apply to this model, or nullopt.
  virtual std::optional<std::string> check(const Strategy&) const = 0;
  // The graph of one micro-batch on one device under the strategy's splits (check() passed):
  // mbs sequences of tokens_per_sample(), or the micro-batch given.
  void graph(const Strategy& s, AttentionKernel kernel, Graph& out) const {
    graph_of(s, kernel, fixed_micro_batch(s), out);
  }
  virtual void graph_of(const Strategy&, AttentionKernel, const MicroBatch&, Graph& out) const = 0;
  MicroBatch fixed_micro_batch(const Strategy& s) const {
    const double n = tokens_per_sample();
    return {static_cast<double>(s.mbs), s.mbs * n, s.mbs * n * n};
  }
  // Model FLOPs per step of a global batch of `tokens` tokens whose lengths' squares add up to
  // `squared` (variable-length batches; the fixed-length model_flops() is its special case).
  virtual double model_flops_of(double tokens, double squared) const = 0;
  // Search space: split sizes the model admits.
  virtual std::vector<int> tp_candidates(int max_tp) const = 0;
  virtual std::vector<int> cp_candidates(int max_cp) const = 0;
  virtual std::vector<int> ep_candidates() const = 0;
  // Whether selective recomputation differs from none with this attention kernel.
  virtual bool has_selective_recompute(AttentionKernel, unsigned modules) const = 0;
};

// What a strategy's precision computes in: its linear GEMMs, everything else (attention, the
// LM head, the memory-bound passes: 16 bits under fp8, mxfp8 and nvfp4, as Transformer Engine
// runs them), the bytes of one activation element, and of one quantized operand element with
// its scales (q).
struct Numerics {
  DType linear = DType::bf16;
  DType other = DType::bf16;
  double element_bytes = 2;
  double q = 2;
  // Transformer Engine's quantizers, per 16-bit element they cast: the bytes they read
  // (cast_reads; weight_cast_reads for the weights' once-a-step cast) and whether the norm
  // before a linear writes its input quantized in the same kernel (norm_fuses_cast). FP8 and
  // MXFP8 read once and fuse; NVFP4 (TE's NVFP4BlockScaling recipe) reads an activation or
  // gradient three times: its amax before and after the random Hadamard transform, the
  // row-wise cast, the column-wise Hadamard cast; a weight twice (amax, one 2D cast); and
  // its norms write 16 bits first (docs/estimator.md, "What NVFP4's casts read").
  // FP8 under current scaling (Strategy::fp8_current_scaling) reads each tensor twice, its
  // amax in a pass of its own and then the cast, and its norms write 16 bits first, as
  // NVFP4's do (TE's layernorm_fwd and activation helpers: "compute amax first and then
  // quantize").
  double cast_reads = 2;
  double weight_cast_reads = 2;
  bool norm_fuses_cast = true;
  // The quantizer scales by the amax of the whole tensor taken just before the cast (FP8
  // current scaling; NVFP4's per-tensor scale), so a sequence-parallel input quantized before
  // its all-gather, and an output gradient before the backward's, first all-reduces its
  // amax over the TP group (TE's with_amax_reduction, set for a column-parallel linear's input
  // and a row-parallel one's output gradient under sequence parallelism).
  bool amax_reduction = false;
  // The quantized copies a cast writes: a row-wise one and a column-wise one for the weight
  // gradient (2), or one where per-tensor FP8 GEMMs take either layout (Blackwell FP8:
  // Strategy::fp8_any_layout). MXFP8 and NVFP4 scale along one dimension: always 2.
  double copies = 2;
  // A linear keeps its input for the weight gradient quantized (Transformer Engine's cast
  // copy; torchao's tensorwise float8 under torch.compile, whose partitioner saves the float8
  // input) or in 16 bits (torchao's eager autograd function saves the 16-bit input and casts
  // it again backward; its rowwise recipe casts it along the other axis there).
  bool keeps_quantized_input = true;
  // A sequence-parallel input quantized before its all-gather, which moves q bytes an element
  // (Transformer Engine; torchao's tensorwise Float8ColwiseParallel); false: gathered in 16
  // bits (torchao's rowwise recipe: "all distributed communication is done in high precision").
  bool gathers_quantized = true;
  // torchao's Float8Linear (Strategy::torchao) casts every operand of every GEMM itself, the
  // weights too, each micro-batch: the bytes its casts read and write per element of a linear's
  // input, its output gradient and its weight, forward and backward (transformer_ops.cpp,
  // torchao_casts; docs/estimator.md, "torchtitan's float8 and torch.compile").
  struct AoCasts {
    double input_fwd = 0, input_bwd = 0, grad_bwd = 0, weight_fwd = 0, weight_bwd = 0;
  };
  bool torchao = false;
  AoCasts ao;
  // torchtitan's routed experts under torchao: 16-bit grouped GEMMs (torch._grouped_mm) unless
  // its grouped-GEMM converter quantizes them (ao_quantized_experts), then torchao's rowwise
  // float8 or MXFP8 casts around torch._scaled_grouped_mm (ao_experts, per element as ao).
  bool ao_quantized_experts = false;
  AoCasts ao_experts;
  // Each of the separate linears a fused one stands for (wq, wk, wv) casts the shared input
  // itself: eager torchao without tensor parallelism (compiled, Inductor merges the casts;
  // under torchao's float8 TP the input arrives cast once).
  bool ao_shared_input_casts = false;
  // Of a forward cast's bytes, the amax pass's (tensorwise: torch.max over the whole tensor),
  // whose output torchtitan's per-op policy saves, so a recomputation skips it.
  double ao_saved_amax_share = 0;
  // The per-op policy recomputes every float8 GEMM (TorchaoFloat8::sac_saves_scaled_mm off).
  bool ao_recomputes_every_gemm = false;
  // A row-parallel linear's output gradient is cast before its sequence-parallel all-gather,
  // which moves q bytes an element (torchao's tensorwise TP).
  bool gathers_quantized_grad = false;
  // The linears' operands are quantized (fp8, mxfp8, nvfp4): Transformer Engine casts them.
  bool quantized() const { return is_quantized(linear); }
  // The routed experts' grouped GEMMs: in the linears' type, but in 16 bits where torchao
  // leaves them so.
  bool experts_quantized() const { return quantized() && (!torchao || ao_quantized_experts); }
  DType experts() const { return experts_quantized() ? linear : other; }
  // The bytes an element of a linear's input kept for its weight gradient takes.
  double kept_input_bytes() const {
    return quantized() && keeps_quantized_input ? q : element_bytes;
  }
  // ... of a routed expert's input: torchao's grouped GEMMs save their 16-bit operands.
  double expert_kept_input_bytes() const { return torchao ? element_bytes : kept_input_bytes(); }
};
Numerics numerics(const Strategy&);

std::unique_ptr<Workload> transformer_workload(const Model&);

// A stack of fully connected layers, each a Megatron-style pair: a column-parallel up
// projection, an activation and a row-parallel down projection back to `width`.
struct MlpSpec {
  std::string name = "mlp";
  int width = 0;              // input and output features of every pair
  std::vector<int> hidden;    // the up projection's features, one per pair
  int tokens_per_sample = 1;  // rows per sample (1: a plain batch of vectors)
};
std::unique_ptr<Workload> mlp_workload(const MlpSpec&);

}  // namespace shardcost
