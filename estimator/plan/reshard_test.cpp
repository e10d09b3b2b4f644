// Plans whose stages or replicas differ in TP degree (issue 14, items 5 and 6): each replica
// priced on its own graph and devices, and the activation resharded between meshes of
// different degrees, in its own part of the breakdown.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "shardcost/estimator.h"
#include "test_models.h"

namespace shardcost {
namespace {

// Eight H100s in group a and four in group b, joined by a 10 GB/s link with 5 us latency.
Cluster eight_and_four() {
  return parse_cluster_json(R"({"name": "8+4", "inter_node_bandwidth_GBps": 50,
    "intra_node_bandwidth_GBps": 450, "node_groups": [
      {"name": "a", "device": "h100-sxm5-80gb", "nodes": 1, "gpus_per_node": 8},
      {"name": "b", "device": "h100-sxm5-80gb", "nodes": 1, "gpus_per_node": 4}],
    "links": [{"between": ["a", "b"], "bandwidth_GBps": 10, "latency_us": 5}]})",
                            "8+4.json");
}

double part(const Estimate& e, const std::string& name) {
  for (const auto& p : e.time)
    if (p.name == name) return p.seconds;
  ADD_FAILURE() << "no part " << name;
  return -1;
}

const std::unique_ptr<Workload>& llama8b() {
  static const auto w = transformer_workload(load_model("llama3-8b"));
  return w;
}

Estimate priced(const Cluster& c, const std::string& plan_json) {
  return estimate(*llama8b(), c, parse_plan_json(plan_json, "plan.json", c, 32));
}

// Stage 0 at tp=8 on a, stage 1 at tp=4 on b, with sequence parallelism: each tp=4 rank
// takes its quarter of the sequence from the two tp=8 ranks that hold it, so the busiest
// rank of either side moves a quarter of the 8192 x 4096 bf16 activation, over the link
// (x0.9), twice per micro-batch, 8 micro-batches on the pace-setting stage.
TEST(Reshard, BetweenDegreesTheBusiestRankMovesOneSliceOfTheSmallerMesh) {
  const Cluster c = eight_and_four();
  const Estimate e = priced(c, R"({"strategy": "mbs=1,gbs=8,sp=true",
    "stages": [{"layers": 16, "replicas": [{"group": "a", "tp": 8}]},
               {"layers": 16, "replicas": [{"group": "b", "tp": 4}]}]})");
  const double act = 8192.0 * 4096 * 2;
  const double hop = 5e-6 + act / 4 / (10e9 * 0.9);
  EXPECT_NEAR(part(e, "reshard"), 2 * 8 * hop, 1e-9 * hop);
  EXPECT_EQ(part(e, "pp_p2p"), 0);  // the only boundary reshards
  ASSERT_EQ(e.stages.size(), 2u);
  EXPECT_EQ(e.stages[0].tp, 8);
  EXPECT_EQ(e.stages[1].tp, 4);
  // Half the ranks: the tp=4 stage runs about twice the work per GPU and holds twice the
  // weights per GPU.
  EXPECT_GT(e.stages[1].seconds, 1.6 * e.stages[0].seconds);
  EXPECT_GT(e.stages[1].memory_bytes, e.stages[0].memory_bytes);
  EXPECT_NE(e.links.front().find("stage 0 -> 1: a <-> b"), std::string::npos) << e.links.front();
}

// Without sequence parallelism every rank of the receiving mesh needs the whole activation:
// the slices are all-gathered there too, so the reshard costs more.
TEST(Reshard, AReplicatedReceiverAllGathersTheSlices) {
  const Cluster c = eight_and_four();
  const char* sp = R"({"strategy": "mbs=1,gbs=8,sp=true",
    "stages": [{"layers": 16, "replicas": [{"group": "a", "tp": 8}]},
               {"layers": 16, "replicas": [{"group": "b", "tp": 4}]}]})";
  const char* no_sp = R"({"strategy": "mbs=1,gbs=8,sp=false",
    "stages": [{"layers": 16, "replicas": [{"group": "a", "tp": 8}]},
               {"layers": 16, "replicas": [{"group": "b", "tp": 4}]}]})";
  EXPECT_GT(part(priced(c, no_sp), "reshard"), part(priced(c, sp), "reshard"));
}

// Equal degrees on both sides are Megatron's send: pp_p2p, no reshard; and a plan file that
// spells out a uniform strategy prices exactly as its string.
TEST(Reshard, EqualDegreesSendAsBefore) {
  const Cluster c = load_cluster("dgx-h100", 16);
  const Estimate file = priced(c, R"({"strategy": "mbs=1,gbs=16,sp=true",
    "stages": [{"layers": 16, "replicas": [{"tp": 4}, {"tp": 4}]},
               {"layers": 16, "replicas": [{"tp": 4}, {"tp": 4}]}]})");
  const Estimate text =
      estimate(*llama8b(), c, plan_of(parse_strategy("tp=4,pp=2,dp=2,mbs=1,gbs=16,sp=true", 16)));
  EXPECT_DOUBLE_EQ(file.step_time_s, text.step_time_s);
  EXPECT_TRUE(file.stages.empty());  // one group, one degree: priced as before
  for (const auto& p : file.time) EXPECT_NE(p.name, "reshard");
}

// One group, a degree per stage: 2/4/2 over sixteen H100s with two replicas a stage.
TEST(Reshard, ADegreePerStageOnOneGroup) {
  const Cluster c = load_cluster("dgx-h100", 16);
  const Estimate e = priced(c, R"({"strategy": "mbs=1,gbs=16,sp=true,recompute=full",
    "stages": [{"layers": 8, "replicas": [{"tp": 2}, {"tp": 2}]},
               {"layers": 16, "replicas": [{"tp": 4}, {"tp": 4}]},
               {"layers": 8, "replicas": [{"tp": 2}, {"tp": 2}]}]})");
  ASSERT_EQ(e.stages.size(), 3u);
  EXPECT_EQ(e.stages[0].tp, 2);
  EXPECT_EQ(e.stages[1].tp, 4);
  EXPECT_EQ(e.stages[2].tp, 2);
  EXPECT_GT(part(e, "reshard"), 0);
  EXPECT_TRUE(e.feasible) << e.reason;
}

// Replicas of one stage with different degrees: the one with fewer ranks is the slower and
// sets the stage's pace.
TEST(Reshard, TheSlowestReplicaOfAStageSetsItsPace) {
  const Cluster c = eight_and_four();
  const Estimate e = priced(c, R"({"strategy": "mbs=1,gbs=8,sp=true",
    "stages": [{"layers": 32, "replicas": [{"group": "a", "tp": 8}, {"group": "b", "tp": 4}]}]})");
  ASSERT_EQ(e.stages.size(), 1u);
  EXPECT_EQ(e.stages[0].group, "b");
  EXPECT_EQ(e.stages[0].tp, 4);
  EXPECT_NE(e.links.front().find("stage 0 data parallel: a <-> b"), std::string::npos);
}

TEST(Reshard, BadDegreesAreOneLineNamingTheReplica) {
  const Cluster c = eight_and_four();
  auto error = [&](const char* json) {
    return test_models::input_error_of([&] { (void)priced(c, json); });
  };
  // 32 heads do not split 3 ways; 6 GPUs in b would leave the cluster's others idle.
  EXPECT_NE(error(R"({"strategy": "mbs=1,gbs=8", "stages": [
      {"layers": 16, "replicas": [{"group": "a", "tp": 8}]},
      {"layers": 16, "replicas": [{"group": "b", "tp": 3}]}]})")
                .find("plan stages[1] replicas[0]: tp=3 cannot run"),
            std::string::npos);
  EXPECT_NE(error(R"({"strategy": "mbs=1,gbs=8", "stages": [
      {"layers": 16, "replicas": [{"group": "a", "tp": 8}]},
      {"layers": 16, "replicas": [{"group": "b", "tp": 2}]}]})")
                .find("its replicas take 10 GPUs (tp*cp each) but the cluster has 12"),
            std::string::npos);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// stage_tp=a/b/...: the strategy text of a degree per stage (what rank prints, and what a
// plan file whose stages each have one degree reads as).
TEST(StageTp, ParsesDerivesAndPrints) {
  const Strategy s = parse_strategy("stage_tp=8/8/4/4/4/4,mbs=1,gbs=64", 32);
  EXPECT_EQ(s.pp, 6);
  EXPECT_EQ(s.tp, 8);
  EXPECT_EQ(s.dp, 1);  // 32 GPUs over the 32 ranks of one replica across the pipeline
  EXPECT_EQ(s.gpus(), 32);
  EXPECT_NE(to_string(s).find(",stage_tp=8/8/4/4/4/4"), std::string::npos) << to_string(s);
  EXPECT_EQ(parse_strategy(to_string(s), 32).stage_tp, s.stage_tp);
  auto error = [](const char* text) {
    return test_models::input_error_of([&] { (void)parse_strategy(text, 32); });
  };
  EXPECT_NE(error("tp=4,stage_tp=8/8/4/4/4/4,gbs=64").find("tp is the first stage's degree"),
            std::string::npos);
  EXPECT_NE(error("stage_tp=8/0/4,gbs=64").find("at least 1 per stage"), std::string::npos);
  EXPECT_NE(error("stage_tp=8/8/8/4,gbs=64").find("(sum of stage_tp)*cp = 28 does not divide"),
            std::string::npos);
}

TEST(StageTp, ChecksEachDegreeAndTheStageCount) {
  const Model m = load_model("llama3-70b");
  const Cluster c = load_cluster(SHARDCOST_SOURCE_DIR "/tests/fixtures/clusters/a100-h100.json");
  auto why = [&](const char* text) {
    return check_strategy(m, c, parse_strategy(text, 32)).value_or("fits the rules");
  };
  EXPECT_NE(why("stage_tp=8/8/4/4/4/4,pp=5,gbs=60").find("6 degrees for pp=5"), std::string::npos);
  // 64 heads do not split 3 ways (and 3 + ... cannot make the GPUs add up either way).
  EXPECT_NE(why("stage_tp=8/8/3/3/5/5,gbs=64").find("stage 2 (tp=3)"), std::string::npos);
  EXPECT_EQ(why("stage_tp=8/8/4/4/4/4,gbs=64,sp=true"), "fits the rules");
}

// A plan file whose stages each have one degree prices exactly as --strategy with stage_tp.
TEST(StageTp, APlanFileOfADegreePerStageIsTheStrategy) {
  const Model m = load_model("llama3-70b");
  const Cluster c = load_cluster(SHARDCOST_SOURCE_DIR "/tests/fixtures/clusters/a100-h100.json");
  const auto w = transformer_workload(m);
  const Plan file = load_plan(SHARDCOST_SOURCE_DIR "/tests/fixtures/plans/a100-h100-tp8-tp4.json",
                              c, w->layers());
  EXPECT_EQ(file.strategy.stage_tp, (std::vector<int>{8, 8, 4, 4, 4, 4}));
  const Estimate a = estimate(*w, c, file);
  const Estimate b =
      estimate(m, c,
               parse_strategy("stage_tp=8/8/4/4/4/4,layers=10/11/15/15/15/14,mbs=1,gbs=64,"
                              "recompute=full,sp=true,zero=1",
                              32));
  EXPECT_DOUBLE_EQ(a.step_time_s, b.step_time_s);
  EXPECT_DOUBLE_EQ(a.memory_per_gpu_bytes, b.memory_per_gpu_bytes);
}

// rank on a mixed cluster also gives each group's stages a degree of their own, around the
// best plans it found; what it returns prices the same through estimate.
TEST(StageTp, RankSearchesADegreePerGroup) {
  const Model m = load_model("llama3-70b");
  const Cluster c = load_cluster(SHARDCOST_SOURCE_DIR "/tests/fixtures/clusters/a100-h100.json");
  RankOptions ro;
  ro.global_batch = 64;
  ro.top = 10;
  const RankResult r = rank(m, c, ro);
  const Estimate* per_group = nullptr;
  for (const Estimate& e : r.best)
    if (!e.strategy.stage_tp.empty() && !per_group) per_group = &e;
  ASSERT_NE(per_group, nullptr) << "no plan with a degree per group among the best 10";
  const Strategy& s = per_group->strategy;
  // Stages on one group share its degree: the A100 stages come first, then the H100 ones.
  ASSERT_EQ(s.stage_tp.size(), static_cast<size_t>(s.pp));
  EXPECT_TRUE(std::is_sorted(s.stage_tp.begin(), s.stage_tp.end()) ||
              std::is_sorted(s.stage_tp.rbegin(), s.stage_tp.rend()))
      << to_string(s);
  EXPECT_DOUBLE_EQ(estimate(m, c, s).step_time_s, per_group->step_time_s);
  // rank pins neither the split nor the degrees per stage: it searches them.
  ro.fixed = "stage_tp=8/8/4/4/4/4";
  EXPECT_NE(test_models::input_error_of([&] { (void)rank(m, c, ro); }).find("--fix layers="),
            std::string::npos);
}

}  // namespace
}  // namespace shardcost
