#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost {
namespace {

double part(const Estimate& e, const std::string& name) {
  for (const auto& p : e.time)
    if (p.name == name) return p.seconds;
  ADD_FAILURE() << "no part " << name;
  return 0;
}

struct Llama70bOn64 : ::testing::Test {
  Model m = load_model("llama3-70b");
  Cluster c = load_cluster("dgx-h100", 64);
  Estimate run(const std::string& text) { return estimate(m, c, parse_strategy(text, 64)); }
};

TEST_F(Llama70bOn64, TheInterleavedBubbleIsNarayanansFraction) {
  // Narayanan et al. 2021, section 2.2.2: with p stages, v model chunks per stage and m
  // micro-batches, the interleaved 1F1B bubble is (p - 1) / (v m) of the ideal pipeline time.
  // Here p = 4, v = 5, m = 512 / (mbs 1 x dp 2) = 256. The first and last stages also hold the
  // embedding and the head, so the model's stages are not exactly equal: within 15 %.
  const Estimate e = run("tp=8,pp=4,mbs=1,gbs=512,vpp=5,recompute=selective,sp=true,zero=1");
  double pipeline = 0;
  for (const auto& p : e.time)
    if (p.name != "pipeline_bubble" && p.name != "dp_comm" && p.name != "optimizer")
      pipeline += p.seconds;
  EXPECT_NEAR(part(e, "pipeline_bubble") / pipeline, 3.0 / (5 * 256), 0.15 * 3.0 / (5 * 256));
  EXPECT_GT(part(e, "tp_comm"), 0);
  EXPECT_EQ(part(e, "cp_comm"), 0);
}

TEST(Estimate, SequenceParallelBackwardGathersEachColumnParallelInputAgain) {
  // Without async overlap every TP collective is exposed. Per layer and micro-batch the
  // forward runs 2 all-gathers and 2 reduce-scatters; the backward their 4 duals plus 2
  // re-gathers of the inputs for the weight gradients: 10 equal collectives. Full
  // recomputation repeats the forward's 4, so it adds 4/10 (4/8 without the re-gathers).
  const Model m = load_model("gpt3-13b");
  const Cluster c = load_cluster("dgx-a100", 8);
  EstimateOptions opt;
  // The 2021 stack's synchronous collectives, with sequence parallelism (which that stack
  // did not have) switched on: the mechanism under test, not a preset.
  opt.software = software_preset("megatron-lm-2021");
  opt.software.sequence_parallel = true;
  ASSERT_FALSE(opt.software.async_tp_backward);
  auto tp = [&](const char* recompute) {
    return part(
        estimate(m, c,
                 parse_strategy(fmt::format("tp=8,mbs=1,gbs=8,sp=true,recompute={}", recompute), 8),
                 opt),
        "tp_comm");
  };
  const double none = tp("none"), full = tp("full");
  // The embedding and head add a few unrecomputed collectives: slightly under 0.4.
  EXPECT_NEAR((full - none) / none, 0.4, 0.02);
}

// A preset runs only what its stack had: Megatron-LM of 2021 had no sequence parallelism,
// selective recomputation or distributed optimizer; that of 2022 no ZeRO-2/3, context or
// expert parallelism. estimate refuses the rest, and rank never proposes it.
TEST(Estimate, APresetRunsOnlyWhatItsStackHad) {
  const Model m = load_model("gpt3-13b");
  const Cluster c = load_cluster("dgx-a100", 64);
  EstimateOptions opt;
  opt.software = software_preset("megatron-lm-2021");
  for (const char* text : {"tp=8,mbs=1,gbs=64,sp=true", "tp=8,mbs=1,gbs=64,recompute=selective",
                           "tp=8,mbs=1,gbs=64,zero=1"})
    EXPECT_THROW(estimate(m, c, parse_strategy(text, 64), opt), InputError) << text;
  EXPECT_NO_THROW(estimate(m, c, parse_strategy("tp=8,mbs=1,gbs=64,recompute=full", 64), opt));
  RankOptions ro;
  ro.global_batch = 64;
  ro.top = 200;
  ro.estimate = opt;
  const RankResult r = rank(m, c, ro);
  ASSERT_FALSE(r.best.empty());
  for (const Estimate& e : r.best) {
    EXPECT_FALSE(e.strategy.sp) << to_string(e.strategy);
    EXPECT_EQ(e.strategy.zero, 0) << to_string(e.strategy);
    EXPECT_NE(e.strategy.recompute, Recompute::selective) << to_string(e.strategy);
  }
  ro.fixed = "sp=true";
  EXPECT_THROW(rank(m, c, ro), InputError);
  opt.software = software_preset("megatron-lm-2022");
  EXPECT_NO_THROW(estimate(m, c, parse_strategy("tp=8,mbs=1,gbs=64,sp=true,zero=1", 64), opt));
  EXPECT_THROW(estimate(m, c, parse_strategy("tp=8,mbs=1,gbs=64,zero=2", 64), opt), InputError);
  EXPECT_THROW(estimate(m, c, parse_strategy("tp=4,cp=2,mbs=1,gbs=64", 64), opt), InputError);
}

// ZeRO-2/3 with pipelining would reduce-scatter (and ZeRO-3 re-gather) every micro-batch;
// DeepSpeed refuses it, and no preset here runs it otherwise: refused, and never ranked.
TEST_F(Llama70bOn64, ZeroTwoAndThreeAreNotRunWithPipelines) {
  EXPECT_THROW(run("tp=8,pp=2,mbs=1,gbs=64,zero=3"), InputError);
  EXPECT_THROW(run("tp=8,pp=2,mbs=1,gbs=64,zero=2"), InputError);
  EXPECT_NO_THROW(run("tp=8,pp=2,mbs=1,gbs=64,zero=1"));
  EXPECT_NO_THROW(run("tp=8,mbs=1,gbs=64,zero=3"));
  RankOptions ro;
  ro.global_batch = 64;
  ro.top = 300;
  ro.fixed = "zero=3";
  const RankResult r = rank(m, c, ro);
  ASSERT_FALSE(r.best.empty());
  for (const Estimate& e : r.best) EXPECT_EQ(e.strategy.pp, 1) << to_string(e.strategy);
  EXPECT_GT(r.rejected.at("ZeRO-2/3 with pipeline parallelism"), 0);
}

TEST_F(Llama70bOn64, ThroughputFiguresAreConsistent) {
  const Estimate e = run("tp=8,pp=4,mbs=1,gbs=512,recompute=full,sp=true");
  EXPECT_NEAR(e.tokens_per_s, 512.0 * 8192 / e.step_time_s, 1e-6 * e.tokens_per_s);
  // Model FLOPs by the textbook count, by hand (Kaplan et al. 2020, and Narayanan et al. 2021
  // for attention over the full sequence): 6 N per token for the 80 layers' 855,638,016
  // weights (q, o: 8192^2 each; k, v: 8192 x 1024 each; gate, up, down: 3 x 8192 x 28672),
  // 12 L h s per token for attention's core, 6 h V per token for the logits (V = 128,256).
  const double tokens = 512.0 * 8192;
  const double n_layers = 80 * (2.0 * 8192 * 8192 + 2.0 * 8192 * 1024 + 3.0 * 8192 * 28672);
  EXPECT_DOUBLE_EQ(n_layers, 80 * 855638016.0);
  const double flops = tokens * (6 * n_layers + 12.0 * 80 * 8192 * 8192 + 6.0 * 8192 * 128256);
  EXPECT_NEAR(e.model_flops, flops, 1e-9 * flops);
  // MFU against the H100 SXM's dense bf16 peak (989.5 TFLOP/s, NVIDIA's datasheet halved).
  EXPECT_NEAR(e.mfu, flops / (e.step_time_s * 64 * 989.5e12), 1e-9);
}

TEST_F(Llama70bOn64, RecomputationTradesTimeForMemory) {
  const Estimate none = run("tp=8,pp=4,mbs=1,gbs=512,recompute=none,sp=true");
  const Estimate full = run("tp=8,pp=4,mbs=1,gbs=512,recompute=full,sp=true");
  EXPECT_GT(full.step_time_s, 1.2 * none.step_time_s);
  EXPECT_LT(full.memory_per_gpu_bytes, none.memory_per_gpu_bytes);
  EXPECT_EQ(part(none, "compute_recompute"), 0);
}

TEST_F(Llama70bOn64, MorePipelineMicroBatchesShrinkTheBubble) {
  const Estimate few = run("tp=8,pp=8,mbs=8,gbs=512");
  const Estimate many = run("tp=8,pp=8,mbs=1,gbs=512");
  EXPECT_LT(part(many, "pipeline_bubble") / many.step_time_s,
            part(few, "pipeline_bubble") / few.step_time_s);
  const Estimate interleaved = run("tp=8,pp=8,mbs=1,gbs=512,vpp=5");
  EXPECT_LT(part(interleaved, "pipeline_bubble"), part(many, "pipeline_bubble"));
}

TEST_F(Llama70bOn64, TooBigIsInfeasibleWithAReason) {
  const Estimate e = run("tp=1,pp=1,mbs=1,gbs=64");
  EXPECT_FALSE(e.feasible);
  EXPECT_NE(e.reason.find("GiB of 79.7 GiB"), std::string::npos) << e.reason;
  EXPECT_GT(e.step_time_s, 0);
}

TEST_F(Llama70bOn64, StrategiesThatDoNotDivideAreInputErrors) {
  EXPECT_THROW(run("tp=8,pp=3,dp=1,gbs=3"), InputError);                 // 8*3 != 64
  EXPECT_THROW(run("tp=8,pp=8,mbs=3,gbs=512"), InputError);              // 512 % 3
  EXPECT_THROW(run("tp=8,pp=8,vpp=3,gbs=36"), InputError);               // 36 micro-batches % pp 8
  EXPECT_THROW(run("tp=8,pp=4,gbs=64,layers=20/20/20"), InputError);     // 3 stages of 4
  EXPECT_THROW(run("tp=8,pp=4,gbs=64,layers=20/20/20/21"), InputError);  // 81 of 80
  EXPECT_THROW(run("tp=8,pp=4,gbs=64,layers=30/0/30/20"), InputError);   // an empty middle
  EXPECT_THROW(run("tp=8,pp=4,gbs=64,layers=20/x/20/20"), InputError);
  EXPECT_THROW(run("tp=8,ep=2"), InputError);  // dense model
  EXPECT_THROW(run("tp=1,sp=true"), InputError);
}

// Interleaving no longer needs pp*vpp to divide the layers: each stage's layers split into
// vpp chunks as evenly as they go (80 layers over 8 stages of 3 chunks: 4/3/3 each; 80 over
// 16 stages of 2: 3/2), and layers=a/b/c/... gives each stage's layers, the first or last
// possibly none. The default split priced as an explicit one is the same plan.
TEST_F(Llama70bOn64, UnevenInterleavingAndExplicitLayersPrice) {
  for (const char* text : {"tp=8,pp=8,vpp=3,gbs=64", "tp=4,pp=16,vpp=2,gbs=64"}) {
    const Estimate e = run(text);
    EXPECT_TRUE(std::isfinite(e.step_time_s) && e.step_time_s > 0) << text;
  }
  const Estimate even = run("tp=8,pp=4,gbs=64");
  const Estimate spelled = run("tp=8,pp=4,gbs=64,layers=20/20/20/20");
  EXPECT_DOUBLE_EQ(spelled.step_time_s, even.step_time_s);
  EXPECT_DOUBLE_EQ(spelled.memory_per_gpu_bytes, even.memory_per_gpu_bytes);
  EXPECT_NE(to_string(spelled.strategy).find(",layers=20/20/20/20"), std::string::npos);
  // The embedding's and the head's stages lighter: a layer fewer each, as Llama 3 405B ran.
  const Estimate lighter = run("tp=8,pp=4,gbs=64,layers=19/21/21/19");
  EXPECT_NE(lighter.step_time_s, even.step_time_s);
  // A stage of only the embedding (or the head) holds no layers.
  EXPECT_NO_THROW(run("tp=8,pp=4,gbs=64,layers=0/40/40/0"));
}

TEST(Estimate, SlowerNetworkSlowsDataParallelPlans) {
  const Model m = load_model("gpt3-13b");
  Cluster fast = load_cluster("dgx-h100", 64);
  Cluster slow = fast;
  slow.inter_node.bandwidth_Bps /= 4;
  const Strategy s = parse_strategy("tp=8,mbs=1,gbs=128", 64);
  EXPECT_GT(estimate(m, slow, s).step_time_s, estimate(m, fast, s).step_time_s);
}

TEST(Estimate, MixtureOfExpertsPaysForAllToAll) {
  const Model m = load_model("mixtral-8x7b");
  const Cluster c = load_cluster("dgx-h100", 64);
  const Estimate e = estimate(m, c, parse_strategy("tp=2,ep=8,mbs=1,gbs=256,sp=true", 64));
  EXPECT_GT(part(e, "ep_comm"), 0);
}

TEST(Estimate, ContextParallelRingIsMostlyHidden) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 16);
  const Estimate e = estimate(m, c, parse_strategy("tp=2,cp=4,mbs=1,gbs=16,sp=true", 16));
  EXPECT_GT(part(e, "cp_comm"), 0);
  EXPECT_LT(part(e, "cp_comm"), 0.2 * e.step_time_s);
}

// torchtitan's eager elementwise passes in a step (Software::eager_elementwise), by hand for
// Llama 3 8B on 64 A100-80GB at one sequence of 8192 tokens a GPU, no recomputation: per
// layer the two RMSNorms move 36 B an element more (40 against 4), RoPE 16 B an element of
// Q and K more (20 against the fused kernel's 4; 5,120 elements a token), repeat_kv 4 B (a new
// pass with its 2 us launch gap); the final norm 36 B more. At 2,039 x 0.834 x 0.665 GB/s.
TEST(Estimate, EagerPyTorchsElementwisePassesLengthenTorchtitansForward) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-a100", 64);
  EstimateOptions eager, fused;
  eager.software = software_preset("torchtitan");
  fused.software = parse_software("torchtitan:eager_elementwise=false");
  ASSERT_TRUE(eager.software.eager_elementwise);
  ASSERT_FALSE(software_preset("megatron-core").eager_elementwise);
  const Strategy s = parse_strategy("tp=1,mbs=1,gbs=64,zero=3,recompute=none,precision=bf16", 64);
  auto forward = [&](const EstimateOptions& o) {
    return part(estimate(m, c, s, o), "compute_forward");
  };
  const double t = 8192, h = 4096, bw = 2039e9 * 0.834 * 0.665;
  const double layer = (2 * 36 * t * h + 16 * t * 5120 + 4 * t * 5120) / bw + 2e-6;
  const double expected = 32 * layer + 36 * t * h / bw;
  EXPECT_NEAR(forward(eager) - forward(fused), expected, 1e-6);
  EXPECT_NEAR(expected, 0.0933, 0.0005);
}

}  // namespace
}  // namespace shardcost
