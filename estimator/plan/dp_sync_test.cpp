// Asynchronous and local data-parallel updates (dp_sync, issue 39 item 2): parsed, checked, and
// priced from the same exchange synchronous training makes, by hand.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost {
namespace {

double part(const Estimate& e, const char* name) {
  for (const TimePart& p : e.time)
    if (p.name == name) return p.seconds;
  ADD_FAILURE() << "no part " << name;
  return 0;
}

TEST(DpSync, ParsedAndCheckedAsAStrategyKey) {
  const Strategy a = parse_strategy("tp=1,dp=16,zero=0,dp_sync=async:3", 16);
  EXPECT_EQ(a.dp_sync, DpSync::async);
  EXPECT_EQ(a.dp_sync_steps, 3);
  EXPECT_NE(to_string(a).find(",dp_sync=async:3"), std::string::npos) << to_string(a);
  const Strategy l = parse_strategy("tp=1,dp=16,zero=0,dp_sync=local:8", 16);
  EXPECT_EQ(l.dp_sync, DpSync::local);
  EXPECT_EQ(dp_sync_text(l), "local:8");
  // Synchronous strategies read as they always did.
  EXPECT_EQ(to_string(parse_strategy("tp=1,dp=16,dp_sync=sync", 16)).find("dp_sync"),
            std::string::npos);
  for (const char* bad :
       {"dp_sync=async", "dp_sync=async:0", "dp_sync=local:x", "dp_sync=lazy", "dp_sync=sync:2"})
    EXPECT_THROW(parse_strategy(std::string("tp=1,dp=16,") + bad, 16), InputError) << bad;
  const Model m = load_model("gpt3-1.3b");
  const Cluster c = load_cluster("dgx-h100", 16);
  // Each replica keeps its own optimizer: no ZeRO; and there must be replicas to agree.
  EXPECT_THROW(estimate(m, c, parse_strategy("tp=1,dp=16,gbs=64,zero=1,dp_sync=async:2", 16)),
               InputError);
  EXPECT_THROW(estimate(m, c, parse_strategy("tp=16,dp=1,gbs=64,zero=0,dp_sync=local:4", 16)),
               InputError);
  EXPECT_THROW(estimate(m, c, parse_strategy("tp=1,dp=16,gbs=64,zero=0,dp_sync=local:1", 16)),
               InputError);
}

// From the synchronous step's parts: its computation P (the step less its exposed
// data-parallel part) and one exchange C (every data-parallel collective of the step, hidden or
// not): local:H carries C/H a step, async a step takes max(P, C), gradients ceil(C/P) late.
TEST(DpSync, PricedFromTheSynchronousExchangeByHand) {
  const Model m = load_model("gpt3-1.3b");
  // NVLink within a node and 4 nodes over their network (the exchange shorter than the
  // computation), and 4 nodes over a 4 Gb/s network (longer: async is bound by it).
  const Cluster slow = parse_cluster_json(
      R"({"name": "slow", "device": "a100-sxm4-80gb", "gpus_per_node": 8, "nodes": 4,
          "intra_node_bandwidth_GBps": 300, "inter_node_bandwidth_GBps": 0.5})",
      "slow");
  bool bound_by_exchange = false;
  for (const auto& [cluster, gpus, gbs] :
       {std::tuple{"dgx-h100", 8, 64}, std::tuple{"dgx-a100", 32, 32}, std::tuple{"", 32, 32}}) {
    const Cluster c = *cluster ? load_cluster(cluster, gpus) : slow;
    const std::string base = fmt::format("tp=1,pp=1,dp={},mbs=1,gbs={},zero=0", gpus, gbs);
    const Estimate sync = estimate(m, c, parse_strategy(base, gpus));
    const Estimate local = estimate(m, c, parse_strategy(base + ",dp_sync=local:8", gpus));
    const Estimate async = estimate(m, c, parse_strategy(base + ",dp_sync=async:4", gpus));
    ASSERT_TRUE(local.dp_sync && async.dp_sync);
    EXPECT_FALSE(sync.dp_sync);
    const double compute = sync.step_time_s - part(sync, "dp_comm");
    const double exchange = local.dp_sync->exchange_s;
    EXPECT_GE(exchange, part(sync, "dp_comm"));  // sync hides part of it
    EXPECT_DOUBLE_EQ(async.dp_sync->exchange_s, exchange);
    EXPECT_NEAR(local.step_time_s, compute + exchange / 8, 1e-9 * compute);
    EXPECT_NEAR(async.step_time_s, std::max(compute, exchange), 1e-9 * compute);
    const int late = std::min(4, std::max(1, static_cast<int>(std::ceil(exchange / compute))));
    EXPECT_EQ(async.dp_sync->staleness, late) << cluster;
    EXPECT_DOUBLE_EQ(async.dp_sync->per_update_s, async.step_time_s);
    EXPECT_DOUBLE_EQ(async.dp_sync->per_sample_s, async.step_time_s / gbs);
    // Neither is slower than synchronous training, nor faster than its computation.
    EXPECT_LE(local.step_time_s, sync.step_time_s + 1e-12);
    EXPECT_LE(async.step_time_s, sync.step_time_s + 1e-12);
    EXPECT_GE(async.step_time_s, compute - 1e-12);
    bound_by_exchange = bound_by_exchange || exchange > compute;
  }
  EXPECT_TRUE(bound_by_exchange);  // both sides of max(P, C) were priced
}

// rank never searches them unless pinned: what is trained changes.
TEST(DpSync, RankSearchesThemOnlyWhenPinned) {
  RankOptions o;
  o.global_batch = 64;
  o.top = 50;
  const RankResult plain = rank(load_model("gpt3-1.3b"), load_cluster("dgx-h100", 16), o);
  for (const Estimate& e : plain.best) EXPECT_EQ(e.strategy.dp_sync, DpSync::sync);
  o.fixed = "dp_sync=local:4";
  const RankResult pinned = rank(load_model("gpt3-1.3b"), load_cluster("dgx-h100", 16), o);
  ASSERT_FALSE(pinned.best.empty());
  for (const Estimate& e : pinned.best) {
    EXPECT_EQ(e.strategy.dp_sync, DpSync::local);
    EXPECT_EQ(e.strategy.zero, 0);
    EXPECT_GE(e.strategy.dp, 2);
  }
}

}  // namespace
}  // namespace shardcost
