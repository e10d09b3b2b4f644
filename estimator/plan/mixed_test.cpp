// Mixed clusters (issue 14, first increment): each stage priced on the groups its replicas
// run on, the slowest replica setting its pace, messages between groups over the link
// between them, memory against each stage's own devices.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <string>

#include "shardcost/estimator.h"
#include "test_models.h"

namespace shardcost {
namespace {

// Two groups of `nodes` nodes of 8 GPUs, the second of `second` devices, joined at 50 GB/s
// per GPU unless a link says otherwise.
Cluster mixed(const std::string& first, const std::string& second, int nodes = 1,
              const std::string& links = "") {
  return parse_cluster_json(
      fmt::format(
          R"({{"name": "mixed", "inter_node_bandwidth_GBps": 50, "intra_node_bandwidth_GBps": 300,
        "node_groups": [{{"name": "a", "device": "{}", "nodes": {}, "gpus_per_node": 8}},
                        {{"name": "b", "device": "{}", "nodes": {}, "gpus_per_node": 8}}]{}}})",
          first, nodes, second, nodes, links),
      "mixed.json");
}

Cluster uniform(const std::string& device, int nodes) {
  return parse_cluster_json(
      fmt::format(
          R"({{"name": "one", "inter_node_bandwidth_GBps": 50, "intra_node_bandwidth_GBps": 300,
        "device": "{}", "nodes": {}, "gpus_per_node": 8}})",
          device, nodes),
      "one.json");
}

const char* kPlans[] = {
    "tp=8,pp=2,dp=1,mbs=1,gbs=16,sp=true,zero=1",          // a stage on each group
    "tp=8,pp=1,dp=2,mbs=1,gbs=16,sp=true,zero=1",          // data parallel across the groups
    "tp=4,pp=2,dp=2,mbs=1,gbs=32,vpp=2,sp=true,zero=1",    // both
    "tp=2,pp=4,dp=2,mbs=2,gbs=64,recompute=full,zero=0"};  // four stages, two per group

TEST(Mixed, TwoGroupsOfOneDeviceAreOneGroup) {
  const Model m = load_model("llama3-8b");
  const Cluster two = mixed("h100-sxm5-80gb", "h100-sxm5-80gb");
  const Cluster one = uniform("h100-sxm5-80gb", 2);
  for (const char* text : kPlans) {
    const Strategy s = parse_strategy(text, 16);
    const Estimate a = estimate(m, two, s);
    const Estimate b = estimate(m, one, s);
    EXPECT_NEAR(a.step_time_s, b.step_time_s, 1e-9 * b.step_time_s) << text;
    EXPECT_DOUBLE_EQ(a.memory_per_gpu_bytes, b.memory_per_gpu_bytes) << text;
    EXPECT_EQ(a.stages.size(), static_cast<size_t>(s.pp)) << text;
  }
}

TEST(Mixed, NeverFasterThanTheFastestGroupsDevicesEverywhere) {
  const Model m = load_model("llama3-8b");
  const Cluster two = mixed("a100-sxm4-80gb", "h100-sxm5-80gb");
  const Cluster fast = uniform("h100-sxm5-80gb", 2);
  for (const char* text : kPlans) {
    const Strategy s = parse_strategy(text, 16);
    EXPECT_GT(estimate(m, two, s).step_time_s, estimate(m, fast, s).step_time_s) << text;
  }
}

TEST(Mixed, TheBreakdownNamesEachStagesSlowestReplicaAndTheLinksCrossed) {
  const Model m = load_model("llama3-8b");
  const Cluster two = mixed("a100-sxm4-80gb", "h100-sxm5-80gb");
  const Estimate e = estimate(m, two, parse_strategy("tp=8,pp=1,dp=2,mbs=1,gbs=16,sp=true", 16));
  ASSERT_EQ(e.stages.size(), 1u);
  EXPECT_EQ(e.stages[0].group, "a");  // the A100 replica
  EXPECT_EQ(e.stages[0].device, "a100-sxm4-80gb");
  ASSERT_EQ(e.links.size(), 1u);
  EXPECT_EQ(e.links[0], "stage 0 data parallel: a <-> b, 45.0 GB/s, 20 us");
  // The same step with the replicas on one group each way is not slower than the A100 one.
  const Estimate a100 = estimate(m, uniform("a100-sxm4-80gb", 2),
                                 parse_strategy("tp=8,dp=2,mbs=1,gbs=16,sp=true", 16));
  EXPECT_NEAR(e.step_time_s, a100.step_time_s, 1e-9 * a100.step_time_s);
}

TEST(Mixed, AGivenLinkPricesWhatCrossesIt) {
  const Model m = load_model("llama3-8b");
  const std::string slow =
      R"(, "links": [{"between": ["a", "b"], "bandwidth_GBps": 1, "latency_us": 100}])";
  const Strategy s = parse_strategy("tp=8,pp=2,mbs=1,gbs=16,sp=true", 16);
  const Estimate fast = estimate(m, mixed("h100-sxm5-80gb", "h100-sxm5-80gb"), s);
  const Estimate crawl = estimate(m, mixed("h100-sxm5-80gb", "h100-sxm5-80gb", 1, slow), s);
  double fast_p2p = 0, slow_p2p = 0;
  for (const auto& p : fast.time)
    if (p.name == "pp_p2p") fast_p2p = p.seconds;
  for (const auto& p : crawl.time)
    if (p.name == "pp_p2p") slow_p2p = p.seconds;
  // The boundary's send moves 1/tp of an 8192 x 4096 bf16 activation: 8 MiB at 1 GB/s (x0.9)
  // instead of 45 GB/s, 2 per micro-batch per stage, 16 micro-batches.
  EXPECT_GT(slow_p2p, 30 * fast_p2p);
  EXPECT_EQ(crawl.links[0], "stage 0 -> 1: a <-> b, 0.9 GB/s, 100 us");
}

TEST(Mixed, MemoryIsCheckedOnEachStagesOwnDevices) {
  const Model m = load_model("llama3-8b");
  const Cluster two = mixed("a100-sxm4-80gb", "a100-sxm4-40gb");
  const Estimate e = estimate(m, two, parse_strategy("tp=8,pp=2,mbs=1,gbs=16,sp=true", 16));
  ASSERT_EQ(e.stages.size(), 2u);
  EXPECT_NEAR(e.stages[1].capacity_bytes, find_device("a100-sxm4-40gb").memory_bytes, 1);
  // The summary's capacity is the device with the least headroom's.
  EXPECT_NEAR(e.memory_capacity_bytes, find_device("a100-sxm4-40gb").memory_bytes, 1);
}

// The issue's example: three p3 nodes of four V100s beside T4 nodes on a slow network, in
// fp16 (neither part has bf16), each stage on its own part.
TEST(Mixed, VoltaBesideTuringTrainsInFp16) {
  const Cluster c = parse_cluster_json(R"({"name": "p3+g4", "node_groups": [
      {"name": "p3", "device": "v100-sxm2-16gb", "nodes": 3, "gpus_per_node": 4,
       "intra_node_bandwidth_GBps": 21.25, "inter_node_bandwidth_GBps": 0.3125},
      {"name": "g4", "device": "t4", "nodes": 4, "gpus_per_node": 1,
       "intra_node_bandwidth_GBps": 8, "inter_node_bandwidth_GBps": 0.3125}]})",
                                       "p3g4.json");
  EXPECT_EQ(c.total_gpus(), 16);
  Model m = load_model("gpt3-1.3b");
  const Estimate e = estimate(
      m, c, parse_strategy("tp=4,pp=4,dp=1,mbs=1,gbs=16,recompute=full,layers=7/7/7/3", 16));
  EXPECT_EQ(e.strategy.precision, DType::fp16);
  ASSERT_EQ(e.stages.size(), 4u);
  EXPECT_EQ(e.stages[2].device, "v100-sxm2-16gb");
  EXPECT_EQ(e.stages[3].device, "t4");
}

TEST(Mixed, BadLinksAreOneClearLine) {
  auto error = [](const std::string& links) {
    return test_models::input_error_of(
        [&] { (void)mixed("h100-sxm5-80gb", "a100-sxm4-80gb", 1, links); });
  };
  EXPECT_NE(error(R"(, "links": [{"between": ["a", "c"], "bandwidth_GBps": 1}])")
                .find("names 'c', which is not a node group; the groups are a, b"),
            std::string::npos);
  EXPECT_NE(error(R"(, "links": [{"between": ["a", "a"], "bandwidth_GBps": 1}])")
                .find("names one group twice"),
            std::string::npos);
  EXPECT_NE(error(R"(, "links": [{"between": ["a", "b"], "bandwidth_GBps": 1},
                                   {"between": ["b", "a"], "bandwidth_GBps": 2}])")
                .find("links[1]"),
            std::string::npos);
  EXPECT_NE(error(R"(, "links": [{"between": ["a", "b"]}])").find("bandwidth_GBps"),
            std::string::npos);
}

// rank on a mixed cluster: candidates where rank order places them, each also with its
// layers balanced by its stages' speed; never a plan that does not fit its own devices.
TEST(Mixed, RankBalancesTheLayersByEachStagesSpeed) {
  const Model m = load_model("llama3-70b");
  const Cluster c = load_cluster(SHARDCOST_SOURCE_DIR "/tests/fixtures/clusters/a100-h100.json");
  RankOptions ro;
  ro.global_batch = 64;
  ro.top = 5;
  const RankResult r = rank(m, c, ro);
  ASSERT_FALSE(r.best.empty());
  for (const Estimate& e : r.best) EXPECT_TRUE(e.feasible) << to_string(e.strategy);
  const Estimate& best = r.best.front();
  ASSERT_EQ(best.strategy.stage_layers.size(), static_cast<size_t>(best.strategy.pp));
  // Rank order puts the first stages on the A100s: the H100 stages take more layers.
  const auto& l = best.strategy.stage_layers;
  EXPECT_GT(l.back(), l.front());
  // The balanced split beats the even one of the same strategy.
  Strategy even = best.strategy;
  even.stage_layers.clear();
  EXPECT_LT(best.step_time_s, estimate(m, c, even).step_time_s);
  EXPECT_GT(r.rejected.count("a replica's ranks span node groups") +
                r.rejected.count("exceeds device memory"),
            0u);
}

// rank tries every order of up to four groups (which stages take which devices) and says
// the order when it is not the file's; the plan prices the same on a file written in it.
TEST(Mixed, RankTriesEveryOrderOfTheGroups) {
  const char* text = R"({"name": "small-first", "inter_node_bandwidth_GBps": 50,
    "intra_node_bandwidth_GBps": 300, "gpus_per_node": 8, "node_groups": [
      {"name": "small", "device": "a100-sxm4-80gb", "nodes": 1},
      {"name": "big", "device": "h200-sxm-141gb", "nodes": 1}]})";
  const char* swapped = R"({"name": "big-first", "inter_node_bandwidth_GBps": 50,
    "intra_node_bandwidth_GBps": 300, "gpus_per_node": 8, "node_groups": [
      {"name": "big", "device": "h200-sxm-141gb", "nodes": 1},
      {"name": "small", "device": "a100-sxm4-80gb", "nodes": 1}]})";
  const Model m = load_model("gpt3-13b");
  RankOptions ro;
  ro.global_batch = 64;
  ro.top = 3;
  const RankResult r = rank(m, parse_cluster_json(text, "small-first.json"), ro);
  const RankResult q = rank(m, parse_cluster_json(swapped, "big-first.json"), ro);
  ASSERT_FALSE(r.best.empty());
  ASSERT_FALSE(q.best.empty());
  // Searched in both orders from either file, each candidate counted once per order: the same
  // best plan.
  EXPECT_EQ(q.evaluated, r.evaluated);
  EXPECT_DOUBLE_EQ(q.best.front().step_time_s, r.best.front().step_time_s);
  // The file whose order loses names the winning order; a file written in that order prices
  // the plan the same.
  const bool small_first_wins = r.best.front().group_order.empty();
  const Estimate& named = small_first_wins ? q.best.front() : r.best.front();
  ASSERT_EQ(named.group_order, small_first_wins ? (std::vector<std::string>{"small", "big"})
                                                : (std::vector<std::string>{"big", "small"}));
  const Estimate again = estimate(
      m, parse_cluster_json(small_first_wins ? text : swapped, "winner.json"), named.strategy);
  EXPECT_DOUBLE_EQ(again.step_time_s, named.step_time_s);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// Past four groups, rank searches the file's order and the groups by speed either way (every
// order of five would be 120 searches).
TEST(Mixed, RankOnFiveGroupsTriesTheOrdersBySpeed) {
  const Cluster c = parse_cluster_json(R"({"name": "five", "inter_node_bandwidth_GBps": 25,
    "intra_node_bandwidth_GBps": 300, "gpus_per_node": 4, "node_groups": [
      {"name": "v1", "device": "v100-sxm2-32gb", "nodes": 1},
      {"name": "h1", "device": "h100-sxm5-80gb", "nodes": 1},
      {"name": "v2", "device": "v100-sxm2-32gb", "nodes": 1},
      {"name": "h2", "device": "h100-sxm5-80gb", "nodes": 1},
      {"name": "a1", "device": "a100-sxm4-80gb", "nodes": 1}]})",
                                       "five.json");
  RankOptions ro;
  ro.global_batch = 40;
  ro.top = 20;
  const RankResult r = rank(load_model("gpt3-1.3b"), c, ro);
  ASSERT_FALSE(r.best.empty());
  const std::vector<std::string> slow_first{"v1", "v2", "a1", "h1", "h2"};
  const std::vector<std::string> fast_first{"h2", "h1", "a1", "v2", "v1"};
  bool reordered = false;
  for (const Estimate& e : r.best) {
    if (e.group_order.empty()) continue;  // the file's
    reordered = true;
    EXPECT_TRUE(e.group_order == slow_first || e.group_order == fast_first)
        << fmt::format("{}", fmt::join(e.group_order, ","));
  }
  EXPECT_TRUE(reordered) << "no plan among the best 20 in an order by speed";
}

}  // namespace
}  // namespace shardcost
