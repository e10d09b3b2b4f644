// Input pipelines (issue 39 item 4): each data-parallel replica's loader prepares its share of
// the next step's samples while this one computes; a step waits only for what loading takes
// beyond its compute. Checked by hand from the step's own compute.
#include <gtest/gtest.h>

#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost {
namespace {

TEST(DataLoading, ParsedWithEachMistakeNamed) {
  const DataLoading d = parse_data_loading("cores=6,rate=450.5");
  EXPECT_EQ(d.cores_per_rank, 6);
  EXPECT_DOUBLE_EQ(d.samples_per_s_per_core, 450.5);
  EXPECT_EQ(to_string(d), "cores=6,rate=450.5");
  EXPECT_EQ(parse_data_loading("rate=2,cores=1").cores_per_rank, 1);
  for (const char* bad : {"", "cores=4", "rate=10", "cores=0,rate=1", "cores=1.5,rate=1",
                          "cores=2,rate=-1", "cores=2,rate=nan", "cores=2,rate=1,", "cores=2,x=1",
                          "cores=2;rate=1", "cores=5000,rate=1"})
    EXPECT_THROW(parse_data_loading(bad), InputError) << bad;
}

TEST(DataLoading, BudgetByHand) {
  // 512 samples over 8 loaders: 64 each; at 4 cores x 100 samples/s a loader takes 0.16 s.
  const InputBudget fast = input_budget({4, 100}, 512, 8, 0.2);
  EXPECT_DOUBLE_EQ(fast.samples_per_loader, 64);
  EXPECT_DOUBLE_EQ(fast.load_s, 0.16);
  EXPECT_EQ(fast.wait_s, 0);
  EXPECT_FALSE(fast.input_bound());
  EXPECT_DOUBLE_EQ(fast.cores_to_keep_up, 3.2);  // 0.64 core-seconds in 0.2 s
  const InputBudget slow = input_budget({2, 100}, 512, 8, 0.2);
  EXPECT_DOUBLE_EQ(slow.load_s, 0.32);
  EXPECT_NEAR(slow.wait_s, 0.12, 1e-12);
  EXPECT_TRUE(slow.input_bound());
}

double part(const Estimate& e, const char* name) {
  for (const TimePart& p : e.time)
    if (p.name == name) return p.seconds;
  return -1;
}

TEST(DataLoading, AnInputBoundPlanRunsAtItsLoadersPace) {
  const Model m = load_model("gpt3-1.3b");
  const Cluster c = load_cluster("dgx-h100", 8);
  const Strategy s = parse_strategy("tp=2,pp=1,dp=4,mbs=1,gbs=64,zero=1", 8);
  const Estimate free = estimate(m, c, s);
  EXPECT_FALSE(free.input);
  EXPECT_EQ(part(free, "input_wait"), -1);  // the breakdown as before without a loader

  // 16 samples per replica: at 1 core that keeps up 10 % faster than the step, no wait; at
  // half that rate the step takes the loader's time.
  const double compute = free.step_time_s;
  const double keeps_up = 16 / (0.9 * compute);
  EstimateOptions o;
  o.loading = DataLoading{1, keeps_up};
  const Estimate ok = estimate(m, c, s, o);
  ASSERT_TRUE(ok.input);
  EXPECT_EQ(ok.input->loaders, 4);
  EXPECT_DOUBLE_EQ(ok.input->samples_per_loader, 16);
  EXPECT_NEAR(ok.step_time_s, compute, 1e-12);
  EXPECT_EQ(part(ok, "input_wait"), 0);

  o.loading = DataLoading{1, keeps_up / 2};
  const Estimate bound = estimate(m, c, s, o);
  const double load = 16 / (keeps_up / 2);  // 1.8 x compute
  EXPECT_NEAR(bound.step_time_s, load, 1e-9 * load);
  EXPECT_NEAR(part(bound, "input_wait"), load - compute, 1e-9 * load);
  EXPECT_NEAR(bound.tokens_per_s, free.tokens_per_s * compute / load, 1e-6 * free.tokens_per_s);
  EXPECT_NEAR(bound.input->cores_to_keep_up, 1.8, 1e-9);
  // Twice the cores: 0.9 x compute again, no wait.
  o.loading = DataLoading{2, keeps_up / 2};
  EXPECT_NEAR(estimate(m, c, s, o).step_time_s, compute, 1e-12);
}

// More replicas split the step's samples over more loaders: with loading the bottleneck, rank
// moves to the plans with the most data-parallel replicas.
TEST(DataLoading, RankPrefersMoreLoadersWhenInputBound) {
  const Model m = load_model("gpt3-1.3b");
  const Cluster c = load_cluster("dgx-h100", 8);
  RankOptions ro;
  ro.global_batch = 64;
  ro.top = 5;
  const RankResult free = rank(m, c, ro);
  ASSERT_FALSE(free.best.empty());
  ro.estimate.loading = DataLoading{1, 0.5};  // 8 samples per replica at dp=8: 16 s
  const RankResult bound = rank(m, c, ro);
  ASSERT_FALSE(bound.best.empty());
  for (const Estimate& e : bound.best) {
    EXPECT_EQ(e.strategy.dp, 8) << to_string(e.strategy);
    EXPECT_NEAR(e.step_time_s, 16, 1e-9);
    EXPECT_TRUE(e.input->input_bound());
  }
}

}  // namespace
}  // namespace shardcost
