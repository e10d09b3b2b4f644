#pragma once
// How work is split and run: the strategy (parallel sizes, batch, schedule, recomputation,
// ZeRO) and the software stack that runs it. Both are independent of the model family.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardcost/hardware.h"

namespace shardcost {

// How a ZeRO-3 stack issues its parameter gathers: one per layer (Megatron-core's FSDP,
// PyTorch FSDP2: a transformer block's parameters flattened into one all-gather) or one per
// parameter tensor (DeepSpeed's ZeRO-3 of 2021).
enum class ShardedCalls { per_layer, per_tensor };

// Kernels a stack has for attention: fused (FlashAttention) or the unfused softmax path.
enum class AttentionKernel { flash, standard };

// How a stack moves routed tokens to their experts. alltoall: one copy per (token, expert)
// through an all-to-all (Megatron-core's alltoall dispatcher, NCCL). flex: DeepEP's and
// HybridEP's hierarchical dispatch (Megatron-core's flex dispatcher): a token crosses the
// network once per destination node and NVLink once per destination GPU, whatever number of
// its experts sit there; combine returns the same way, reduced per node.
enum class EpDispatcher { alltoall, flex };
std::string_view to_string(EpDispatcher);
EpDispatcher parse_ep_dispatcher(std::string_view);  // throws InputError

// How a stack computes the language-model loss over the vocabulary-parallel logits. unfused:
// Megatron's VocabParallelCrossEntropy, one PyTorch op a pass in fp32 (Megatron-core's
// default, cross_entropy_loss_fusion off). te: Transformer Engine's Triton kernels
// (parallel_cross_entropy, TE 2.2 on; Megatron-core's cross_entropy_fusion_impl "te"): an
// online softmax over the 16-bit logits, then one pass that writes the gradient into them.
// compiled: the loss under torch.compile (torchtitan compiles its cross entropy with the
// model, compile.components "loss"): the fp32 upcast fused into Inductor's reductions over the
// 16-bit logits, and one kernel backward that writes the 16-bit gradient beside them.
enum class CrossEntropy { unfused, te, compiled };
std::string_view to_string(CrossEntropy);
CrossEntropy parse_cross_entropy(std::string_view);  // throws InputError

// How torchao's float8 training scales a linear's operands (torchtitan's [quantize.linear.float8]
// recipe_name; torchao/float8/config.py). tensorwise: one scale per tensor from its amax,
// e4m3 forward and e5m2 gradients (torchtitan's default until 2026-04). rowwise: a scale per
// row along each GEMM's inner dimension, e4m3 throughout, so each operand is cast along both
// of its axes (torchtitan's only recipe since 2026-04).
enum class Float8Recipe { tensorwise, rowwise };
std::string_view to_string(Float8Recipe);
Float8Recipe parse_float8_recipe(std::string_view);  // throws InputError

// The kernel torchao's MXFP8 linears cast along a tensor's first dimension with (torchtitan's
// mxfp8_dim1_cast_kernel_choice; torchao/prototype/mx_formats/config.py): triton or cuda, a
// kernel of its own that reads the 16-bit tensor once and writes the transposed MXFP8 copy
// with its scales; torch, a transposed 16-bit copy first and then the dim-0 cast.
enum class MxDim1Cast { triton, cuda, torch };
std::string_view to_string(MxDim1Cast);
MxDim1Cast parse_mx_dim1_cast(std::string_view);  // throws InputError

// torchao's float8 linears as a strategy runs them (Software::torchao_float8): set by
// with_precision from the stack, never a key. active: precision=fp8 under torchao; compiled:
// the casts fused by torch.compile (Software::compile); weight_gather: FSDP2 gathers the
// float8 linears' weights in float8 (Software::float8_all_gather, tensorwise only).
// mx: precision=mxfp8 through torchao's MXLinear (Blackwell), whose dim-1 casts take
// mx_dim1_torch's path where Software::mx_dim1_cast is torch; experts: the routed experts'
// grouped GEMMs quantized too (Software::quantize_experts), else in 16 bits.
struct TorchaoFloat8 {
  bool active = false;
  Float8Recipe recipe = Float8Recipe::tensorwise;
  bool compiled = false;
  bool weight_gather = false;
  bool sac_saves_scaled_mm = false;  // Software::sac_saves_scaled_mm
  bool mx = false;
  bool mx_dim1_torch = false;
  bool experts = false;
  bool tp_styles = true;  // Software::float8_tp
};

// The linears of a transformer layer that LoRA adapts (Strategy::lora_targets): the fused
// query-key-value projection and the attention's output projection (column- and row-parallel),
// the MLP's two (column- and row-parallel). Megatron-Bridge's LoRA targets all four by default
// (src/megatron/bridge/peft/lora.py, target_modules).
enum LoraTarget : unsigned {
  kLoraQkv = 1,
  kLoraProj = 2,
  kLoraFc1 = 4,
  kLoraFc2 = 8,
  kLoraAll = 15,
};

enum class Recompute { none, selective, full };
std::string_view to_string(Recompute);
// What recompute=selective recomputes (Megatron-core's --recompute-modules): attention's core
// (Korthikanti et al.'s, the default), the norms, MLA's up projections, the experts'
// activation function, a dense layer's whole MLP, an MoE layer whole, its shared experts.
// Bits of Strategy::recompute_modules.
enum RecomputeModule : unsigned {
  kRecomputeCoreAttn = 1,
  kRecomputeLayernorm = 2,
  kRecomputeMlaUpProj = 4,
  kRecomputeMoeAct = 8,
  // torchtitan's per-op policy (activation_checkpoint mode "selective", option "op", its
  // default): every op's output is recomputed except matrix multiplies (every second one of a
  // layer's recomputed: wk, wo, w3 of wq wk wv wo w1 w3 w2), attention's outputs and the
  // reduce-scatters. Alone, on dense attention layers.
  kRecomputeOps = 16,
  // Megatron-core's checkpointed modules (normal checkpointing: the module's input kept,
  // everything inside it run again before its backward, communication included). "mlp": a
  // dense layer's MLP with the norm Transformer Engine fuses into its first linear
  // (TransformerLayer's recompute_mlp, dense layers only); "moe": an MoE layer from its router
  // to the combine, shared experts too (MoELayer's moe_layer_recompute); "shared_experts": the
  // shared experts alone.
  kRecomputeMlp = 32,
  kRecomputeMoe = 64,
  kRecomputeSharedExperts = 128,
};

// How the sequences of a variable-length global batch are spread over the data-parallel
// ranks (docs/variable-length.md): as drawn (equal counts), equal counts dealt longest first,
// longest first to the rank with the fewest tokens, or with the least priced work.
enum class Balance { none, count, tokens, cost };
std::string_view to_string(Balance);

// How context parallelism splits attention: ring (K/V blocks passed around the CP ranks,
// behind the attention in hand) or Ulysses (all-to-alls that trade the sequence split for a
// head split before attention and back after it; heads per TP rank must divide by cp).
enum class CpKind { ring, ulysses };
std::string_view to_string(CpKind);

// The pipeline schedule: Megatron's 1F1B (interleaved when vpp > 1), or DeepSeek-V3's DualPipe
// (Liu et al. 2024, Sec. 3.2.1): micro-batches fed from both ends, each device holding two
// stages (i and pp-1-i), a forward and a backward chunk overlapped so that expert-parallel
// all-to-alls and pipeline sends hide behind compute, the backward split into input and weight
// gradients to fill the bubble. Or local updates (Laskin et al. 2020, "Parallel Training of
// Deep Networks with Local Updates"): every stage but the last trains on its own auxiliary
// loss (a copy of the model's head), so no gradient crosses a stage boundary, no stage waits
// for a later one's backward and nothing flushes at a step's end.
enum class PipeSchedule { one_f_one_b, dualpipe, local };
std::string_view to_string(PipeSchedule);

// How data-parallel replicas agree (issue 39): sync, every step (what every stack runs);
// async:S, each replica applies its update without waiting for the others' gradients, which
// may be up to S updates stale (stale-synchronous parallel; Hsu et al., "Parallel Online
// Learning", 2011); local:H, each replica trains alone and the replicas average their
// parameters every H steps (local SGD). Both change what is trained, which is not priced.
enum class DpSync { sync, async, local };

// Context parallelism of one size (fixed), or sized per sequence on variable-length data:
// dynamic (Megatron's: each sequence on the smallest CP group that holds it, the sizes one
// after another) or flex (FlexSP's: groups of different sizes side by side in one step).
enum class CpMode { fixed, dynamic, flex };
std::string_view to_string(CpMode);

struct Strategy {
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, mbs = 1, gbs = 0, vpp = 1;
  // etp=N: the experts' own tensor-parallel degree (Megatron-core's expert tensor parallelism,
  // "MoE parallel folding"): expert layers split the ranks of a stage's tp*cp*dp into etp
  // (innermost), ep, and expert data parallelism. 0: the attention's tp.
  int etp = 0;
  int expert_tp() const { return etp > 0 ? etp : tp; }
  // Ranks that hold the same experts: a stage's ranks over ep*etp.
  int expert_dp() const { return tp * cp * dp / std::max(1, ep * expert_tp()); }
  Recompute recompute = Recompute::none;
  // offload=N: the activations of the first N layers go to host memory after their forward
  // and come back before their backward (Megatron-core's --cpu-offloading-num-layers,
  // Transformer Engine's CPU offload context); Megatron runs it without pipelining or
  // recomputation, and for fewer layers than the model has.
  int offload = 0;
  bool sp = false;
  int zero = 0;
  // zero_layers=...: per-layer sharding (OSDP, Jiang et al., IJCAI'23), one mark per parameter
  // unit in model order: the embedding (the first stage's blocks), each body layer, the head
  // (the last stage's blocks). 0: replicated over the data-parallel group under `zero` (0-2);
  // k >= 1: sharded ZeRO-3 style and gathered in k slices (operator splitting lowers the
  // gathered peak). Empty: every unit under `zero`. Text: s, r, s4, runs as rx30 or s2x3,
  // joined by / ("s/rx30/s").
  std::vector<int> zero_layers;
  // Whether zero_layers shards some units and replicates others (not one uniform stage).
  bool zero_layers_mixed() const {
    return std::any_of(zero_layers.begin(), zero_layers.end(), [](int m) { return m == 0; }) &&
           std::any_of(zero_layers.begin(), zero_layers.end(), [](int m) { return m > 0; });
  }
  // Variable-length data only: the balance of sequences over data-parallel ranks, and a token
  // budget per micro-batch (0: mbs sequences per micro-batch).
  Balance balance = Balance::none;
  int max_tokens = 0;
  // cp=dynamic|flex,cp_max=C: context parallelism sized per sequence, up to cp = C, each
  // sequence on a power-of-two CP group whose GPUs hold at most max_tokens of it.
  CpMode cp_mode = CpMode::fixed;
  bool cp_per_sequence() const { return cp_mode != CpMode::fixed; }
  CpKind cp_kind = CpKind::ring;
  PipeSchedule schedule = PipeSchedule::one_f_one_b;  // schedule=1f1b|dualpipe
  // dp_sync=async:S | local:H; dp_sync_steps is S (the staleness bound, in updates) or H (the
  // averaging period, in steps).
  DpSync dp_sync = DpSync::sync;
  int dp_sync_steps = 0;
  // ep_overlap=true: Megatron-core's --overlap-moe-expert-parallel-comm (1F1B all-to-all
  // overlap): one micro-batch's forward runs beside another's backward, so each expert-parallel
  // all-to-all runs behind the other's compute, less the SMs its kernels take.
  bool ep_overlap = false;
  // lora=R: LoRA fine-tuning (Hu et al. 2021) as Megatron-Bridge runs it: every weight of the
  // model frozen (no weight-gradient GEMMs, gradients or optimizer state for them), and beside
  // each linear lora_targets names a trainable adapter of rank R, x A B scaled by alpha / R
  // (ParallelLinearAdapter). 0: every weight trained. lora_targets: LoraTarget bits (0: all
  // four linears of a layer). Dense transformer layers only (Workload::check).
  int lora = 0;
  unsigned lora_targets = 0;
  // lora_dropout=P: dropout on each adapter's input (Bridge's "pre" position; its default 0,
  // the MLPerf reference's 0.1): a masked copy the adapter keeps, and its mask.
  double lora_dropout = 0;
  unsigned lora_linears() const {
    return lora > 0 ? (lora_targets != 0 ? lora_targets : kLoraAll) : 0;
  }
  // recompute_modules=core_attn/layernorm/mla_up_proj/moe_act/mlp/moe/shared_experts with
  // recompute=selective; 0: the default (core_attn).
  unsigned recompute_modules = 0;
  unsigned selective_modules() const {
    return recompute == Recompute::selective
               ? (recompute_modules != 0 ? recompute_modules : kRecomputeCoreAttn)
               : 0;
  }
  // layers=a/b/c/...: transformer layers per pipeline stage, summing to the model's; the first
  // or last stage may hold none (only the embedding or the head). With vpp, each stage's
  // layers split into vpp chunks as evenly as they go. Empty: the default split.
  std::vector<int> stage_layers;
  // stage_tp=a/b/c/...: each pipeline stage's tensor-parallel degree (every replica of it), in
  // rank order; tp is the first stage's. Empty: tp for every stage. The activation is
  // resharded between stages of different degrees.
  std::vector<int> stage_tp;
  int tp_of_stage(int stage) const {
    return stage_tp.empty() ? tp : stage_tp[static_cast<size_t>(stage)];
  }
  // precision=fp32|tf32|fp16|bf16|fp8: the type the linear layers compute in (fp8: Transformer
  // Engine's FP8 GEMMs with bf16 attention and head; fp32/tf32: full-precision training).
  // Unset: the software preset's (resolved_precision). rank pins it, never searches it.
  std::optional<DType> precision;
  // precision=fp32 with the stack's fp32 matmuls on TF32 tensor cores, on devices that have
  // them (Software::tf32_matmul): set by with_precision, never a key.
  bool tf32_math = false;
  // precision=fp8 on devices whose FP8 GEMMs take either operand layout (Blackwell, compute
  // capability 10.x and 11.x: Transformer Engine's is_non_tn_fp8_gemm_supported), where TE
  // keeps one FP8 copy of a tensor and no transpose: set by with_precision, never a key.
  bool fp8_any_layout = false;
  // precision=fp8 under a stack that scales each FP8 tensor by its own amax, taken just before
  // the cast (Software::fp8_current_scaling): set by with_precision, never a key.
  bool fp8_current_scaling = false;
  // The MoE layer inside the stack's tensor-parallel collectives (Software::moe_tp_wrapped):
  // set by with_precision, never a key.
  bool moe_tp_wrapped = false;
  // Quantized training under a stack that keeps the experts' SwiGLU inputs for the backward in
  // the quantized type (Software::quantized_moe_act_input): set by with_precision, never a key.
  bool quantized_moe_act_input = false;
  // precision=fp8 through torchao's Float8Linear (torchtitan): set by with_precision.
  TorchaoFloat8 torchao;
  // Saturating at 2^40 GPUs: sizes read from a file may be anything up to INT_MAX each.
  int64_t gpus() const {
    constexpr int64_t cap = int64_t{1} << 40;
    // The ranks of one data-parallel replica across the pipeline.
    int64_t p = int64_t{tp} * pp;
    if (!stage_tp.empty()) {
      p = 0;
      for (int t : stage_tp) p = std::min(cap + 1, p + t);
    }
    if (p > cap) return cap;
    for (int x : {dp, cp}) {
      p *= x;
      if (p > cap) return cap;
    }
    return p;
  }
  int micro_batches() const { return static_cast<int>(gbs / (int64_t{mbs} * dp)); }
};
std::string to_string(const Strategy&);
// "async:2", "local:8"; "sync".
std::string dp_sync_text(const Strategy&);
// "layernorm/mla_up_proj": the modules' names, as the strategy key takes them.
std::string recompute_modules_text(unsigned modules);
// "qkv/proj": the LoRA targets, as the strategy key takes them.
std::string lora_targets_text(unsigned targets);
// "s/rx30/s": per-layer sharding marks, as the strategy key takes them (runs merged).
std::string zero_layers_text(const std::vector<int>& marks);

// The software stack that runs the strategy: what it overlaps and which kernels it has.
struct Software {
  std::string name;
  AttentionKernel attention = AttentionKernel::flash;
  // The fused kernel, where attention is fused: Transformer Engine's default on Hopper, cuDNN
  // (transformer_engine/pytorch/attention.py, v1.6 on: "Select FusedAttention on sm90").
  FusedAttention fused_attention = FusedAttention::cudnn;
  // The cuDNN release the stack's container ships ("9.19"): a part's attention curves measured
  // with several releases price it at the one nearest this (attention_rate). Empty: the part's
  // earliest, the mid-2024 kernels where a Hopper part has them.
  std::string cudnn;
  // What recompute=selective recomputes where the strategy names no recompute_modules
  // (RecomputeModule bits; 0: attention's core, Megatron's default).
  unsigned recompute_modules = 0;
  bool overlap_grad_reduce = true;   // DP gradient reduction overlapped with backward
  bool overlap_param_gather = true;  // ZeRO parameter all-gathers overlapped with compute
  // Gradients kept, accumulated and reduced in this many bytes: 4 = fp32 main gradients
  // (Megatron forces them with bf16), 2 = fp16 gradients of fp16 training.
  int grad_bytes = 4;
  // Under fp16 training the gradients are kept, accumulated and reduced in fp16, whatever
  // grad_bytes says: Megatron forces fp32 main gradients only with bf16 (arguments.py:
  // "bfloat16 requires gradient accumulation and all-reduce to be done in fp32"; with --fp16
  // accumulate_allreduce_grads_in_fp32 stays off and the gradient buffer takes the parameters'
  // type), and DeepSpeed's fp16 optimizer reduces the fp16 gradients. PyTorch's AMP and
  // FSDP2 keep fp32 gradients (false).
  bool fp16_grads = true;
  // Weight-gradient GEMMs accumulate straight into the main gradients. Without it every
  // micro-batch's backward ends with a pass grad += new_grad over all local parameters.
  bool fused_grad_accumulation = true;
  // The input-gradient collective of a column-parallel linear runs asynchronously behind
  // that linear's weight-gradient GEMM (Megatron-LM since September 2021).
  bool async_tp_backward = true;
  // Sequence-parallel TP all-gathers and reduce-scatters split and pipelined with the linear's
  // GEMMs (Transformer Engine's userbuffers, --tp-comm-overlap): forward, the all-gather
  // behind the column-parallel GEMM and the reduce-scatter behind the row-parallel one;
  // backward, as async_tp_backward, and the output gradient's all-gather behind the row-
  // parallel dgrad. Needs sp=true; each hidden part still costs its SMs.
  bool tp_comm_overlap = true;
  // SMs the pipelined reduce-scatter overlaps withhold from the row-parallel forward GEMMs for
  // their whole duration (userbuffers' set_sm_margin): the attention projection's and the
  // MLP's second linear's. 0: no margin (Transformer Engine's default before 2.0); the comm
  // kernels then take their SMs only while they run.
  int ub_margin_proj_sms = 0, ub_margin_fc2_sms = 0;
  // Interleaved pipelines send and receive asynchronously, behind the next chunk's compute
  // (Megatron-core's overlap_p2p_comm, on with vpp>1 since 2023); otherwise every send waits.
  bool overlap_p2p = true;
  // What the stack can run at all: estimate refuses, and rank never proposes, the rest.
  bool sequence_parallel = true;    // sp=true (Megatron-LM since 2022)
  bool selective_recompute = true;  // recompute=selective (Megatron-LM since 2022)
  bool tensor_parallel = true;      // tp>1 (Megatron's; not plain data-parallel stacks)
  bool context_parallel = true;     // cp>1 (Megatron-core, 2024)
  bool expert_parallel = true;      // ep>1 (Megatron-core MoE)
  bool ep_overlap = true;           // ep_overlap=true (Megatron-core, 2025 on)
  // Under tensor parallelism the MoE layer sits inside one all-gather and one reduce-scatter
  // like a dense MLP (torchtitan's PrepareModuleInputOutput around the MoE module): the router
  // runs on all the tokens, and the experts' ranks split the routed tokens over the TP group
  // (etp=1: ReordererSequenceParallel) or split the experts (etp=tp: every rank sends all its
  // copies, nothing gathered after the all-to-all). false: Megatron-core's dispatcher, each TP
  // rank routing its own sequence shard and gathering over the experts' TP group.
  bool moe_tp_wrapped = false;
  // Each step starts by zeroing the whole gradient buffer, not the data-parallel shard
  // (Megatron's contiguous buffers: DistributedDataParallel.zero_grad_buffer() clears every
  // bucket even under the distributed optimizer). Stacks that drop gradients (PyTorch's
  // zero_grad(set_to_none=True)) or keep them sharded zero their shard at most.
  bool zero_whole_grad_buffer = true;
  // Passes a stack makes over the whole local gradient buffer once a step, on the compute
  // stream, before its data-parallel reduction (ZeRO 0-2; a ZeRO-3 unit's gradients take
  // other paths): Megatron-core's DDP norms every bucket to check it for NaN (r0.8
  // Bucket.start_grad_sync, `check_for_nan_in_grad` from --check-for-nan-in-loss-and-grad,
  // on by default but for fp16 runs under dynamic loss scaling: one read, grad_nan_check)
  // and scales it by 1/dp in place where average_in_collective is off (its default: a read and
  // a write where dp x cp > 1, grad_scale_in_place); Megatron-LM of 2021-2022 divides its
  // buffer by dp before the all-reduce (megatron/model/distributed.py allreduce_gradients),
  // and without contiguous buffers (2021) first flattens the gradients into one tensor and
  // afterwards copies them back (two more reads and writes, grad_coalesce_copies).
  bool grad_nan_check = false;
  bool grad_scale_in_place = false;
  bool grad_coalesce_copies = false;
  // SMs an expert-parallel dispatch or combine kernel takes while it runs: HybridEP's
  // moe_hybridep_num_sms (32 in Megatron-Bridge's performance recipes), DeepEP's 20 under
  // DeepSeek-V3's DualPipe; 0: NCCL's channels.
  int ep_comm_sms = 0;
  EpDispatcher ep_dispatcher = EpDispatcher::alltoall;
  // The experts' GEMMs as Transformer Engine's GroupedLinear runs them (Megatron-core's
  // TEGroupedMLP): one cuBLASLt GEMM per local expert, spread over a few compute streams
  // (general_grouped_gemm, nvte_multi_stream_cublas_gemm), each a kernel of its own;
  // false: one grouped kernel for all of them (DeepGEMM, a CUTLASS grouped GEMM).
  bool grouped_gemm_per_expert = true;
  // The experts' MLP as fused grouped GEMMs on block-scaled (MXFP8, NVFP4) SwiGLU experts:
  // Transformer Engine's op fuser with cuDNN front-end's CuTe DSL kernels (Megatron-core's
  // use_transformer_engine_op_fuser; Megatron-Bridge's cutedsl_fused_grouped_mlp, in its
  // DeepSeek-V3 MXFP8 recipes for GB200 and GB300 from 26.06): forward, one kernel over every
  // local expert computes fc1, SwiGLU scaled by the routing probability and the MXFP8 copies of
  // fc2's input (grouped_gemm_swiglu_wrapper_sm100); backward, fc2's input gradient with the
  // SwiGLU gradient and its quantization (grouped_gemm_dswiglu_wrapper_sm100). Neither the
  // activation's passes nor those casts touch HBM on their own, and no expert pays a launch
  // of its own (Op::grouped_mlp_bytes).
  bool fused_grouped_mlp = false;
  // Attention in FP8 on a quantized run (Transformer Engine's fp8_dot_product_attention, set by
  // Megatron-Bridge's GB300 DeepSeek-V3 MXFP8 recipe from 26.06): the device's MXFP8 curves of
  // the fused kernel where the catalog has them (AttentionCurve::fp8), its 16-bit ones elsewhere.
  bool fp8_attention = false;
  // The loss's kernels (CrossEntropy; Op::te_loss_bytes, Block::te_loss_working_bytes).
  CrossEntropy cross_entropy = CrossEntropy::unfused;
  int max_zero = 3;  // ZeRO stages: 1 = distributed optimizer, 2-3 = FSDP
  // With pipeline parallelism: sharded gradients (ZeRO-2/3) would be reduce-scattered, and
  // ZeRO-3's weights re-gathered, every micro-batch; DeepSpeed refuses the combination and
  // no preset here models a stack that runs it otherwise (FSDP2 under torchtitan gathers
  // once a step), so it is refused.
  int max_zero_with_pipeline = 1;
  // The precision a strategy that names none trains in (fp16 where the part has no bf16),
  // and whether the stack has FP8 (Transformer Engine, Megatron-core since 2023).
  DType precision = DType::bf16;
  bool fp8 = true;
  // The stack's FP8 is torchao's Float8Linear (torchtitan's float8 converter), not Transformer
  // Engine: every GEMM's operands cast on the fly with dynamic scales (no amax history, no
  // cached FP8 weights), the weights again each micro-batch; the LM head stays in 16 bits
  // (torchtitan's configs filter "output"). Its recipe (float8_recipe) and FSDP2's float8
  // all-gather of the weights (float8_all_gather: torchtitan's enable_fsdp_float8_all_gather
  // with precompute_float8_dynamic_scale_for_fsdp, tensorwise only).
  // precision=mxfp8 is torchao's MXLinear on the same stack (torchtitan's mx converter,
  // recipe mxfp8_cublas), its dim-1 casts by mx_dim1_cast's kernel.
  bool torchao_float8 = false;
  Float8Recipe float8_recipe = Float8Recipe::tensorwise;
  MxDim1Cast mx_dim1_cast = MxDim1Cast::triton;
  bool float8_all_gather = false;
  // The routed experts' grouped GEMMs quantized as well (torchtitan's grouped-GEMM converters,
  // [quantize.grouped_mm.float8] or [quantize.grouped_mm.mx] with fqns ["experts"]: torchao's
  // rowwise float8 or MXFP8 torch._scaled_grouped_mm); false: torchtitan's float8 and MX
  // converters swap nn.Linear modules only, and the experts' 3-D weights stay in 16 bits.
  bool quantize_experts = false;
  // Under tensor parallelism torchtitan applies torchao's float8 TP styles (Float8ColwiseParallel
  // and the rest: the input cast before its all-gather, which moves float8). false: the plain
  // DTensor styles, gathering 16 bits, as torchtitan from 2025-09-30 to 2026-02-23 did for
  // configs naming the quantize.linear.float8 converter (its parallelize.py tested for
  // "float8" among the converters).
  bool float8_tp = true;
  // torchtitan's per-op recomputation policy saves torch._scaled_mm's outputs, every one: it is
  // in the save set but outside aten.mm's alternation (torchtitan from 2026-03-23,
  // pytorch/torchtitan#2357: the policy built on PyTorch's get_default_op_list); false:
  // torchtitan before, whose per-model _op_sac_save_list held aten.mm alone, so every float8
  // linear's GEMM was recomputed and none of their outputs kept.
  bool sac_saves_scaled_mm = false;
  // torch.compile over each transformer layer (torchtitan's apply_compile: every
  // TransformerBlock compiled on its own, fullgraph; the embedding, the final norm and the LM
  // head stay eager): Inductor fuses the layers' elementwise work into the kernels a fused
  // stack runs (Op::compiled_bytes), where eager_elementwise runs ATen's composites.
  bool compile = false;
  // FP8's scaling recipe: each tensor scaled by the amax of its own values, computed in a pass
  // of its own just before the cast (Transformer Engine's Float8CurrentScaling, Megatron's
  // --fp8-recipe tensorwise; Megatron-Bridge's performance recipes' fp8_cs), instead of the
  // amax history of earlier steps that the cast itself updates (delayed scaling, TE's and
  // Megatron's default, NeMo 2.0's FP8 recipes).
  bool fp8_current_scaling = false;
  // Quantized training keeps the experts' SwiGLU inputs for the backward quantized, not in 16
  // bits (DeepSeek-V3, arXiv:2412.19437 Sec. 3.3.4, "Low-Precision Activation": "we cache the
  // inputs of the SwiGLU operator ... stored in FP8 with our fine-grained quantization").
  bool quantized_moe_act_input = false;
  // AdamW's first and second moments in bf16 (2 bytes each), the master weights still fp32
  // (DeepSeek-V3 Sec. 3.3.4, "Low-Precision Optimizer States").
  bool bf16_optimizer_moments = false;
  // What fp32 math runs as where the part has TF32 tensor cores (Ampere on): matmuls (cuBLAS:
  // PyTorch's torch.backends.cuda.matmul.allow_tf32, False by default since PyTorch 1.12 and
  // True before; NGC's PyTorch containers set TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, which turns
  // it on) and convolutions (cuDNN: torch.backends.cudnn.allow_tf32, True by default).
  bool tf32_matmul = true;
  bool tf32_conv = true;
  // cuDNN may run fp32 3x3 convolutions of stride 1 as Winograd F(2x2, 3x3) (Lavin and Gray,
  // "Fast Algorithms for Convolutional Neural Networks", 2016): PyTorch's cudnn.benchmark and
  // cuDNN's own heuristics pick it where it is faster. false: implicit GEMM only.
  bool conv_winograd = true;
  // FP8 primary weights (Transformer Engine's fp8_model_init; NeMo's fp8_params, Megatron-
  // core's --fp8-param-gather): FP8 linears keep their weights in FP8 (1 B) with a cached
  // transpose (1 B) instead of bf16 plus an FP8 copy, and the distributed optimizer gathers
  // them in FP8.
  bool fp8_params = false;
  // DeepSeek's DualPipe schedule (schedule=dualpipe; deepseek-ai/DualPipe): the deepseek-v3
  // preset's; Megatron-core and the others run 1F1B.
  bool dualpipe = false;
  // ZeRO stages the stack has, bit z for stage z (torchtitan: DDP and FSDP, 0 and 3).
  unsigned zero_stages = 0b1111;
  bool has_zero(int z) const { return z >= 0 && z <= max_zero && (zero_stages >> z & 1u); }
  // Interleaved pipeline schedules (vpp>1); DeepSpeed's pipeline engine has none.
  bool interleaving = true;
  // ZeRO-3's calls: how parameters are gathered, and the gradient bucket every reduction is
  // issued in (Megatron-core's DDP: max(40M, 1M x dp) parameters; 0: one call for the whole
  // buffer, as Megatron-LM's local DDP of 2021-2022; DeepSpeed: reduce_bucket_size 5e8).
  ShardedCalls zero3_gathers = ShardedCalls::per_layer;
  double grad_bucket_params = 4e7;
  bool grad_bucket_grows_with_dp = true;
  // DeepSpeed ZeRO-3's stage3_prefetch_bucket_size: parameters gathered ahead of use.
  double prefetch_bucket_params = 0;
  // ZeRO-3 through torch.distributed's list collectives, as DeepSpeed ran it in 2021
  // (v0.3.13-v0.5.4, partition_parameters.py; from v0.5.5 on PyTorch 1.9+ the gathers take
  // _all_gather_base, the reduce-scatters keep their lists): each parameter tensor's all-gather
  // (_allgather_param) first synchronizes the device (torch.cuda.synchronize()), then builds a
  // list of one narrow() view per rank in Python, and PyTorch's ProcessGroupNCCL::allgather
  // copies the flat result into each view with its own copy_ in C++; each tensor's gradient
  // reduce-scatter (_reduce_scatter_gradient) builds the list the same way (view and narrow
  // per rank), and ProcessGroupNCCL::reduce_scatter copies each view into a flat input. So
  // every call costs the host ranks x (its Python ops + one C++ copy), gathers wait exposed,
  // and the reduce-scatters go one per tensor, not per bucket.
  bool zero3_list_collectives = false;
  // DeepSpeed ZeRO-3's stage3_param_persistence_threshold: parameter tensors of fewer
  // elements are not partitioned for the passes (gathered once a step, after the optimizer)
  // but still reduce-scattered; 0: none (the per-layer stacks shard every tensor).
  double zero3_persistence_params = 0;
  // DeepSpeed ZeRO-3's stage3_max_reuse_distance (v0.3.13-v0.5.x: PartitionedParameter-
  // Coordinator._keep_for_later): after a sub-module runs, its parameters stay gathered only
  // where the parameters the recorded trace runs before its next use add up to fewer elements.
  // Under full recomputation a layer's recomputed forward is followed by its backward, so a
  // linear whose later linears' weights, forward and backward, reach it is gathered a second
  // time for its backward. 0: the stack keeps a unit gathered from its recomputation through
  // its backward (the per-layer stacks).
  double zero3_reuse_distance_params = 0;
  // What a GPU holds beyond the modelled state and activations (plan/memory.h's MemoryModel):
  // a fixed part (CUDA context, NCCL's buffers, cuBLAS and Transformer Engine workspaces) and
  // a share of the rest for the caching allocator's fragmentation. --memory-headroom replaces
  // both with one fixed figure.
  double memory_fixed_bytes = 2.0 * 1024 * 1024 * 1024;
  double memory_fragmentation = 0.05;
  // FSDP2 with pipelining (torchtitan): parameters gathered once a step and kept, gradients
  // reduce-scattered once after the last micro-batch, so ZeRO-3 prices as ZeRO-1 there.
  bool fsdp_pipeline_once = false;
  // Each ZeRO-3 all-gather is followed, on the compute stream, by a copy of the gathered
  // buffer into the unit's unsharded parameters (PyTorch FSDP2: FSDPParamGroup.
  // wait_for_unshard runs foreach_all_gather_copy_out, a split_with_sizes_copy of the rank-
  // major buffer into each parameter, on the current stream once the all-gather's event is
  // waited on): reading and writing every gathered parameter, forward and backward.
  bool fsdp_copy_out = false;
  // Elementwise work as eager PyTorch runs it without torch.compile: each ATen op of a
  // composite its own kernel and HBM pass (RMSNorm through at::rms_norm's composite path,
  // rotary embeddings through complex multiplies in fp32, grouped-query keys and values
  // repeated for SDPA, the attention output made contiguous); Op::eager_bytes.
  bool eager_elementwise = false;
  // The host's seconds for each kernel it launches (no CUDA graphs): a forward op from Python
  // through the ATen dispatcher to cudaLaunchKernel, 8.25-8.56 us a torch.matmul call in a
  // host-bound loop (pytorch/pytorch#161822, 2025); a backward op from autograd's C++ engine,
  // about 1 us of dispatch (pytorch/pytorch#41383) and a 3.0-3.3 us cuLaunchKernel (meta-
  // pytorch/tritonbench#1017). A block whose kernels run shorter than their launches waits
  // for the host (the step's host_launch part).
  double host_forward_launch_s = 8e-6;
  double host_backward_launch_s = 4e-6;
  // A kernel launched from C++ inside one op's call (Transformer Engine's GEMM per local
  // expert beyond the first): the driver's cuLaunchKernel alone.
  double host_driver_launch_s = 3e-6;
  // An ATen op called from Python that launches nothing (a view: narrow): about 2 us, half
  // of it Python's argument parsing (pytorch/pytorch#41383, 2020: x*x on a CPU tensor).
  double host_python_op_s = 2e-6;
  // CUDA graphs replay each layer's kernels from one launch (Megatron-core's and Transformer
  // Engine's per-layer graphs): no host launch per kernel of the transformer layers (the
  // embedding, the head and the loss stay eager).
  bool cuda_graphs = false;
};
Software software_preset(std::string_view name);  // software_presets()
// A stack as text: a preset, then the overrides that set it apart after a colon
// ("nemo:tp_comm_overlap=false,attention=fa3"; the overlaps, attention, memory_headroom_gib).
// Throws InputError naming the key and the fix. software_text writes what parse_software
// reads back into the same stack (the preset's name alone where nothing differs).
Software parse_software(std::string_view text);
std::string software_text(const Software&);
// Every on/off key parse_software takes, in its order, with this stack's value.
std::vector<std::pair<std::string, bool>> software_switches(const Software&);
// Why the stack cannot run s ("megatron-lm-2021 has no sequence parallelism ..."), or nothing.
std::optional<std::string> unsupported(const Software&, const Strategy&);
std::vector<std::string> software_presets();
// The strategy's precision, or the preset's default on this device (bf16 falls back to fp16
// on parts without bf16); nullopt with `why` set when the device has no peak for it.
std::optional<DType> resolved_precision(const Strategy&, const Software&, const Device&,
                                        std::string* why);

}  // namespace shardcost
