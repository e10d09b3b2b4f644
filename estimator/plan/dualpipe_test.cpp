// DualPipe (issue 20): DeepSeek-V3's bidirectional pipeline schedule, priced by its paper's
// Table 2 (bubble, parameters, activations) and its overlap of communication with compute;
// and selective recomputation by module (Megatron-core's --recompute-modules).
#include <gtest/gtest.h>

#include <string>

#include "plan/estimate_internal.h"
#include "plan/memory.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/plan.h"
#include "test_models.h"
#include "workload/transformer.h"

namespace shardcost {
namespace {

using test_models::memory_part;

double part(const Estimate& e, const std::string& name) {
  for (const auto& p : e.time)
    if (p.name == name) return p.seconds;
  return 0;
}

// Eight identical stages of GEMMs: no head, no embedding, so every stage prices alike.
MlpSpec eight_pairs() {
  MlpSpec spec;
  spec.name = "mlp-8x16k";
  spec.width = 4096;
  spec.hidden.assign(8, 16384);
  spec.tokens_per_sample = 2048;
  return spec;
}

// DeepSeek's stack (the preset that runs DualPipe), in bf16.
EstimateOptions deepseek_stack() {
  EstimateOptions o;
  o.software = software_preset("deepseek-v3");
  return o;
}

Estimate on_mlp(const std::string& strategy) {
  const auto w = mlp_workload(eight_pairs());
  return estimate(*w, load_cluster("dgx-h100", 8),
                  plan_of(parse_strategy(strategy + ",precision=bf16", 8)), deepseek_stack());
}

// A micro-batch's seconds on the pace-setting device: every part but the fill and drain and
// the once-a-step data-parallel reduction and optimizer.
double pace_of(const Estimate& e, double micro_batches) {
  double once = part(e, "pipeline_bubble") + part(e, "dp_comm") + part(e, "optimizer");
  return (e.step_time_s - once) / micro_batches;
}

TEST(DualPipe, BubbleIsThePapersFormulaAndFarBelow1F1B) {
  const Estimate one = on_mlp("pp=8,mbs=1,gbs=16");
  const Estimate dual = on_mlp("pp=8,mbs=1,gbs=16,schedule=dualpipe");
  const double m = 16;
  // 1F1B: every other stage's work once, about (pp - 1) paces (the last stage sends nothing
  // on, so its pace is a little shorter).
  EXPECT_NEAR(part(one, "pipeline_bubble") / pace_of(one, m), 7, 0.2);
  // DualPipe: (pp/2 - 1)(F&B + B - 3W) with F&B = F + B, B a full backward chunk and W its
  // weight-gradient part. A GEMM's two gradients cost alike, so F = W = B/2 = a third of the
  // pace (the passes' backward adds to B alone): about (pp/2 - 1) x 2/3 paces, against 1F1B's
  // pp - 1.
  const double ratio = part(dual, "pipeline_bubble") / pace_of(dual, m);
  EXPECT_GT(ratio, 3 * 0.6);
  EXPECT_LT(ratio, 3 * 0.75);
  EXPECT_LT(dual.step_time_s, one.step_time_s);
}

TEST(DualPipe, EachDeviceHoldsTwoStagesAndPpPlusOneMicroBatches) {
  const Estimate one = on_mlp("pp=8,mbs=1,gbs=16");
  const Estimate dual = on_mlp("pp=8,mbs=1,gbs=16,schedule=dualpipe");
  EXPECT_NEAR(memory_part(dual, "weights") / memory_part(one, "weights"), 2, 1e-9);
  EXPECT_NEAR(memory_part(dual, "optimizer_state") / memory_part(one, "optimizer_state"), 2, 1e-9);
  // 1F1B's first stage holds pp micro-batches of one stage; a DualPipe device pp + 1 of its two.
  EXPECT_NEAR(memory_part(dual, "activations") / memory_part(one, "activations"), 9.0 / 8, 1e-9);
}

TEST(DualPipe, ExpertAllToAllsHideBehindThePairedChunksCompute) {
  const Model m = load_model("deepseek-v3");
  const Cluster c = load_cluster("hgx-h800", 2048);
  const std::string base = "tp=1,pp=16,dp=128,ep=64,mbs=1,gbs=15360,zero=1,precision=fp8";
  const Estimate one = estimate(m, c, parse_strategy(base, 2048), deepseek_stack());
  const Estimate dual =
      estimate(m, c, parse_strategy(base + ",schedule=dualpipe", 2048), deepseek_stack());
  // Per micro-batch the all-to-alls outlast a stage's compute on H800's 50 GB/s network: what
  // outlasts it stays, the rest costs only the SMs its kernels take.
  EXPECT_LT(part(dual, "ep_comm"), 0.6 * part(one, "ep_comm"));
  EXPECT_GT(part(dual, "ep_comm"), 0);
  EXPECT_LT(dual.step_time_s, one.step_time_s);
}

// The device holding the first and last stages keeps a table they tie once (DeepSeek-V3 Sec.
// 3.2.3): GPT-3 1.3B ties its head to the embedding; on the pair of stages 0 and 3 the peak is
// the first stage plus the last without the head's copy, 50,257 x 2,048 parameters fewer.
TEST(DualPipe, ThePairOfTheFirstAndLastStagesHoldsATiedTableOnce) {
  const Model m = load_model("gpt3-1.3b");
  const Software sw = software_preset("deepseek-v3");
  const Strategy s =
      parse_strategy("tp=1,pp=4,dp=2,mbs=1,gbs=16,zero=1,schedule=dualpipe,precision=bf16", 8);
  Graph g;
  transformer_workload(m)->graph(s, sw.attention, g);
  const StageLayout layout(m.layers, s.pp);
  const double in_flight = 5.0 / 2;  // pp + 1 micro-batches over the pair
  const MemoryBreakdown first = stage_memory(g, s, sw, layout.span(0), 0, in_flight);
  StageSpan last = layout.span(3);
  const MemoryBreakdown apart = stage_memory(g, s, sw, last, 3, in_flight);
  last.shares_first = true;
  const MemoryBreakdown shared = stage_memory(g, s, sw, last, 3, in_flight);
  EXPECT_NEAR(apart.weights - shared.weights, 2.0 * 50257 * 2048, 1);
  const MemoryBreakdown peak = peak_stage_memory(g, s, sw, layout);
  EXPECT_DOUBLE_EQ(peak.weights, first.weights + shared.weights);
  EXPECT_DOUBLE_EQ(peak.gradients, first.gradients + shared.gradients);
}

// DeepSeek's stack caches the experts' SwiGLU inputs quantized where it trains quantized;
// with_precision carries the preset's choice into the strategy the workload reads.
TEST(DualPipe, DeepSeeksStackCachesSwigluInputsInFp8) {
  const Cluster c = load_cluster("hgx-h800", 2048);
  const Strategy fp8 = parse_strategy("tp=1,pp=16,ep=64,gbs=15360,precision=fp8", 2048);
  const Strategy bf16 = parse_strategy("tp=1,pp=16,ep=64,gbs=15360,precision=bf16", 2048);
  EXPECT_TRUE(with_precision(fp8, software_preset("deepseek-v3"), c).quantized_moe_act_input);
  EXPECT_FALSE(with_precision(bf16, software_preset("deepseek-v3"), c).quantized_moe_act_input);
  EXPECT_FALSE(with_precision(fp8, software_preset("megatron-core"), c).quantized_moe_act_input);
}

TEST(DualPipe, BadShapesAreOneLine) {
  auto why = [](const std::string& strategy) {
    return test_models::input_error_of([&] { (void)on_mlp(strategy); });
  };
  EXPECT_NE(why("pp=1,mbs=1,gbs=16,schedule=dualpipe").find("needs an even pp of at least 2"),
            std::string::npos);
  EXPECT_NE(why("pp=8,mbs=1,gbs=16,vpp=2,schedule=dualpipe").find("has no interleaving"),
            std::string::npos);
  EXPECT_NE(why("pp=8,mbs=1,gbs=4,schedule=dualpipe").find("even number of micro-batches"),
            std::string::npos);
  EXPECT_NE(test_models::input_error_of([] {
              (void)parse_strategy("pp=2,gbs=8,schedule=zb", 8);
            }).find("needs 1f1b, dualpipe or local"),
            std::string::npos);
  // Only DeepSeek's stack runs it.
  const auto w = mlp_workload(eight_pairs());
  EXPECT_NE(test_models::input_error_of([&] {
              (void)estimate(*w, load_cluster("dgx-h100", 8),
                             plan_of(parse_strategy("pp=8,mbs=1,gbs=16,schedule=dualpipe", 8)));
            }).find("megatron-core has no DualPipe schedule"),
            std::string::npos);
}

TEST(RecomputeModules, DropWhatTheyRecomputeAndPayItsForward) {
  const Model m = load_model("deepseek-v3");
  Strategy none = parse_strategy("tp=1,pp=16,ep=64,mbs=1,gbs=1024,zero=1,precision=fp8", 2048);
  Strategy mla = none;
  mla.recompute = Recompute::selective;
  mla.recompute_modules = kRecomputeMlaUpProj;
  const LayerKind moe{Mixer::attention, Ffn::moe};
  const MicroBatch mb{1, 4096, 4096.0 * 4096};
  const double kept_none =
      layer_activation_bytes(m, none, AttentionKernel::flash, Recompute::none, mb, moe);
  const double kept_mla =
      layer_activation_bytes(m, mla, AttentionKernel::flash, Recompute::selective, mb, moe);
  // Q and K of 128 x 192 and V of 128 x 128 per token, in 16 bits.
  EXPECT_DOUBLE_EQ(kept_none - kept_mla, 2.0 * 4096 * 128 * (2 * 192 + 128));
  // The norms' outputs (FP8 linear inputs: 1 B) and the experts' SwiGLU outputs (8 routed copies
  // of 2048, FP8: the fc2 input).
  Strategy all = mla;
  all.recompute_modules = kRecomputeLayernorm | kRecomputeMlaUpProj | kRecomputeMoeAct;
  const double kept_all =
      layer_activation_bytes(m, all, AttentionKernel::flash, Recompute::selective, mb, moe);
  EXPECT_DOUBLE_EQ(kept_mla - kept_all, 1.0 * 4096 * 7168 + 2.0 * 4096 * 7168 + 8.0 * 4096 * 2048);
  // Their forwards run again: recompute time appears, memory falls.
  const Cluster c = load_cluster("hgx-h800", 2048);
  const Estimate e_none = estimate(m, c, none);
  const Estimate e_all = estimate(m, c, all);
  EXPECT_EQ(part(e_none, "compute_recompute"), 0);
  EXPECT_GT(part(e_all, "compute_recompute"), 0);
  EXPECT_LT(e_all.memory_per_gpu_bytes, e_none.memory_per_gpu_bytes);
  EXPECT_EQ(
      to_string(all).find("recompute_modules=layernorm/mla_up_proj/moe_act") != std::string::npos,
      true);
}

TEST(RecomputeModules, BadModulesAreOneLine) {
  EXPECT_NE(test_models::input_error_of([] {
              (void)parse_strategy("tp=1,gbs=8,recompute=selective,recompute_modules=mlps", 8);
            })
                .find("needs modules from core_attn, layernorm, mla_up_proj, moe_act, mlp, moe and "
                      "shared_experts"),
            std::string::npos);
  const Model m = load_model("llama3-8b");
  EXPECT_NE(test_models::input_error_of([&] {
              (void)estimate(m, load_cluster("dgx-h100", 8),
                             parse_strategy("tp=8,gbs=8,recompute_modules=layernorm", 8));
            }).find("recompute_modules needs recompute=selective"),
            std::string::npos);
}

}  // namespace
}  // namespace shardcost
