// Software presets: what each modelled stack overlaps, which kernels it has, how it keeps
// gradients. Each preset follows the code of its date (docs/estimator.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>

#include "shardcost/error.h"
#include "shardcost/strategy.h"

namespace shardcost {

Software software_preset(std::string_view name) {
  Software s;
  s.name = std::string(name);
  // megatron-core: Megatron-Core with Transformer Engine as its performance runs configure it
  // (README, 'Performance Benchmarking': DP, TP and PP overlap on): FlashAttention, gradient
  // reduction overlapped with backward (--overlap-grad-reduce), parameter all-gathers
  // overlapped with forward (--overlap-param-gather), TP collectives overlapped with the
  // GEMMs (--tp-comm-overlap), asynchronous interleaved pipeline sends, fp32 main gradients,
  // fused accumulation, asynchronous tensor-parallel backward collectives. The defaults.
  // fp32 math on TF32 tensor cores (tf32_matmul, tf32_conv): Megatron runs in NGC's PyTorch
  // containers, which set TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, and Megatron-LM of 2021-2022 ran
  // PyTorch before 1.12, whose matmuls defaulted to TF32.
  // Megatron's DDP passes over its whole gradient buffer before each step's reduction
  // (Software::grad_nan_check and what follows it): Megatron-core r0.8 checks every bucket's
  // norm for NaN and scales it by 1/dp in place (Bucket.start_grad_sync).
  if (name == "megatron-core") {
    s.grad_nan_check = true;
    s.grad_scale_in_place = true;
  }
  if (name == "megatron-lm-2022" || name == "megatron-lm-2021") {
    // allreduce_gradients divides the buffer by dp, then all-reduces it (v2.5-v3.0,
    // megatron/model/distributed.py); the 2021 code, without contiguous buffers, flattens the
    // gradients first and copies them back after.
    s.grad_scale_in_place = true;
    s.grad_coalesce_copies = name == "megatron-lm-2021";
    // Megatron-LM of the Korthikanti et al. 2022 experiments (code of May 2022): unfused
    // softmax attention (FlashAttention came later), gradients all-reduced after the pipeline
    // flush (overlapping it with backward came in 2023), bf16 with fp32 main gradients,
    // gradient-accumulation fusion on by default (since February 2022), the column-parallel
    // input-gradient all-reduce asynchronous behind the weight-gradient GEMM (since
    // September 2021).
    s.attention = AttentionKernel::standard;
    s.overlap_grad_reduce = false;
    s.overlap_param_gather = false;
    // Megatron-LM's own ZeRO is the distributed optimizer (stage 1, February 2022); sharded
    // gradients and weights (FSDP) came with Megatron-core, as did context parallelism and
    // mixture-of-experts with expert parallelism.
    s.max_zero = 1;
    s.context_parallel = false;
    s.expert_parallel = false;
    s.ep_overlap = false;
    s.fp8 = false;  // Transformer Engine's FP8 came to Megatron in 2023
    // Userbuffers TP overlap (Transformer Engine) and asynchronous interleaved sends came with
    // Megatron-core in 2023.
    s.tp_comm_overlap = false;
    s.overlap_p2p = false;
    // Megatron-LM's local DDP all-reduced its one contiguous gradient buffer in one call.
    s.grad_bucket_params = 0;
  }
  if (name == "megatron-lm-2021") {
    // Megatron-LM of Narayanan et al. 2021 (code of April 2021, --fp16 as its example
    // scripts): fp16 gradients accumulated by autograd (grad += new_grad every micro-batch)
    // and all-reduced in fp16, dynamic loss scaling (every fp16 run has it), synchronous
    // tensor-parallel collectives.
    s.grad_bytes = 2;
    s.precision = DType::fp16;
    s.fused_grad_accumulation = false;
    // Gradients accumulated by autograd into param.grad, not one contiguous buffer.
    s.zero_whole_grad_buffer = false;
    s.async_tp_backward = false;
    // Sequence parallelism and selective recomputation are Korthikanti et al. 2022's; the
    // distributed optimizer came in 2022 too.
    s.sequence_parallel = false;
    s.selective_recompute = false;
    s.max_zero = 0;
  }
  if (name == "megatron-deepspeed") {
    // Megatron-DeepSpeed of Narayanan et al.'s ZeRO-3 comparison (2021): Megatron-LM's model
    // code of the time (megatron-lm-2021: unfused attention, fp16 gradients accumulated by
    // autograd, synchronous TP collectives, no sequence parallelism or selective
    // recomputation) under DeepSpeed's engine: ZeRO 1-3 as DeepSpeed implements them (stage 3
    // gathers each parameter tensor, with stage3_prefetch_bucket_size 5e7 parameters ahead and
    // overlap_comm on; gradients reduced in reduce_bucket_size 5e8 buckets, stage 3's one
    // tensor at a time; both through list collectives, zero3_list_collectives); its pipeline
    // engine (1F1B, no interleaving), which refuses ZeRO-2/3.
    Software ds = software_preset("megatron-lm-2021");
    ds.name = s.name;
    ds.overlap_grad_reduce = true;
    ds.overlap_param_gather = true;
    ds.max_zero = 3;
    ds.interleaving = false;
    ds.zero3_gathers = ShardedCalls::per_tensor;
    ds.grad_bucket_params = 5e8;
    ds.grad_bucket_grows_with_dp = false;
    ds.prefetch_bucket_params = 5e7;
    ds.zero3_list_collectives = true;
    ds.zero3_persistence_params = 1e5;     // stage3_param_persistence_threshold's default
    ds.zero3_reuse_distance_params = 1e9;  // stage3_max_reuse_distance's default
    // DeepSpeed's engine reduces the gradients, not Megatron's DDP.
    ds.grad_scale_in_place = false;
    ds.grad_coalesce_copies = false;
    return ds;
  }
  if (name == "torchtitan") {
    // PyTorch's own wheels: fp32 matmuls in full fp32 (allow_tf32=False since 1.12), cuDNN's
    // convolutions on TF32 (cudnn.allow_tf32=True). Its training runs bf16 either way.
    s.tf32_matmul = false;
    // torchtitan (PyTorch FSDP2, 2024): FSDP2 over each transformer block (one all-gather and
    // one reduce-scatter per block, bf16 parameters, fp32 reduction), or DDP; no ZeRO-1/2.
    // With pipelining it gathers once a step and reduce-scatters once after the last
    // micro-batch. Tensor parallelism through DTensor with sequence-parallel norms, no
    // asynchronous or overlapped TP collectives; ring context parallelism; SDPA's fused
    // attention; no Transformer Engine: its float8 is torchao's (torchao_float8).
    s.async_tp_backward = false;
    s.tp_comm_overlap = false;
    s.overlap_p2p = false;
    // Expert parallelism (torchtitan from 2025-07: expert_parallel_degree, the routed experts
    // on an [efsdp, ep] mesh folded from dp_shard, cp and tp; distributed/expert_parallel.py):
    // every (token, expert) copy sent by all_to_all_single, the experts' grouped GEMMs, the
    // copies combined back, nothing overlapped in eager mode; its DeepEP backend (2025-12 on)
    // is ep_dispatcher=flex.
    s.expert_parallel = true;
    s.ep_overlap = false;
    s.moe_tp_wrapped = true;
    // Its default activation checkpointing: selective, per op (torchtitan/models/llama3/
    // train_configs: [activation_checkpoint] mode = "selective", selective_ac_option = "op";
    // the policy in torchtitan's activation_checkpoint.py saves matmul outputs alternately,
    // attention's outputs and reduce-scatters).
    s.recompute_modules = kRecomputeOps;
    // precision=fp8: torchao's Float8Linear (torchtitan's float8 converter), tensorwise unless
    // float8_recipe says otherwise; the weights gathered in bf16 unless float8_all_gather.
    // precision=mxfp8: torchao's MXLinear (its mx converter, Blackwell only). The routed
    // experts stay in bf16 unless quantize_experts.
    s.fp8 = true;
    s.torchao_float8 = true;
    s.zero_stages = 0b1001;
    s.max_zero_with_pipeline = 3;
    // F.scaled_dot_product_attention's flash backend, FlashAttention-2 (PyTorch 2.2 on).
    s.fused_attention = FusedAttention::fa2;
    // optimizer.zero_grad() sets gradients to None (PyTorch 2.0 on): nothing to clear.
    s.zero_whole_grad_buffer = false;
    s.fsdp_pipeline_once = true;
    s.fsdp_copy_out = true;
    // Eager PyTorch (torchtitan's llama3 configs: [training] compile = false): its RMSNorm,
    // rotary embedding and GQA repeat as separate ATen kernels (Op::eager_bytes).
    s.eager_elementwise = true;
    // No fused weight-gradient accumulation: autograd writes each parameter's gradient in its
    // type (bf16), which FSDP2 copies into an fp32 reduce-scatter input every backward (or
    // DDP adds into its bucket), a pass over the stage's gradients each micro-batch.
    s.fused_grad_accumulation = false;
    s.fp16_grads = false;  // FSDP2's reduce_dtype fp32 (torchtitan's mixed_precision_reduce)
    s.grad_bucket_params = 25.0 * 1024 * 1024 / 4;  // DDP's bucket_cap_mb 25, fp32 gradients
    s.grad_bucket_grows_with_dp = false;
  }
  if (name == "deepseek-v3") {
    s.tf32_matmul = false;  // FP8 and bf16 throughout; its fp32 math is not published
    // DeepSeek-V3's own stack as its technical report describes it (Sec. 3.2-3.3): Megatron-
    // core's kernels and overlaps stand in for HAI-LLM's, with FP8 training by default and
    // the DualPipe schedule.
    s.dualpipe = true;
    s.precision = DType::fp8;
    // Its attention kernels are not published: the catalog's best fused kernel stands in.
    s.fused_attention = FusedAttention::best;
    // DeepEP (Sec. 3.2.2): each token goes over InfiniBand once to every node holding one of
    // its experts (at most 4, node-limited routing), then over NVLink to the GPUs there.
    s.ep_dispatcher = EpDispatcher::flex;
    // DeepGEMM's grouped GEMMs: one kernel over every local expert (contiguous or masked
    // layout; deepseek-ai/DeepGEMM).
    s.grouped_gemm_per_expert = false;
    // "only 20 SMs are sufficient to fully utilize the bandwidths of IB and NVLink" (Sec.
    // 3.2.2): what the overlapped dispatch and combine take from the compute beside them.
    s.ep_comm_sms = 20;
    // Its memory savings (Sec. 3.3.4): the experts' SwiGLU inputs cached in FP8, AdamW's
    // moments in bf16.
    s.quantized_moe_act_input = true;
    s.bf16_optimizer_moments = true;
  }
  if (name == "nemo" || name == "megatron-bridge") {
    // NeMo 2.0 (containers 24.07 on): Megatron-core and Transformer Engine under NeMo's
    // recipes, whose FP8 recipe keeps FP8 primary weights (bf16_with_fp8_mixed sets
    // fp8_params=True, nemo/collections/llm/recipes/precision/mixed_precision.py).
    // megatron-bridge: the same under Megatron-Bridge's performance recipes (NeMo 25.09 on),
    // below.
    s.fp8_params = true;
    // Gradients kept and reduced in bf16: NeMo's performance configurations turn
    // grad_reduce_in_fp32 off (NeMo 2.0's scripts/performance set
    // recipe.trainer.plugins.grad_reduce_in_fp32 = False; Megatron-Bridge's performance recipes
    // set mixed_precision.grad_reduce_in_fp32 = ddp.grad_reduce_in_fp32 = False for Llama 3.1
    // and DeepSeek-V3, scripts/performance/configs/*/*_llm_pretrain.py).
    s.grad_bytes = 2;
    // NeMo's userbuffers configurations for H100 (NeMo-Framework-Launcher's
    // conf/training/tp_overlap/ub_cfg_h100_h8192_tp4_mbs1_seqlen8192.yaml, the same numbers as
    // nemo/collections/llm/recipes/tp_overlap_configs/userbuffers.py): proj_fprop pipelined on
    // 24 SMs and fc2_fprop on 16, both with set_sm_margin.
    s.ub_margin_proj_sms = 24;
    s.ub_margin_fc2_sms = 16;
    // Megatron-Bridge's DeepSeek recipes dispatch through HybridEP on 32 SMs
    // (perf_recipes' _benchmark_common: moe_hybridep_num_sms = 32).
    s.ep_comm_sms = 32;
    // ... through Megatron-core's flex dispatcher (moe_token_dispatcher_type = "flex", the
    // backend hybridep or deepep: DEEPSEEK_V3_PRETRAIN_CONFIG_B200_V1 and its siblings in
    // scripts/performance/configs/deepseek/deepseek_workload_base_configs.py), which sends a
    // token once per destination node and GPU (DeepEP's internode kernels: one RDMA copy per
    // node carrying the mask of its GPUs there).
    s.ep_dispatcher = EpDispatcher::flex;
  }
  if (name == "megatron-bridge") {
    // Its performance runs compute the loss with Transformer Engine's fused cross entropy:
    // GPTModelProvider's cross_entropy_loss_fusion is on, and the performance scripts set
    // cross_entropy_fusion_impl = "te" (scripts/performance/utils/helpers.py at v0.2.0,
    // utils/overrides.py from v0.4.0 on; off only under --deterministic).
    s.cross_entropy = CrossEntropy::te;
    // Its releases run NGC PyTorch images of 2025-09 to 2026-04 (docker/Dockerfile's base
    // image at v0.2.0-v0.5.1: 25.09, 25.11, 26.02, 26.04), whose cuDNN is 9.13 or later: on
    // every part nearer the 9.19.1 that cudnn-frontend measured than the mid-2024 kernels.
    s.cudnn = "9.13";
  }
  if (name == "pytorch-ddp" || name == "chainermn") {
    // Plain data-parallel stacks of the CNN papers (docs/operator-graphs.md), in fp32 unless
    // the strategy names another type: PyTorch's DistributedDataParallel (gradients all-
    // reduced in 25 MB buckets behind the backward, bucket_cap_mb's default) and Chainer 7
    // with ChainerMN's pure_nccl communicator (one all-reduce of every gradient after the
    // backward, as Kahira et al.'s ABCI runs used). No sharding, tensor-parallel overlaps,
    // fused attention or Transformer Engine.
    s.precision = DType::fp32;
    s.fp16_grads = false;  // AMP keeps fp32 parameters and their gradients
    // Upstream PyTorch (1.12 on): fp32 matmuls in full fp32, convolutions on TF32 where the
    // part has it (cuda.matmul.allow_tf32 False, cudnn.allow_tf32 True: PyTorch's "TensorFloat-32
    // (TF32) on Ampere devices" notes). In NGC's containers matmuls run TF32 too:
    // --software pytorch-ddp:tf32_matmul=true.
    s.tf32_matmul = false;
    s.attention = AttentionKernel::standard;
    s.async_tp_backward = false;
    s.tp_comm_overlap = false;
    s.overlap_p2p = false;
    s.overlap_param_gather = false;
    s.sequence_parallel = false;
    s.selective_recompute = false;
    s.tensor_parallel = false;
    s.context_parallel = false;
    s.expert_parallel = false;
    s.ep_overlap = false;
    s.fp8 = false;
    s.zero_stages = 0b0001;
    s.max_zero = 0;
    s.zero_whole_grad_buffer = false;
    s.grad_bucket_params = 25.0 * 1024 * 1024 / 4;
    s.grad_bucket_grows_with_dp = false;
    if (name == "chainermn") {
      s.overlap_grad_reduce = false;
      s.grad_bucket_params = 0;
      // CuPy leaves TF32 off unless CUPY_TF32=1 (Chainer's runs were on V100s, which have
      // none).
      s.tf32_conv = false;
      // Chainer has no C++ autograd engine: each FunctionNode's backward is Python, as its
      // forward (chainer/function_node.py), so a backward kernel costs the host a forward's.
      s.host_backward_launch_s = s.host_forward_launch_s;
    }
  }
  for (const auto& known : software_presets())
    if (name == known) return s;
  throw InputError(fmt::format("unknown software preset '{}'; use {}", name,
                               fmt::join(software_presets(), ", ")));
}

std::optional<std::string> unsupported(const Software& sw, const Strategy& s) {
  if (s.sp && !sw.sequence_parallel)
    return fmt::format("{} has no sequence parallelism; use sp=false", sw.name);
  if (s.recompute == Recompute::selective && !sw.selective_recompute)
    return fmt::format("{} has no selective recomputation; use recompute=full or none", sw.name);
  if (s.recompute == Recompute::selective && s.recompute_modules != 0 &&
      (s.recompute_modules == kRecomputeOps) != (sw.recompute_modules == kRecomputeOps))
    return sw.recompute_modules == kRecomputeOps
               ? fmt::format(
                     "{} recomputes selectively per op (its own policy); use "
                     "recompute_modules=ops or leave it out",
                     sw.name)
               : fmt::format(
                     "{} recomputes selectively by Megatron-core's modules, not per op; "
                     "use recompute_modules from core_attn, layernorm, mla_up_proj, moe_act, mlp, "
                     "moe, shared_experts",
                     sw.name);
  if ((s.tp > 1 || !s.stage_tp.empty()) && !sw.tensor_parallel)
    return fmt::format(
        "{} has no tensor parallelism (a plain data-parallel stack); use tp=1, or "
        "--software megatron-core",
        sw.name);
  if (s.cp > 1 && !sw.context_parallel)
    return fmt::format("{} has no context parallelism; use cp=1", sw.name);
  if (s.ep > 1 && !sw.expert_parallel)
    return fmt::format("{} has no expert parallelism; use ep=1", sw.name);
  if (s.ep_overlap && !sw.ep_overlap)
    return fmt::format("{} has no expert-parallel all-to-all overlap; use ep_overlap=false",
                       sw.name);
  if (s.vpp > 1 && !sw.interleaving)
    return fmt::format("{} has no interleaved pipeline schedule; use vpp=1", sw.name);
  if (s.zero >= 0 && s.zero <= 3 && !(sw.zero_stages >> s.zero & 1u)) {
    std::vector<int> stages;
    for (int z = 0; z <= sw.max_zero; ++z)
      if (sw.has_zero(z)) stages.push_back(z);
    return fmt::format("{} has no ZeRO-{}; use zero={}", sw.name, s.zero,
                       fmt::join(stages, " or "));
  }
  if (s.pp > 1 && s.zero > sw.max_zero_with_pipeline)
    return fmt::format(
        "{} does not run ZeRO-{} with pipeline parallelism (pp={}): every micro-batch would "
        "reduce-scatter its gradients{}, as DeepSpeed refuses to; use zero<={} with pp>1, or pp=1",
        sw.name, s.zero, s.pp, s.zero == 3 ? " and re-gather its weights" : "",
        sw.max_zero_with_pipeline);
  if (!s.zero_layers.empty()) {
    if (!sw.has_zero(3))
      return fmt::format("{} has no ZeRO-3 to shard layers with; drop zero_layers", sw.name);
    if (s.pp > 1 && (sw.max_zero_with_pipeline < 3 || sw.fsdp_pipeline_once))
      return fmt::format(
          "{} does not shard layers ZeRO-3 style under pipeline parallelism (pp={}){}; use "
          "zero_layers with pp=1",
          sw.name, s.pp, sw.fsdp_pipeline_once ? ": it gathers the weights once a step there" : "");
  }
  if (s.schedule == PipeSchedule::dualpipe && !sw.dualpipe)
    return fmt::format(
        "{} has no DualPipe schedule; use schedule=1f1b, or --software deepseek-v3 (DeepSeek's "
        "stack, which runs it)",
        sw.name);
  const bool torchao_types = s.precision == DType::fp8 || s.precision == DType::mxfp8;
  if (s.precision && is_quantized(*s.precision) && !torchao_types && sw.torchao_float8)
    return fmt::format(
        "{} trains in low precision through torchao, priced for precision=fp8 (Float8Linear) "
        "and mxfp8 (MXLinear); torchao's {} training is not modelled; use one of those or bf16",
        sw.name, to_string(*s.precision));
  // torchtitan's MXLinearConverter: "TP not yet supported with torch.compile for mxfp8".
  if (s.precision == DType::mxfp8 && sw.torchao_float8 && sw.compile && s.tp > 1)
    return fmt::format(
        "{} does not run MXFP8 with tensor parallelism under torch.compile (tp={}; its MX "
        "converter refuses the pair); use tp=1, or compile=false",
        sw.name, s.tp);
  // torchtitan's float8 MoE converter: "Float8 MoE training prototype does not yet support
  // pipeline parallelism" (and context parallelism).
  if (s.precision == DType::fp8 && sw.torchao_float8 && sw.quantize_experts &&
      (s.pp > 1 || s.cp > 1))
    return fmt::format(
        "{} quantizes experts in float8 without pipeline or context parallelism (pp={}, cp={}; "
        "its grouped-GEMM converter refuses them); use pp=1 and cp=1, or quantize_experts=false",
        sw.name, s.pp, s.cp);
  if (s.lora > 0 && torchao_types && sw.torchao_float8)
    return fmt::format(
        "LoRA over torchao's {} linears is not modelled ({} freezes no quantized weight); use "
        "precision=bf16 with lora",
        to_string(*s.precision), sw.name);
  if (s.precision && is_quantized(*s.precision) && !sw.fp8) {
    std::string type(to_string(*s.precision));
    for (char& c : type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return fmt::format(
        "{} has no {} training (Transformer Engine came to Megatron in 2023); use "
        "precision=bf16 or fp16",
        sw.name, type);
  }
  if (s.zero > sw.max_zero)
    return fmt::format(
        "{} shards at most ZeRO stage {} ({}); use zero={} or less", sw.name, sw.max_zero,
        sw.max_zero == 0 ? "no distributed optimizer yet" : "the distributed optimizer",
        sw.max_zero);
  return std::nullopt;
}

std::vector<std::string> software_presets() {
  return {
      "megatron-core",      "nemo",       "megatron-bridge", "megatron-lm-2022", "megatron-lm-2021",
      "megatron-deepspeed", "torchtitan", "deepseek-v3",     "pytorch-ddp",      "chainermn"};
}

std::optional<DType> resolved_precision(const Strategy& s, const Software& sw, const Device& d,
                                        std::string* why) {
  auto has = [&d](DType t) { return d.peak_flops[static_cast<int>(t)] > 0; };
  if (!s.precision) {
    // The preset's type; a part without bf16 (V100, T4) trains in fp16, as those stacks did.
    if (sw.precision == DType::bf16 && !has(DType::bf16)) return DType::fp16;
    if (has(sw.precision)) return sw.precision;
  } else if (has(*s.precision)) {
    return *s.precision;
  }
  const DType t = s.precision.value_or(sw.precision);
  if (why) {
    std::vector<std::string> have;
    for (DType x : {DType::fp32, DType::tf32, DType::fp16, DType::bf16, DType::fp8, DType::mxfp8,
                    DType::nvfp4})
      if (has(x)) have.emplace_back(to_string(x));
    *why = fmt::format("{} has no {} peak in its device entry; use precision={}", d.name,
                       to_string(t), fmt::join(have, "|"));
  }
  return std::nullopt;
}

}  // namespace shardcost
