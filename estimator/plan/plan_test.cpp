// Plans: files, placement over named groups, and the same numbers as the strategy string a
// plan spells out.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost {
namespace {

// A plan file with `pp` stages of the given layers, each with `dp` replicas of tp on g0.
std::string plan_json(const std::string& strategy, const std::vector<int>& layers, int dp, int tp) {
  std::string stages;
  for (int n : layers) {
    std::string replicas;
    for (int r = 0; r < dp; ++r)
      replicas += fmt::format("{}{{\"group\": \"g0\", \"tp\": {}}}", r ? ", " : "", tp);
    stages += fmt::format("{}{{\"layers\": {}, \"replicas\": [{}]}}", stages.empty() ? "" : ", ", n,
                          replicas);
  }
  return fmt::format("{{\"strategy\": \"{}\", \"stages\": [{}]}}", strategy, stages);
}

double part_seconds(const Estimate& e, const std::string& name) {
  for (const TimePart& p : e.time)
    if (p.name == name) return p.seconds;
  return -1;
}

void expect_same(const Estimate& a, const Estimate& b) {
  EXPECT_EQ(to_string(a.strategy), to_string(b.strategy));
  EXPECT_EQ(a.step_time_s, b.step_time_s);
  EXPECT_EQ(a.memory_per_gpu_bytes, b.memory_per_gpu_bytes);
  ASSERT_EQ(a.time.size(), b.time.size());
  for (size_t i = 0; i < a.time.size(); ++i)
    EXPECT_EQ(a.time[i].seconds, b.time[i].seconds) << a.time[i].name;
  ASSERT_EQ(a.memory.size(), b.memory.size());
  for (size_t i = 0; i < a.memory.size(); ++i)
    EXPECT_EQ(a.memory[i].bytes, b.memory[i].bytes) << a.memory[i].name;
}

TEST(Plan, FileWithTheDefaultSplitPricesAsItsStrategyString) {
  // Llama-3-405B's 126 layers on 16 stages: 7 on the first and last, 8 in the middle.
  const Model m = load_model("llama3-405b");
  const Cluster c = load_cluster("dgx-h100", 1024);
  const std::string keys = "mbs=1,gbs=512,recompute=full,sp=true,zero=1";
  const Strategy s = parse_strategy("tp=8,pp=16,dp=8," + keys, 1024);
  const std::vector<int> layers = default_stage_layers(126, 16);
  EXPECT_EQ(layers.front(), 7);
  EXPECT_EQ(layers[1], 8);
  const Plan plan = parse_plan_json(plan_json(keys, layers, 8, 8), "test plan", c, 126);
  EXPECT_EQ(plan.strategy.pp, 16);
  EXPECT_EQ(plan.strategy.dp, 8);
  EXPECT_EQ(plan.strategy.tp, 8);
  const auto w = transformer_workload(m);
  expect_same(estimate(*w, c, plan), estimate(m, c, s));
  // Interleaved, equal stages.
  const std::string vkeys = "mbs=1,gbs=64,vpp=2,recompute=selective,sp=true";
  const Model g = load_model("gpt3-175b");
  const Cluster a = load_cluster("dgx-a100", 64);
  const Plan vplan =
      parse_plan_json(plan_json(vkeys, {12, 12, 12, 12, 12, 12, 12, 12}, 1, 8), "test plan", a, 96);
  expect_same(estimate(*transformer_workload(g), a, vplan),
              estimate(g, a, parse_strategy("tp=8,pp=8," + vkeys, 64)));
}

TEST(Plan, TheHeaviestStageSetsThePace) {
  // 80 layers on 4 stages. Moving one layer from stage 2 to stage 1, twice: the middle
  // stage that grows is the slowest each time, so the step's forward compute grows by one
  // layer's forward per micro-batch each time (a straight line).
  const Model m = load_model("llama3-70b");
  const Cluster c = load_cluster("dgx-h100", 64);
  const auto w = transformer_workload(m);
  const std::string keys = "mbs=1,gbs=64,sp=true";
  auto forward = [&](std::vector<int> layers) {
    const Estimate e = estimate(*w, c, parse_plan_json(plan_json(keys, layers, 2, 8), "p", c, 80));
    return e.time.front().seconds;  // compute_forward
  };
  const double a = forward({10, 30, 30, 10}), b = forward({10, 31, 29, 10}),
               d = forward({10, 32, 28, 10});
  EXPECT_GT(b, a);
  EXPECT_NEAR(d - b, b - a, 1e-9 * a);
  // The even split's slowest stage is the last (it also runs the LM head); one layer more
  // there costs the same layer's forward for each of the 32 micro-batches.
  EXPECT_NEAR(forward({20, 20, 19, 21}) - forward({20, 20, 20, 20}), b - a, 1e-9 * a);
}

TEST(Plan, BadFilesGetOneLineNamingTheField) {
  const Cluster c = load_cluster("dgx-h100", 16);
  auto error = [&](const std::string& json) {
    try {
      parse_plan_json(json, "plan.json", c, 32);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error(R"({"stages": []})").find("field 'stages' is missing or empty"),
            std::string::npos);
  EXPECT_NE(
      error(R"({"stages": [{"layers": 32, "replicas": [{"tp": 8}, {"tp": 8}]}], "strateg": ""})")
          .find("unknown field 'strateg'"),
      std::string::npos);
  EXPECT_NE(error(R"({"stages": [{"layers": 30, "replicas": [{"tp": 8}, {"tp": 8}]}]})")
                .find("hold 30 layers in all but the model has 32"),
            std::string::npos);
  EXPECT_NE(error(R"({"stages": [{"layers": 16, "replicas": [{"tp": 8}]},
                                 {"layers": 16, "replicas": [{"tp": 8}, {"tp": 8}]}]})")
                .find("2 replicas where stage 0 has 1"),
            std::string::npos);
  EXPECT_NE(
      error(R"({"strategy": "tp=8", "stages": [{"layers": 32, "replicas": [{}, {"tp": 4}]}]})")
          .find("stages[0] replicas[1]: tp=4 where the strategy says tp=8"),
      std::string::npos);
  EXPECT_NE(error(R"({"stages": [{"layers": 32, "replicas": [{"group": "h200", "tp": 8}]}]})")
                .find("names 'h200', which the cluster does not have; its groups are g0"),
            std::string::npos);
  EXPECT_NE(error(R"({"strategy": "pp=2", "stages": [{"layers": 32, "replicas": [{"tp": 8}]}]})")
                .find("says pp=2 but the stages give pp=1"),
            std::string::npos);
  EXPECT_NE(
      error(R"({"stages": [{"layers": 32, "replicas": [{}]}]})").find("field 'tp' is missing"),
      std::string::npos);
  EXPECT_NE(error(R"({"stages": [{"layers": 32, "replicas": [{"tp": 8, "gpu": 1}]}]})")
                .find("unknown field 'gpu'; the fields are group, tp"),
            std::string::npos);
  // tp from the strategy serves replicas that give none.
  EXPECT_EQ(
      parse_plan_json(R"({"strategy": "tp=8", "stages": [{"layers": 32, "replicas": [{}, {}]}]})",
                      "plan.json", c, 32)
          .strategy.dp,
      2);
}

Cluster two_groups() {
  return parse_cluster_json(R"({"name": "mixed", "inter_node_bandwidth_GBps": 50,
    "node_groups": [
      {"device": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8, "intra_node_bandwidth_GBps": 300},
      {"name": "hopper", "device": "h100-sxm5-80gb", "nodes": 1, "gpus_per_node": 8,
       "intra_node_bandwidth_GBps": 450}]})",
                            "mixed.json");
}

TEST(Placement, ReplicasTakeRanksInOrderAndMustSitInTheGroupTheyName) {
  const Cluster c = two_groups();
  EXPECT_EQ(c.groups[0].name, "g0");
  EXPECT_EQ(c.groups[1].name, "hopper");
  ASSERT_NE(c.group("hopper"), nullptr);
  EXPECT_EQ(c.group("g1"), nullptr);
  // Two stages of two tp=4 replicas: stage 0 on the A100s, stage 1 on the H100s.
  const char* good = R"({"stages": [
      {"layers": 16, "replicas": [{"group": "g0", "tp": 4}, {"group": "g0", "tp": 4}]},
      {"layers": 16, "replicas": [{"group": "hopper", "tp": 4}, {"group": "hopper", "tp": 4}]}]})";
  const Plan plan = parse_plan_json(good, "plan.json", c, 32);
  const auto placed = place(plan, c);
  ASSERT_EQ(placed.size(), 4u);
  EXPECT_EQ(placed[1].first_rank, 4);
  EXPECT_EQ(placed[1].group, 0);
  EXPECT_EQ(placed[2].first_rank, 8);
  EXPECT_EQ(placed[2].group, 1);
  EXPECT_EQ(placed[3].ranks, 4);
  // Each stage priced on its own group: the A100 stage is the slower, and the send between the
  // stages crosses the groups (issue 14; mixed_test.cpp has the rest).
  Plan priced = plan;
  priced.strategy.gbs = 8;
  const Estimate mixed = estimate(*transformer_workload(load_model("llama3-8b")), c, priced);
  ASSERT_EQ(mixed.stages.size(), 2u);
  EXPECT_EQ(mixed.stages[0].device, "a100-sxm4-80gb");
  EXPECT_EQ(mixed.stages[1].device, "h100-sxm5-80gb");
  EXPECT_GT(mixed.stages[0].seconds, mixed.stages[1].seconds);
  ASSERT_FALSE(mixed.links.empty());
  EXPECT_NE(mixed.links.front().find("stage 0 -> 1: g0 <-> hopper"), std::string::npos)
      << mixed.links.front();
  const char* wrong = R"({"stages": [
      {"layers": 16, "replicas": [{"group": "hopper", "tp": 4}, {"group": "g0", "tp": 4}]},
      {"layers": 16, "replicas": [{"group": "hopper", "tp": 4}, {"group": "hopper", "tp": 4}]}]})";
  try {
    place(parse_plan_json(wrong, "plan.json", c, 32), c);
    ADD_FAILURE() << "a replica off its group was placed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("stage 0 replica 0 names group 'hopper' but its ranks "
                                         "0-3 are in group 'g0'"),
              std::string::npos)
        << e.what();
  }
  // tp=6: the second replica's ranks 6-11 straddle the two groups.
  Plan straddle;
  straddle.strategy.tp = 6;
  straddle.strategy.dp = 2;
  try {
    place(straddle, c);
    ADD_FAILURE() << "a replica across two groups was placed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ranks 6-11 span groups g0 and hopper"), std::string::npos)
        << e.what();
  }
  Plan big;
  big.strategy.tp = 8;
  big.strategy.dp = 4;
  EXPECT_THROW(place(big, c), InputError);
}

// Issue 35: a plan file that runs on part of a mixed cluster (a few nodes of a larger one)
// prices on that part alone: the groups it names, in the order it names them, cut to the GPUs
// it takes; --gpus N on a mixed cluster takes the first N GPUs in the file's order.
TEST(Placement, APlanRunsOnThePartOfTheClusterItNames) {
  const Cluster c = two_groups();
  const auto w = transformer_workload(load_model("llama3-8b"));
  // Half an H100 node alone: priced as a 4-GPU H100 cluster.
  const char* half = R"({"strategy": "gbs=8", "stages": [
      {"layers": 32, "replicas": [{"group": "hopper", "tp": 4}]}]})";
  const Plan p = parse_plan_json(half, "plan.json", c, 32);
  const Cluster part = plan_cluster(c, p);
  ASSERT_EQ(part.groups.size(), 1u);
  EXPECT_EQ(part.groups[0].name, "hopper");
  EXPECT_EQ(part.total_gpus(), 4);
  Cluster alone = load_cluster("dgx-h100", 4);
  alone.groups[0].intra_node = c.groups[1].intra_node;
  const Plan same = parse_plan_json(
      R"({"strategy": "gbs=8", "stages": [{"layers": 32, "replicas": [{"tp": 4}]}]})", "plan.json",
      alone, 32);
  EXPECT_DOUBLE_EQ(estimate(*w, part, p).step_time_s, estimate(*w, alone, same).step_time_s);
  // The H100 stage first: the groups in the plan's order, both whole.
  const char* flipped = R"({"strategy": "gbs=8", "stages": [
      {"layers": 16, "replicas": [{"group": "hopper", "tp": 8}]},
      {"layers": 16, "replicas": [{"group": "g0", "tp": 8}]}]})";
  const Cluster turned = plan_cluster(c, parse_plan_json(flipped, "plan.json", c, 32));
  ASSERT_EQ(turned.groups.size(), 2u);
  EXPECT_EQ(turned.groups[0].name, "hopper");
  const Estimate e = estimate(*w, turned, parse_plan_json(flipped, "plan.json", turned, 32));
  EXPECT_EQ(e.stages.at(0).device, "h100-sxm5-80gb");
  // A plan that takes every GPU in the file's order: the cluster as it is.
  const char* all = R"({"strategy": "gbs=8", "stages": [
      {"layers": 16, "replicas": [{"group": "g0", "tp": 8}]},
      {"layers": 16, "replicas": [{"group": "hopper", "tp": 8}]}]})";
  EXPECT_EQ(plan_cluster(c, parse_plan_json(all, "plan.json", c, 32)).groups[0].name, "g0");
  // --gpus 12: the A100 node and half the H100 node.
  const Cluster twelve = parse_cluster_json(R"({"name": "mixed", "inter_node_bandwidth_GBps": 50,
    "node_groups": [
      {"device": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8, "intra_node_bandwidth_GBps": 300},
      {"name": "hopper", "device": "h100-sxm5-80gb", "nodes": 2, "gpus_per_node": 8,
       "intra_node_bandwidth_GBps": 450}]})",
                                            "mixed.json", 12);
  ASSERT_EQ(twelve.groups.size(), 2u);
  EXPECT_EQ(twelve.groups[1].gpus(), 4);
  // 12 GPUs of a group of 8-GPU nodes: neither whole nodes nor part of one.
  EXPECT_THROW(parse_cluster_json(R"({"name": "mixed", "inter_node_bandwidth_GBps": 50,
    "node_groups": [
      {"name": "hopper", "device": "h100-sxm5-80gb", "nodes": 2, "gpus_per_node": 8,
       "intra_node_bandwidth_GBps": 450},
      {"device": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8, "intra_node_bandwidth_GBps": 300}]})",
                                  "mixed.json", 12),
               InputError);
}

TEST(Placement, GroupNamesAreUnique) {
  EXPECT_THROW(parse_cluster_json(R"({"inter_node_bandwidth_GBps": 50, "node_groups": [
      {"name": "x", "device": "a100-sxm4-80gb", "gpus_per_node": 8, "intra_node_bandwidth_GBps": 300},
      {"name": "x", "device": "a100-sxm4-80gb", "gpus_per_node": 8, "intra_node_bandwidth_GBps": 300}]})",
                                  "dup.json"),
               InputError);
  EXPECT_EQ(load_cluster("dgx-h100").groups.front().name, "g0");
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// The undefined behaviour UBSan found in the fuzz corpus: sizes near INT_MAX multiplied in int.
// Issue 35: stages that hold only the embedding (or part of it) lead the pipeline, stages that
// hold only the head trail it; each adds its own work and sends to the fill and drain, and no
// layer's. A stage with none between two that hold layers is refused.
TEST(Plan, StagesWithoutLayersLeadOrTrailThePipeline) {
  const Model m = load_model("llama3-8b");
  const auto w = transformer_workload(m);
  const Cluster c8 = load_cluster("dgx-h100", 8), c6 = load_cluster("dgx-h100", 6);
  const std::string keys = "mbs=1,gbs=32";
  // Stage 0 holds the embedding, stage 1 nothing of the model's layers (a part of the
  // embedding, as trials that split token and position embeddings ran it).
  const Estimate four =
      estimate(*w, c8, parse_plan_json(plan_json(keys, {0, 0, 16, 16}, 1, 2), "p", c8, 32));
  const Estimate three =
      estimate(*w, c6, parse_plan_json(plan_json(keys, {0, 16, 16}, 1, 2), "p", c6, 32));
  // The same stages doing the work; the empty one adds its receive and send to the fill and
  // drain: more than nothing, less than 2 % of the step.
  const double added = four.step_time_s - three.step_time_s;
  EXPECT_GT(added, 0);
  EXPECT_LT(added, 0.02 * three.step_time_s);
  EXPECT_DOUBLE_EQ(part_seconds(four, "compute_forward"), part_seconds(three, "compute_forward"));
  // Trailing: the head alone on the last stage.
  EXPECT_NO_THROW(
      estimate(*w, c8, parse_plan_json(plan_json(keys, {16, 16, 0, 0}, 1, 2), "p", c8, 32)));
  for (const std::vector<int>& bad : {std::vector<int>{16, 0, 16, 0}, {8, 8, 0, 16}}) try {
      estimate(*w, c8, parse_plan_json(plan_json(keys, bad, 1, 2), "p", c8, 32));
      ADD_FAILURE() << "a stage without layers in the middle was priced";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("a stage between two that hold layers holds at least"),
                std::string::npos)
          << e.what();
    }
}

TEST(StrategyText, HugeSizesAreOneClearErrorNotAnOverflow) {
  EXPECT_THROW(parse_strategy("tp=119276527", 64), InputError);
  EXPECT_THROW(parse_strategy("tp=2147483647,pp=2147483647,cp=2147483647", 64), InputError);
  EXPECT_THROW(parse_strategy("mbs=119276527,tp=1", 64), InputError);  // mbs*dp as the global batch
  Strategy s;
  s.tp = s.pp = s.dp = s.cp = 2147483647;
  EXPECT_EQ(s.gpus(), int64_t{1} << 40);  // saturates instead of overflowing
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// "tp=8,tp=4" silently priced tp=4; a key given twice is an error.
TEST(Strategy, AKeyGivenTwiceIsAnError) {
  try {
    parse_strategy("tp=8,tp=4,mbs=1,gbs=64", 8);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "strategy key 'tp' is given twice; give each key once");
  }
  EXPECT_NO_THROW(parse_strategy("cp=dynamic,cp_max=8,tp=1,mbs=1,gbs=64", 8));
}

}  // namespace
}  // namespace shardcost
