#include <fmt/format.h>
#include <gtest/gtest.h>

#include <climits>
#include <set>
#include <string>

#include "shardcost/divisors.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost {
namespace {

TEST(Rank, Llama3On64H100FindsFeasibleStrategiesWithinMemory) {
  RankOptions o;
  o.global_batch = 512;
  o.top = 10;
  const RankResult r = rank(load_model("llama3-70b"), load_cluster("dgx-h100", 64), o);
  ASSERT_GE(r.best.size(), 5u);
  for (size_t i = 0; i < r.best.size(); ++i) {
    EXPECT_TRUE(r.best[i].feasible);
    EXPECT_LE(r.best[i].memory_per_gpu_bytes, r.best[i].memory_capacity_bytes);
    EXPECT_LE(r.best[i].memory_capacity_bytes, 80.0 * 1024 * 1024 * 1024);  // the H100 80GB
    if (i) {
      EXPECT_LE(r.best[i - 1].step_time_s, r.best[i].step_time_s);
    }
  }
  int64_t rejected = 0;
  for (const auto& [reason, n] : r.rejected) rejected += n;
  EXPECT_EQ(r.evaluated, r.feasible + rejected);
  EXPECT_GT(r.rejected.at("exceeds device memory"), 0);
}

// On one node group the search prices its pipelined plans again with the layers per stage
// that balance their stages: DeepSeek-V3 on 16 stages of B300s (the Megatron-Bridge recipe's
// sizes), whose last stage holds the MTP module and two heads. The even split (3, 4 x 13, 3,
// 3) leaves that stage the slowest; the balanced one gives it fewer layers and is faster. With
// the option off (validate: the runs' own layouts) the split stays even.
TEST(Rank, BalancesAPipelineWhoseLastStageHoldsTheHeads) {
  RankOptions o;
  o.global_batch = 4096;
  o.top = 1;
  o.fixed = "tp=1,pp=16,ep=8,mbs=1,vpp=1,recompute=none,zero=1,precision=mxfp8";
  const Model m = load_model("deepseek-v3");
  const Cluster c = load_cluster("dgx-b300", 256);
  const RankResult r = rank(m, c, o);
  ASSERT_FALSE(r.best.empty());
  const std::vector<int>& split = r.best.front().strategy.stage_layers;
  ASSERT_EQ(split.size(), 16u);
  const std::vector<int> even = default_stage_layers(61, 16);
  EXPECT_LT(split.back(), even.back()) << to_string(r.best.front().strategy);
  o.balance_stages = false;
  const RankResult flat = rank(m, c, o);
  ASSERT_FALSE(flat.best.empty());
  EXPECT_TRUE(flat.best.front().strategy.stage_layers.empty());
  EXPECT_LT(r.best.front().step_time_s, 0.9 * flat.best.front().step_time_s);
  // The plan prices as rank found it through estimate.
  const Estimate again = estimate(m, c, r.best.front().strategy);
  EXPECT_NEAR(again.step_time_s, r.best.front().step_time_s, 1e-9);
}

TEST(Rank, FixPinsKeys) {
  RankOptions o;
  o.global_batch = 512;
  o.fixed = "tp=8,pp=4,recompute=full";
  const RankResult r = rank(load_model("llama3-70b"), load_cluster("dgx-h100", 64), o);
  ASSERT_FALSE(r.best.empty());
  for (const auto& e : r.best) {
    EXPECT_EQ(e.strategy.tp, 8);
    EXPECT_EQ(e.strategy.pp, 4);
    EXPECT_EQ(e.strategy.recompute, Recompute::full);
  }
}

TEST(Rank, MemoryObjectiveSortsByMemory) {
  RankOptions o;
  o.global_batch = 64;
  o.objective = Objective::memory;
  const RankResult r = rank(load_model("llama3-8b"), load_cluster("dgx-h100", 8), o);
  ASSERT_GE(r.best.size(), 2u);
  for (size_t i = 1; i < r.best.size(); ++i)
    EXPECT_LE(r.best[i - 1].memory_per_gpu_bytes, r.best[i].memory_per_gpu_bytes);
}

TEST(Rank, NothingFitsIsAnEmptyResultNotAnError) {
  RankOptions o;
  o.global_batch = 8;
  const RankResult r = rank(load_model("llama3-405b"), load_cluster("dgx-h100", 8), o);
  EXPECT_TRUE(r.best.empty());
  EXPECT_EQ(r.feasible, 0);
  EXPECT_GT(r.evaluated, 0);
}

// A plan whose need is above the capacity by less than the memory model's uncertainty is
// refused by default and kept when the run is known to have run (validate's
// near_limit_fits); one above it by more is refused either way.
TEST(Rank, ANeedWithinTheMemoryModelsUncertaintyFitsOnlyForARunThatRan) {
  const Model m = load_model("llama3-8b");
  RankOptions o;
  o.global_batch = 64;
  o.top = 1;
  o.fixed = "tp=1,pp=1,dp=8,cp=1,mbs=1,vpp=1,recompute=none,sp=false,zero=1";
  const Estimate e =
      estimate(m, load_cluster("dgx-h100", 8), parse_strategy(o.fixed + ",gbs=64", 8));
  for (const double over : {1.02, 1.04}) {
    Cluster c = load_cluster("dgx-h100", 8);
    c.groups.front().device.memory_bytes = e.memory_per_gpu_bytes / over;
    EXPECT_TRUE(rank(m, c, o).best.empty()) << over;
    o.near_limit_fits = true;
    const RankResult r = rank(m, c, o);
    o.near_limit_fits = false;
    if (over < 1 + kMemoryVerdictUncertainty) {
      ASSERT_EQ(r.best.size(), 1u);
      EXPECT_NEAR(r.best.front().step_time_s, e.step_time_s, 1e-12);
      EXPECT_TRUE(r.best.front().memory_near_limit);
    } else {
      EXPECT_TRUE(r.best.empty()) << over;
    }
  }
}

// Selective recomputation is priced with the pinned modules, or the preset's (torchtitan's
// per-op policy), not attention's core whatever was asked.
TEST(Rank, SelectiveRecomputationRecomputesThePinnedOrThePresetsModules) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-a100", 8);
  RankOptions o;
  o.global_batch = 16;
  o.top = 1;
  o.fixed = "recompute=selective,recompute_modules=layernorm";
  RankResult r = rank(m, c, o);
  ASSERT_EQ(r.best.size(), 1u);
  EXPECT_EQ(r.best.front().strategy.recompute_modules, kRecomputeLayernorm);
  o.fixed = "recompute=selective";
  o.estimate.software = software_preset("torchtitan");
  r = rank(m, c, o);
  ASSERT_EQ(r.best.size(), 1u);
  EXPECT_EQ(r.best.front().strategy.recompute_modules, kRecomputeOps);
}

// Unpinned, the search tries selective recomputation wherever a module set changes something:
// the preset's (attention's core, under Megatron-LM 2022's unfused attention), and for MoE and
// MLA models the modules their recipes recompute; each candidate says which it recomputes.
TEST(Rank, TheSearchTriesEverySelectiveSetThatChangesSomething) {
  auto recomputes_seen = [](const Model& m, const Cluster& c, const char* preset, int gbs,
                            const char* fixed) {
    RankOptions o;
    o.global_batch = gbs;
    o.top = 1000000;
    o.fixed = fixed;
    o.estimate.software = software_preset(preset);
    std::set<std::pair<Recompute, unsigned>> seen;
    for (const Estimate& e : rank(m, c, o).best)
      seen.insert({e.strategy.recompute, e.strategy.selective_modules()});
    return seen;
  };
  const auto gpt = recomputes_seen(load_model("gpt3-1.3b"), load_cluster("dgx-a100", 8),
                                   "megatron-lm-2022", 16, "tp=1,pp=1,mbs=2");
  EXPECT_TRUE(gpt.count({Recompute::selective, kRecomputeCoreAttn})) << gpt.size();
  EXPECT_TRUE(gpt.count({Recompute::none, 0u}));
  EXPECT_TRUE(gpt.count({Recompute::full, 0u}));
  const auto ds = recomputes_seen(load_model("deepseek-v3"), load_cluster("gb200-nvl72", 256),
                                  "nemo", 4096, "tp=1,pp=4,vpp=4,ep=64,mbs=1");
  for (unsigned m : {unsigned{kRecomputeMlaUpProj}, unsigned{kRecomputeMoeAct},
                     unsigned{kRecomputeMlaUpProj | kRecomputeMoeAct}})
    EXPECT_TRUE(ds.count({Recompute::selective, m})) << m;
  EXPECT_FALSE(ds.count({Recompute::selective, kRecomputeCoreAttn}));  // fused: no change
  // On experts without MLA, MLA's and the experts' modules together mark what the experts'
  // alone do: searched once, not listed twice as the same plan.
  const auto moe = recomputes_seen(load_model("mixtral-8x7b"), load_cluster("dgx-h100", 16),
                                   "megatron-core", 64, "tp=2,pp=1,ep=8,mbs=1");
  EXPECT_TRUE(moe.count({Recompute::selective, kRecomputeMoeAct}));
  EXPECT_FALSE(moe.count({Recompute::selective, kRecomputeMlaUpProj | kRecomputeMoeAct}));
  EXPECT_FALSE(moe.count({Recompute::selective, kRecomputeMlaUpProj}));
}

TEST(Rank, RanksMixtureOfExpertsOverExpertParallelism) {
  RankOptions o;
  o.global_batch = 256;
  const RankResult r = rank(load_model("mixtral-8x7b"), load_cluster("dgx-h100", 32), o);
  ASSERT_FALSE(r.best.empty());
  bool saw_ep = false;
  for (const auto& e : r.best) saw_ep |= e.strategy.ep > 1;
  EXPECT_TRUE(saw_ep);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

TEST(GemmShapes, CoverForwardAndBothGradientsOnce) {
  const Model m = load_model("llama3-8b");
  Strategy s;
  s.tp = 2;
  s.mbs = 1;
  const auto shapes = gemm_shapes(m, s);
  auto find = [&](const std::string& name) -> const GemmShape* {
    for (const auto& g : shapes)
      if (g.name == name) return &g.shape;
    return nullptr;
  };
  const GemmShape* qkv = find("qkv");
  ASSERT_NE(qkv, nullptr);
  // 8192 tokens; (32 + 2*8) heads of 128 split over tp=2; hidden 4096.
  EXPECT_EQ(*qkv, (GemmShape{8192, 24 * 128, 4096, 1}));
  ASSERT_NE(find("qkv.wgrad"), nullptr);
  EXPECT_EQ(*find("qkv.wgrad"), (GemmShape{4096, 24 * 128, 8192, 1}));
  ASSERT_NE(find("lm_head"), nullptr);
  EXPECT_EQ(find("lm_head")->n, 128256 / 2);
  for (size_t i = 0; i < shapes.size(); ++i)
    for (size_t j = i + 1; j < shapes.size(); ++j) EXPECT_NE(shapes[i].shape, shapes[j].shape);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

TEST(Divisors, AscendingUpToTheLimitForEveryInt) {
  EXPECT_EQ(divisors(12, 6), (std::vector<int>{1, 2, 3, 4, 6}));
  EXPECT_EQ(divisors(36, 36), (std::vector<int>{1, 2, 3, 4, 6, 9, 12, 18, 36}));
  // INT_MAX is prime: the loop must not step past it (it did: d + 1 overflowed).
  EXPECT_EQ(divisors(INT_MAX, INT_MAX), (std::vector<int>{1, INT_MAX}));
  EXPECT_TRUE(divisors(0, 10).empty());
}

// A global batch of INT_MAX sequences crashed rank with SIGFPE after 10 s; now it is one clear
// line, and the largest allowed prime global batch is searched at once (its only micro-batch
// sizes, 1 and itself, capped at kMaxMicroBatch).
TEST(Rank, AHugeGlobalBatchIsRefusedAndTheLargestAllowedIsBounded) {
  const Model m = load_model("gpt3-1.3b");
  const Cluster c = load_cluster("dgx-a100", 1);
  RankOptions o;
  o.global_batch = INT_MAX;
  EXPECT_THROW(rank(m, c, o), InputError);
  o.global_batch = 16777213;  // prime, below kMaxGlobalBatch
  const RankResult r = rank(m, c, o);
  EXPECT_GT(r.feasible, 0);
  for (const auto& e : r.best) EXPECT_EQ(e.strategy.mbs, 1);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// Issue 20: today's MoE on rack-scale systems. DeepSeek-V3 in FP8 on 4 GB200 NVL72 racks.
TEST(RankFamilies, DeepSeekV3OnNvl72KeepsExpertParallelismInsideTheNvlinkDomain) {
  RankOptions o;
  o.global_batch = 2304;
  o.top = 5;
  o.fixed = "precision=fp8";
  const Cluster nvl72 = load_cluster("gb200-nvl72", 288);
  ASSERT_EQ(nvl72.groups.front().domain_gpus(), 72);
  const RankResult r = rank(load_model("deepseek-v3"), nvl72, o);
  ASSERT_FALSE(r.best.empty());
  const Strategy& best = r.best.front().strategy;
  EXPECT_TRUE(r.best.front().feasible);
  EXPECT_GT(best.ep, 1);
  // Its expert groups tile the 72-GPU domain: every copy sits inside one rack.
  EXPECT_EQ(72 % (best.ep * best.expert_tp()), 0) << to_string(best);
  // The same plan on the same trays without the rack's NVLink domain (4-GPU nodes joined by
  // the network) is slower: the domain is what the plan used.
  Cluster trays = nvl72;
  trays.groups.front().nvlink_domain_gpus = 0;
  const Estimate on_trays = estimate(load_model("deepseek-v3"), trays, best);
  EXPECT_GT(on_trays.step_time_s, 1.2 * r.best.front().step_time_s);
  // Expert groups that straddle two racks (32 ranks do not tile 72) price slower than the best.
  RankOptions wide = o;
  wide.fixed = "precision=fp8,ep=32,tp=1";
  const RankResult straddling = rank(load_model("deepseek-v3"), nvl72, wide);
  ASSERT_FALSE(straddling.best.empty());
  EXPECT_GT(straddling.best.front().step_time_s, r.best.front().step_time_s);
}

TEST(RankFamilies, DualPipeIsSearchedAndWinsWhereAllToAllsOutlastCompute) {
  // DeepSeek-V3 on 2,048 H800s (50 GB/s a GPU between nodes): hiding the expert all-to-alls
  // behind the paired chunks beats every 1F1B plan; the published run used DualPipe too.
  RankOptions o;
  o.global_batch = 15360;
  o.top = 3;
  o.fixed = "precision=fp8,tp=1";
  o.estimate.software = software_preset("deepseek-v3");  // the stack that runs DualPipe
  const RankResult r = rank(load_model("deepseek-v3"), load_cluster("hgx-h800", 2048), o);
  ASSERT_FALSE(r.best.empty());
  const Strategy& best = r.best.front().strategy;
  EXPECT_EQ(best.schedule, PipeSchedule::dualpipe) << to_string(best);
  EXPECT_EQ(best.pp % 2, 0);
  EXPECT_EQ(best.vpp, 1);
  RankOptions one = o;
  one.fixed += ",schedule=1f1b";
  const RankResult r1 = rank(load_model("deepseek-v3"), load_cluster("hgx-h800", 2048), one);
  ASSERT_FALSE(r1.best.empty());
  EXPECT_LT(r.best.front().step_time_s, r1.best.front().step_time_s);
}

TEST(RankFamilies, DeepSeekV3On1024H100SearchesEpEtpAndPp) {
  RankOptions o;
  o.global_batch = 4096;
  o.top = 3;
  o.fixed = "precision=fp8";
  const Model m = load_model("deepseek-v3");
  const Cluster c = load_cluster("dgx-h100", 1024);
  const RankResult r = rank(m, c, o);
  ASSERT_FALSE(r.best.empty());
  EXPECT_GT(r.best.front().strategy.ep, 1);
  for (const char* pin : {"tp=2,etp=1", "pp=8", "pp=16,ep=64"}) {
    RankOptions p = o;
    p.fixed = std::string("precision=fp8,") + pin;
    const RankResult pinned = rank(m, c, p);
    ASSERT_FALSE(pinned.best.empty()) << pin;
    EXPECT_TRUE(pinned.best.front().feasible) << pin;
    EXPECT_LE(pinned.best.front().memory_per_gpu_bytes, 80.0 * 1024 * 1024 * 1024) << pin;
    EXPECT_GE(pinned.best.front().step_time_s, r.best.front().step_time_s) << pin;
  }
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// Per-layer sharding (docs/seed-planners.md, item 1): the mixture rank reports is never slower
// than any uniform ZeRO stage of its shape that fits, under the same cost model.
TEST(RankSharding, TheMixtureIsNeverSlowerThanAUniformStageThatFits) {
  struct Case {
    const char* model;
    const char* cluster;
    int gpus, gbs;
    const char* software;
  };
  int mixed = 0;
  for (const Case& k : {Case{"llama3-8b", "dgx-h100", 64, 128, "megatron-core"},
                        Case{"llama3-8b", "dgx-h100", 64, 512, "torchtitan"},
                        Case{"llama3-8b", "dgx-a100", 32, 256, "torchtitan"},
                        Case{"llama3-70b", "dgx-h100", 256, 1024, "megatron-core"},
                        Case{"mixtral-8x7b", "dgx-h100", 64, 256, "megatron-core"}}) {
    RankOptions o;
    o.global_batch = k.gbs;
    o.top = 5;
    o.estimate.software = software_preset(k.software);
    const RankResult r = rank(load_model(k.model), load_cluster(k.cluster, k.gpus), o);
    ASSERT_TRUE(r.sharding.has_value()) << k.model << " " << k.software;
    const Estimate& m = r.sharding->mixture;
    EXPECT_TRUE(m.feasible);
    EXPECT_EQ(m.strategy.zero_layers.size(), static_cast<size_t>(load_model(k.model).layers + 2));
    bool any = false;
    for (const Estimate& u : r.sharding->uniform) {
      EXPECT_TRUE(u.strategy.zero_layers.empty());
      if (!u.feasible) continue;
      any = true;
      EXPECT_LE(m.step_time_s, u.step_time_s + 1e-12) << k.model << " zero=" << u.strategy.zero;
    }
    EXPECT_TRUE(any);
    mixed += std::count(m.strategy.zero_layers.begin(), m.strategy.zero_layers.end(), 0) > 0;
  }
  EXPECT_GE(mixed, 3);  // most of these find a real mixture
}

TEST(RankSharding, MasksAreNotPinnedAndPinningZeroTurnsThemOff) {
  RankOptions o;
  o.global_batch = 128;
  o.fixed = "zero_layers=sx34";
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 64);
  EXPECT_THROW((void)rank(m, c, o), InputError);
  o.fixed = "zero=1";
  const RankResult r = rank(m, c, o);
  EXPECT_FALSE(r.sharding.has_value());
  for (const Estimate& e : r.best) EXPECT_TRUE(e.strategy.zero_layers.empty());
}

// On a mixed cluster rank prices a plan only where some stage of its even split fits its
// devices: otherwise no split of the layers fits (of two splits, some stage's span in one
// contains its span in the other), and neither the even split nor the balanced one is priced.
// Llama 3 8B over a node of A100-40GB and a node of H100s, pp 2: every split tried.
TEST(MixedRank, NoSplitFitsWhereEveryStageOfTheEvenSplitExceedsItsDevices) {
  const Cluster c = parse_cluster_json(R"({"name": "two",
    "inter_node_bandwidth_GBps": 25, "intra_node_bandwidth_GBps": 300, "gpus_per_node": 8,
    "node_groups": [{"name": "a", "device": "a100-sxm4-40gb", "nodes": 1},
                    {"name": "h", "device": "h100-sxm5-80gb", "nodes": 1,
                     "intra_node_bandwidth_GBps": 450}]})",
                                       "test");
  const Model m = load_model("llama3-8b");
  auto stages_over = [&](const std::string& plan) {
    const Estimate e = estimate(m, c, parse_strategy(plan, 16));
    int over = 0;
    for (const StageReport& st : e.stages) over += st.memory_bytes > st.capacity_bytes;
    return over;
  };
  const std::string all_over = "tp=1,pp=2,dp=8,mbs=1,gbs=64,recompute=none";
  ASSERT_EQ(stages_over(all_over), 2);
  for (int first = 1; first < 32; ++first)
    EXPECT_GE(stages_over(fmt::format("{},layers={}/{}", all_over, first, 32 - first)), 1) << first;
  // At tp 2 the second stage fits (52.5 of 79.7 GiB) and the first does not: a split that
  // moves layers to the H100s fits, and the search prices it.
  const std::string one_over = "tp=2,pp=2,dp=4,mbs=1,gbs=64,recompute=none";
  ASSERT_EQ(stages_over(one_over), 1);
  bool some = false;
  for (int first = 1; first < 32; ++first)
    some = some || stages_over(fmt::format("{},layers={}/{}", one_over, first, 32 - first)) == 0;
  EXPECT_TRUE(some);
  // rank, pinned to each: the first is rejected for memory unpriced, the second priced (its
  // layers balanced toward the H100s).
  RankOptions ro;
  ro.global_batch = 64;
  ro.fixed = "tp=1,pp=2,cp=1,mbs=1,vpp=1,recompute=none,zero=0";
  const RankResult none = rank(m, c, ro);
  EXPECT_TRUE(none.best.empty());
  EXPECT_GE(none.rejected.at("exceeds device memory"), 1);
  ro.fixed = "tp=2,pp=2,cp=1,mbs=1,vpp=1,recompute=none,zero=0";
  const RankResult two = rank(m, c, ro);
  ASSERT_FALSE(two.best.empty());
  EXPECT_TRUE(two.best.front().feasible);
  EXPECT_LT(two.best.front().strategy.stage_layers.front(), 16);
}

}  // namespace
}  // namespace shardcost
