// Variable-length data on mixed clusters (issue 14): each micro-batch priced stage by stage on
// the groups rank order places it on, as the fixed estimate is; fixed lengths reproduce it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "shardcost/estimator.h"
#include "shardcost/varlen.h"
#include "test_models.h"

namespace shardcost {
namespace {

Cluster two(const std::string& first, const std::string& second) {
  return parse_cluster_json(fmt::format(R"({{"name": "two", "inter_node_bandwidth_GBps": 50,
        "intra_node_bandwidth_GBps": 300, "gpus_per_node": 8, "node_groups": [
          {{"name": "a", "device": "{}", "nodes": 1}}, {{"name": "b", "device": "{}", "nodes": 1}}]}})",
                                        first, second),
                            "two.json");
}

Cluster one(const std::string& device) {
  return parse_cluster_json(fmt::format(R"({{"name": "one", "inter_node_bandwidth_GBps": 50,
        "intra_node_bandwidth_GBps": 300, "gpus_per_node": 8, "device": "{}", "nodes": 2}})",
                                        device),
                            "one.json");
}

const char* kPlans[] = {"tp=8,pp=2,mbs=1,gbs=32,sp=true",
                        "tp=4,pp=2,dp=2,mbs=1,gbs=32,vpp=2,sp=true,layers=12/20",
                        "tp=8,pp=1,dp=2,mbs=1,gbs=16,sp=true"};

TEST(VarlenMixed, FixedLengthsAreTheMixedEstimateExactly) {
  const Model m = load_model("llama3-8b");
  const Cluster c = two("a100-sxm4-80gb", "h100-sxm5-80gb");
  for (const char* text : kPlans) {
    const Strategy s = parse_strategy(text, 16);
    const Estimate fixed = estimate(m, c, s);
    VarlenOptions o;
    o.lengths = LengthDistribution::fixed(m.seq_len);
    o.batches = 5;
    const VarlenEstimate v = estimate_varlen(m, c, s, o);
    EXPECT_EQ(v.estimate.step_time_s, fixed.step_time_s) << text;
    EXPECT_EQ(v.estimate.memory_per_gpu_bytes, fixed.memory_per_gpu_bytes) << text;
    EXPECT_EQ(v.estimate.memory_capacity_bytes, fixed.memory_capacity_bytes) << text;
    EXPECT_EQ(v.estimate.mfu, fixed.mfu) << text;
    EXPECT_EQ(v.estimate.stages.size(), fixed.stages.size()) << text;
  }
}

VarlenOptions long_tail() {
  VarlenOptions o;
  o.lengths = LengthDistribution::parse("lognormal:median=1500,sigma=1.0,min=64,max=8192");
  o.batches = 20;
  o.seed = 3;
  return o;
}

// Two groups of one device are one group; a mixed cluster is never faster than the fastest
// group's devices everywhere, nor slower than the slowest's.
TEST(VarlenMixed, BetweenTheHomogeneousClustersOfEitherDevice) {
  const Model m = load_model("llama3-8b");
  for (const char* text : kPlans) {
    const Strategy s = parse_strategy(text, 16);
    const double same = estimate_varlen(m, two("h100-sxm5-80gb", "h100-sxm5-80gb"), s, long_tail())
                            .estimate.step_time_s;
    const double h100 =
        estimate_varlen(m, one("h100-sxm5-80gb"), s, long_tail()).estimate.step_time_s;
    EXPECT_NEAR(same, h100, 1e-9 * h100) << text;
    const double mixed = estimate_varlen(m, two("a100-sxm4-80gb", "h100-sxm5-80gb"), s, long_tail())
                             .estimate.step_time_s;
    const double a100 =
        estimate_varlen(m, one("a100-sxm4-80gb"), s, long_tail()).estimate.step_time_s;
    EXPECT_GT(mixed, h100) << text;
    EXPECT_LE(mixed, a100 * (1 + 1e-9)) << text;
  }
}

TEST(VarlenMixed, PerSequenceCpAndStageTpAreRefusedInOneLine) {
  const Model m = load_model("llama3-8b");
  const Cluster c = two("a100-sxm4-80gb", "h100-sxm5-80gb");
  VarlenOptions o = long_tail();
  EXPECT_NE(test_models::input_error_of([&] {
              (void)estimate_varlen(m, c,
                                    parse_strategy("tp=2,pp=2,cp=dynamic,cp_max=4,gbs=32", 16), o);
            }).find("cp=dynamic and cp=flex on a mixed cluster"),
            std::string::npos);
  EXPECT_NE(test_models::input_error_of([&] {
              (void)estimate_varlen(m, c, parse_strategy("stage_tp=8/4/4,gbs=32", 16), o);
            }).find("stage_tp"),
            std::string::npos);
}

}  // namespace
}  // namespace shardcost
