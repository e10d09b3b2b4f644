// torchtitan's MXFP8 (torchao's MXLinear) and its quantized experts (torchao's grouped GEMMs),
// each rule with its hand calculation (docs/estimator.md, "torchtitan's MXFP8 and experts").
#include <gtest/gtest.h>

#include <string>

#include "plan/estimate_internal.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "test_models.h"
#include "workload/transformer.h"

namespace shardcost {
namespace {

using test_models::input_error_of;

const Op* find_op(const Graph& g, const std::string& name) {
  for (const Block& b : g.blocks)
    if (b.pin == Block::Pin::body)
      for (const Op& op : b.ops)
        if (name == op.name) return &op;
  return nullptr;
}

const Op& layer_op(const Graph& g, const std::string& name) {
  if (const Op* op = find_op(g, name)) return *op;
  throw std::runtime_error("no layer op " + name);
}

struct TitanRun {
  Model m;
  std::string cluster;
  int gpus;
  Strategy resolved(const std::string& software, const std::string& strategy) const {
    return with_precision(parse_strategy(strategy, gpus), parse_software(software),
                          load_cluster(cluster, gpus));
  }
  Graph graph(const Strategy& s) const {
    Graph g;
    transformer_workload(m)->graph(s, AttentionKernel::flash, g);
    return g;
  }
};

// An MXFP8 cast from 16 bits: read 2 B, write 1 B and one E8M0 scale a block of 32, the scales
// read and written again into cuBLAS's blocked layout: 3 + 3/32 B an element. Eager, along
// the contiguous dimension, ATen op by op as float8's (abs 4, the blocks' amax 2, to fp32 6,
// the division 8, the clamp 8, to float8 5: 33 B) with the same scale bytes.
constexpr double kCast = 3 + 3.0 / 32, kEager = 33 + 3.0 / 32;

// Llama 3 8B on one DGX B200, one sequence of 8192 tokens a GPU. Per fc2 (input T x f, output
// T x h, weight f x h) and micro-batch, compiled: forward the input and the weight along dim 0;
// backward the output gradient along both dimensions, the weight and the saved 16-bit input
// along dim 1 (torchao's Triton or CUDA kernel: as a dim-0 cast). With mx_dim1_cast=torch each
// dim-1 cast first copies its tensor transposed (read 2, write 2). Eager, the dim-0 casts are
// ATen's and the dim-1 casts torchao's kernels still.
TEST(TorchtitanMx, MxCastsEveryOperandAlongBothDimensions) {
  const TitanRun r{load_model("llama3-8b"), "dgx-b200", 8};
  const double T = 8192, h = 4096, f = 14336, W = f * h;
  const std::string s = "tp=1,dp=8,mbs=1,gbs=8,zero=3,recompute=none,precision=mxfp8";
  const Strategy compiled = r.resolved("torchtitan:compile=true", s);
  ASSERT_TRUE(compiled.torchao.active);
  ASSERT_TRUE(compiled.torchao.mx);
  const Graph g = r.graph(compiled);
  const Op& fc2 = layer_op(g, "mlp_fc2_fp8_casts");
  EXPECT_DOUBLE_EQ(fc2.bytes, kCast * T * f + kCast * W);
  EXPECT_DOUBLE_EQ(fc2.backward_bytes, kCast * T * f + 2 * kCast * T * h + kCast * W);
  EXPECT_EQ(layer_op(g, "mlp_fc2").dtype, DType::mxfp8);

  const Graph torch = r.graph(r.resolved("torchtitan:compile=true,mx_dim1_cast=torch", s));
  const Op& t = layer_op(torch, "mlp_fc2_fp8_casts");
  EXPECT_DOUBLE_EQ(t.bytes, fc2.bytes);
  EXPECT_DOUBLE_EQ(t.backward_bytes, fc2.backward_bytes + 4 * (T * f + T * h + W));

  const Graph eager = r.graph(r.resolved("torchtitan", s));
  const Op& e = layer_op(eager, "mlp_fc2_fp8_casts");
  EXPECT_DOUBLE_EQ(e.bytes, kEager * T * f + kEager * W);
  EXPECT_DOUBLE_EQ(e.backward_bytes, kCast * T * f + (kEager + kCast) * T * h + kCast * W);
  // Eager, wq, wk and wv each cast the norm's output (three dim-0 casts forward, three dim-1
  // casts backward); compiled, Inductor merges them into one.
  const double qkv_out = 4096 + 2 * 1024, Wq = h * qkv_out;
  EXPECT_DOUBLE_EQ(layer_op(eager, "qkv_fp8_casts").bytes, 3 * kEager * T * h + kEager * Wq);
  EXPECT_DOUBLE_EQ(layer_op(g, "qkv_fp8_casts").bytes, kCast * T * h + kCast * Wq);
}

// MXFP8 keeps what bf16 keeps (mx_mm saves the 16-bit input and weight), moves every
// collective in 16 bits (no amax all-reduce: the block scales are local), and FSDP2's float8
// all-gather does not apply to it.
TEST(TorchtitanMx, MxKeepsSixteenBitInputsAndCommunicatesInSixteenBits) {
  const TitanRun r{load_model("llama3-8b"), "dgx-b200", 8};
  const double T = 8192, h = 4096;
  const std::string tp = "tp=2,dp=4,mbs=1,gbs=8,sp=true,zero=3,recompute=none,precision=";
  const Strategy mx = r.resolved("torchtitan", tp + "mxfp8");
  EXPECT_DOUBLE_EQ(numerics(mx).kept_input_bytes(), 2);
  EXPECT_FALSE(numerics(mx).amax_reduction);
  const Graph g = r.graph(mx);
  EXPECT_DOUBLE_EQ(layer_op(g, "tp_all_gather").bytes, 2 * T * h);
  EXPECT_DOUBLE_EQ(layer_op(g, "tp_reduce_scatter").backward_bytes, 0);
  EXPECT_EQ(find_op(g, "tp_input_amax_all_reduce"), nullptr);
  auto kept = [&](const std::string& precision) {
    return layer_activation_bytes(r.m, r.resolved("torchtitan", tp + precision),
                                  AttentionKernel::flash, Recompute::none);
  };
  EXPECT_DOUBLE_EQ(kept("mxfp8"), kept("bf16"));
  const Strategy gathered = r.resolved("torchtitan:compile=true,float8_all_gather=true",
                                       "tp=1,dp=8,mbs=1,gbs=8,zero=3,precision=mxfp8");
  EXPECT_FALSE(gathered.torchao.weight_gather);
}

// Where torchtitan refuses MXFP8, or shardcost does not price it, one line each: a part
// without MX GEMMs (Hopper), tensor parallelism under torch.compile (torchtitan's MX
// converter asserts against the pair), torchao's NVFP4, LoRA.
TEST(TorchtitanMx, RefusesWhatTorchtitanOrShardcostDoesNotRun) {
  const TitanRun h100{load_model("llama3-8b"), "dgx-h100", 8};
  EXPECT_NE(input_error_of([&] {
              h100.resolved("torchtitan:compile=true", "dp=8,gbs=8,precision=mxfp8");
            }).find("mxfp8"),
            std::string::npos);
  const Software tt = software_preset("torchtitan");
  Software compiled = tt;
  compiled.compile = true;
  const Strategy tp = parse_strategy("tp=2,dp=4,gbs=8,precision=mxfp8", 8);
  EXPECT_NE(unsupported(compiled, tp).value_or("").find("tensor parallelism under torch.compile"),
            std::string::npos);
  EXPECT_FALSE(unsupported(tt, tp));  // eager TP runs
  EXPECT_NE(unsupported(tt, parse_strategy("dp=8,gbs=8,precision=nvfp4", 8))
                .value_or("")
                .find("torchao's nvfp4 training is not modelled"),
            std::string::npos);
  EXPECT_NE(unsupported(tt, parse_strategy("dp=8,gbs=8,precision=mxfp8,lora=16", 8))
                .value_or("")
                .find("LoRA over torchao's mxfp8 linears"),
            std::string::npos);
  EXPECT_NE(input_error_of([] {
              parse_software("nemo:mx_dim1_cast=cuda");
            }).find("trains FP8 through Transformer Engine"),
            std::string::npos);
  EXPECT_NE(input_error_of([] { parse_mx_dim1_cast("cutlass"); }).find("use triton, cuda"),
            std::string::npos);
  for (const char* text : {"torchtitan:mx_dim1_cast=cuda", "torchtitan:quantize_experts=true",
                           "torchtitan:compile=true,mx_dim1_cast=torch"})
    EXPECT_EQ(software_text(parse_software(text)), text);
}

// torchtitan's float8 and MX converters swap nn.Linear modules; the routed experts' 3-D
// weights go through torch._grouped_mm in bf16 unless a grouped-GEMM converter quantizes them
// (quantize_experts). Mixtral 8x7B, one sequence of 4096 tokens a GPU, top 2: 8,192 routed
// tokens over 8 local experts, each expert's fc1 4096 x 28672 (w1 and w3).
TEST(TorchtitanMx, ExpertsStayInSixteenBitsUnlessTheirConverterQuantizesThem) {
  const TitanRun r{load_model("mixtral-8x7b"), "dgx-b200", 8};
  const std::string s = "tp=1,dp=8,mbs=1,gbs=8,zero=3,recompute=full,precision=mxfp8";
  const double routed = 4096 * 2, h = 4096, fc1 = 2 * 14336, experts = 8;
  const Graph plain = r.graph(r.resolved("torchtitan:compile=true", s));
  EXPECT_EQ(layer_op(plain, "expert_fc1").dtype, DType::bf16);
  EXPECT_EQ(find_op(plain, "expert_fc1_fp8_casts"), nullptr);
  EXPECT_EQ(layer_op(plain, "qkv").dtype, DType::mxfp8);
  const Graph quantized = r.graph(r.resolved("torchtitan:compile=true,quantize_experts=true", s));
  EXPECT_EQ(layer_op(quantized, "expert_fc1").dtype, DType::mxfp8);
  const Op& mx = layer_op(quantized, "expert_fc1_fp8_casts");
  const double W = experts * h * fc1;
  EXPECT_DOUBLE_EQ(mx.bytes, kCast * routed * h + kCast * W);
  EXPECT_DOUBLE_EQ(mx.backward_bytes, kCast * routed * h + 2 * kCast * routed * fc1 + kCast * W);

  // The experts' weights count among the quantized linears' only when quantized (what FSDP2's
  // float8 all-gather would move in one byte): the attention's alone here.
  const Block* a = nullptr;
  const Block* b = nullptr;
  for (const Block& x : plain.blocks) a = x.pin == Block::Pin::body ? &x : a;
  for (const Block& x : quantized.blocks) b = x.pin == Block::Pin::body ? &x : b;
  ASSERT_TRUE(a && b);
  EXPECT_DOUBLE_EQ(b->fp8_params - a->fp8_params, 3 * experts * h * 14336);  // w1, w3, w2
  EXPECT_DOUBLE_EQ(a->fp8_params, h * (4096 + 2 * 1024) + 4096 * h);         // qkv and wo

  // Eager, the experts' MXFP8 casts are torchao's kernels still (the linears' dim-0 casts
  // ATen's).
  const Graph eager = r.graph(r.resolved("torchtitan:quantize_experts=true", s));
  EXPECT_DOUBLE_EQ(layer_op(eager, "expert_fc1_fp8_casts").bytes, mx.bytes);

  // torchao's float8 grouped GEMM (on Hopper) is rowwise whatever the linears' recipe: forward
  // the tokens and the weights along their inner dimension (3 B compiled); backward the output
  // gradient so (3 B), the weights transposed by two Triton kernels (scales, then the cast:
  // 5 B), and the output gradient and the 16-bit tokens each cast per expert group by a
  // two-pass kernel (5 B).
  const TitanRun hopper{load_model("mixtral-8x7b"), "dgx-h100", 8};
  const Graph f8 =
      hopper.graph(hopper.resolved("torchtitan:compile=true,quantize_experts=true",
                                   "tp=1,dp=8,mbs=1,gbs=8,zero=3,recompute=full,precision=fp8"));
  const Op& row = layer_op(f8, "expert_fc1_fp8_casts");
  EXPECT_EQ(layer_op(f8, "expert_fc1").dtype, DType::fp8);
  EXPECT_DOUBLE_EQ(row.bytes, 3 * routed * h + 3 * W);
  EXPECT_DOUBLE_EQ(row.backward_bytes, 5 * routed * h + 8 * routed * fc1 + 5 * W);
  // Its converter refuses pipeline and context parallelism.
  Software q = software_preset("torchtitan");
  q.quantize_experts = true;
  EXPECT_NE(unsupported(q, parse_strategy("pp=2,dp=4,gbs=64,precision=fp8", 8))
                .value_or("")
                .find("without pipeline or context parallelism"),
            std::string::npos);
  EXPECT_FALSE(unsupported(q, parse_strategy("pp=2,dp=4,gbs=64,precision=mxfp8", 8)));
}

// torchtitan from 2025-09-30 to 2026-02-23 applied its float8 TP styles only for the "float8"
// converter, not "quantize.linear.float8" (float8_tp=false): the plain styles gather the
// 16-bit input (no amax all-reduce first), and each linear casts the whole gathered input.
TEST(TorchtitanMx, Float8WithoutItsTpStylesGathersSixteenBits) {
  const TitanRun r{load_model("llama3-8b"), "dgx-h100", 8};
  const double T = 8192, h = 4096, out = 14336, W = h * out;  // fc1's half of 2f over tp 2
  const std::string s = "tp=2,dp=4,mbs=1,gbs=8,sp=true,zero=3,recompute=none,precision=fp8";
  const Graph plain = r.graph(r.resolved("torchtitan:compile=true,float8_tp=false", s));
  EXPECT_DOUBLE_EQ(layer_op(plain, "tp_all_gather").bytes, 2 * T * h);
  EXPECT_EQ(find_op(plain, "tp_input_amax_all_reduce"), nullptr);
  EXPECT_DOUBLE_EQ(layer_op(plain, "tp_reduce_scatter").backward_bytes, 0);
  EXPECT_DOUBLE_EQ(layer_op(plain, "mlp_fc1_fp8_casts").bytes, 5 * T * h + 5 * W);
  const Graph styled = r.graph(r.resolved("torchtitan:compile=true", s));
  EXPECT_DOUBLE_EQ(layer_op(styled, "tp_all_gather").bytes, 1 * T * h);
  EXPECT_EQ(software_text(parse_software("torchtitan:float8_tp=false")),
            "torchtitan:float8_tp=false");
}

// torchtitan's expert parallelism: the routed experts over ep ranks folded from the data-
// parallel, context- and tensor-parallel ranks (etp=1), every copy sent by the all-to-all and
// exposed (no overlap in eager mode); its DeepEP backend as the flex dispatcher.
TEST(TorchtitanMx, ExpertParallelismRunsUnderTorchtitan) {
  const Model m = load_model("mixtral-8x7b");
  const Cluster c = load_cluster("dgx-h100", 16);
  EstimateOptions standard, deepep;
  standard.software = parse_software("torchtitan:compile=true");
  deepep.software = parse_software("torchtitan:compile=true,ep_dispatcher=flex");
  const Strategy s = parse_strategy("tp=1,dp=16,ep=8,mbs=1,gbs=16,zero=3,recompute=full", 16);
  const Estimate a = estimate(m, c, s, standard), b = estimate(m, c, s, deepep);
  EXPECT_GT(test_models::part(a, "ep_comm"), 0);
  EXPECT_LE(test_models::part(b, "ep_comm"), test_models::part(a, "ep_comm"));
  // etp=1 folds the tensor-parallel ranks into the experts' ranks (ep over tp x dp).
  const Strategy folded =
      parse_strategy("tp=2,dp=8,ep=8,etp=1,sp=true,mbs=1,gbs=8,zero=3,recompute=full", 16);
  EXPECT_GT(estimate(m, c, folded, standard).step_time_s, 0);
  EXPECT_NE(
      unsupported(standard.software, parse_strategy("tp=1,dp=16,ep=8,ep_overlap=true,gbs=16", 16))
          .value_or("")
          .find("no expert-parallel all-to-all overlap"),
      std::string::npos);
}

// torchtitan's per-op policy in MoE layers (its default selective recomputation): the
// all-to-alls' outputs are saved (nothing sent again), the router, the reorders and the
// experts' grouped GEMMs recomputed. Mixtral 8x7B on 16 GPUs at ep 8, one sequence of 4096
// tokens: a layer keeps its input, wq's and wv's outputs, attention's output and statistics,
// and the copies received and sent back (T x top-2 x the busiest rank's load each).
TEST(TorchtitanMx, PerOpPolicyInMoeLayersKeepsTheAllToAllOutputs) {
  const TitanRun r{load_model("mixtral-8x7b"), "dgx-h100", 16};
  const std::string s = "tp=1,dp=16,ep=8,mbs=1,gbs=16,zero=3,recompute=selective,precision=";
  const Strategy bf16 = r.resolved("torchtitan:compile=true", s + "bf16");
  const Graph g = r.graph(bf16);
  for (const char* name : {"moe_router", "moe_router_topk", "moe_permute", "expert_fc1",
                           "expert_swiglu", "expert_fc2", "moe_unpermute"}) {
    EXPECT_TRUE(layer_op(g, name).selective) << name;
    EXPECT_DOUBLE_EQ(layer_op(g, name).selective_share, 1) << name;
  }
  EXPECT_FALSE(layer_op(g, "ep_dispatch").selective);
  EXPECT_FALSE(layer_op(g, "ep_combine").selective);
  const double T = 4096, h = 4096, q = 4096, kv = 1024, heads = 32;
  // The copies received (the busiest rank's load) and the rank's own sent back (no load).
  const double received = T * 2 * r.m.moe.load_factor(), sent = T * 2;
  const double expected =
      2 * T * h + 2 * T * (q + kv) + 2 * T * q + 4 * heads * T + 2 * (received + sent) * h;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(r.m, bf16, AttentionKernel::flash, Recompute::selective),
                   expected);
  // Under float8 whose policy saves no torch._scaled_mm output, wq's and wv's are not kept.
  const Strategy fp8 = r.resolved("torchtitan:compile=true", s + "fp8");
  EXPECT_DOUBLE_EQ(layer_activation_bytes(r.m, fp8, AttentionKernel::flash, Recompute::selective),
                   expected - 2 * T * (q + kv));
}

// Latent attention under the per-op policy (torchtitan's DeepSeek-V3 configs), at tp = 1: the
// alternation runs over wq_a, wq_b, wkv_a, wkv_b, wo (query compression: DeepSeek-V3's 1,536
// ranks), keeping wq_a's, wkv_a's and wo's outputs; the MLP's count then starts at six, so the
// shared experts and dense MLPs keep w3's output and recompute w1 and w2. The norms, the
// rotary step and K's assembly run again.
TEST(TorchtitanMx, PerOpPolicyWithLatentAttentionAlternatesInRunOrder) {
  const TitanRun r{load_model("deepseek-v3"), "dgx-h100", 64};
  const std::string s = "tp=1,dp=64,ep=8,mbs=1,gbs=64,zero=3,recompute=selective";
  const Strategy st = r.resolved("torchtitan", s);
  ASSERT_FALSE(transformer_workload(r.m)->check(st));
  const Graph g = r.graph(st);
  EXPECT_FALSE(layer_op(g, "mla_q_down").selective);
  EXPECT_DOUBLE_EQ(layer_op(g, "mla_q_up").selective_share, 1);
  EXPECT_FALSE(layer_op(g, "mla_kv_down").selective);
  EXPECT_DOUBLE_EQ(layer_op(g, "mla_kv_up").selective_share, 1);
  EXPECT_FALSE(layer_op(g, "attention_proj").selective);
  for (const char* name : {"mla_q_norm", "mla_kv_norm", "mla_rope_and_k"})
    EXPECT_TRUE(layer_op(g, name).selective) << name;
  // The shared expert's fused w1/w3: w1 recomputed, w3 kept; w2 recomputed.
  EXPECT_DOUBLE_EQ(layer_op(g, "shared_expert_fc1").selective_share, 0.5);
  EXPECT_DOUBLE_EQ(layer_op(g, "shared_expert_fc2").selective_share, 1);
  const Mla& a = r.m.mla;
  const double T = 4096, h = 7168, heads = 128, fs = 2048;
  const double kept = a.q_lora_rank + (a.kv_lora_rank + a.qk_rope_head_dim) + h + fs;
  const double routed = T * 8 * r.m.moe.load_factor() + T * 8;
  const LayerKind moe_layer{Mixer::attention, Ffn::moe};
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(r.m, st, AttentionKernel::flash, Recompute::selective,
                             MicroBatch{1, T, T * T}, moe_layer),
      2 * T * h + 2 * T * kept + 2 * T * heads * a.v_head_dim + 4 * heads * T + 2 * routed * h);
  // Under TP torchtitan's MLA differs (its down projections replicated): refused.
  EXPECT_TRUE(transformer_workload(r.m)->check(
      r.resolved("torchtitan", "tp=2,dp=32,ep=8,sp=true,mbs=1,gbs=64,zero=3,recompute=selective")));
}

// Under torchtitan's tensor parallelism an MoE layer sits inside one all-gather and one
// reduce-scatter like a dense MLP (PrepareModuleInputOutput): the router scores all T tokens;
// with etp=1 the experts' ranks split the routed tokens over the TP group
// (ReordererSequenceParallel), with etp=tp every rank sends all T x k copies and computes its
// slice of each expert, nothing gathered after the all-to-all. Mixtral 8x7B, T = 4096, tp 2.
TEST(TorchtitanMx, TensorParallelMoeLayersSitInsideTheTpCollectives) {
  const TitanRun r{load_model("mixtral-8x7b"), "dgx-h100", 16};
  const double T = 4096, h = 4096, f = 14336;
  const std::string base = "tp=2,dp=8,ep=8,sp=true,mbs=1,gbs=8,zero=3,recompute=full,etp=";
  auto ops = [&](const std::string& etp) { return r.graph(r.resolved("torchtitan", base + etp)); };
  const Graph one = ops("1"), two = ops("2");
  for (const Graph* g : {&one, &two}) {
    EXPECT_EQ(layer_op(*g, "moe_router").gemm.m, T);
    EXPECT_EQ(find_op(*g, "moe_tp_all_gather"), nullptr);
  }
  // Each rank sends its T/2 tokens' two copies (etp=1), or all T tokens' (etp=2), in bf16.
  const double load = r.m.moe.load_factor();
  EXPECT_DOUBLE_EQ(layer_op(one, "ep_dispatch").bytes, 2 * (T / 2) * 2 * load * h);
  EXPECT_DOUBLE_EQ(layer_op(two, "ep_dispatch").bytes, 2 * T * 2 * load * h);
  EXPECT_EQ(layer_op(one, "expert_fc1").gemm.n, 2 * f);
  EXPECT_EQ(layer_op(two, "expert_fc1").gemm.n, f);
  // Megatron-core's dispatcher instead routes each rank's sequence shard.
  const Strategy megatron =
      with_precision(parse_strategy(base + "1", 16), parse_software("megatron-core"),
                     load_cluster("dgx-h100", 16));
  const Graph routed_by_shard = r.graph(megatron);
  EXPECT_EQ(layer_op(routed_by_shard, "moe_router").gemm.m, T / 2);
}

}  // namespace
}  // namespace shardcost
