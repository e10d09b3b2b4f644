// Activation offloading (Strategy::offload, Megatron-core's --cpu-offloading-num-layers): the
// offloaded layers' activations leave the GPU, and their copies over the host link cost only
// what outlasts the next layer's compute.
#include <gtest/gtest.h>

#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "test_models.h"
#include "workload/transformer.h"

namespace shardcost {
namespace {

using test_models::memory_part;
using test_models::part;

const char* const kPlan = "tp=1,pp=1,dp=8,mbs=1,gbs=8,zero=3,recompute=none";

TEST(Offload, OffloadedLayersKeepNothingOnTheGpu) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 8);
  const Strategy none = parse_strategy(kPlan, 8);
  const Estimate kept = estimate(m, c, none);
  const Estimate off = estimate(m, c, parse_strategy(std::string(kPlan) + ",offload=8", 8));
  // Eight layers of Llama 3 8B, one sequence of 8192 each, no longer held at the peak.
  const double layer = layer_activation_bytes(m, none, AttentionKernel::flash, Recompute::none);
  EXPECT_NEAR(memory_part(kept, "activations") - memory_part(off, "activations"), 8 * layer, 1);
  EXPECT_EQ(to_string(off.strategy).find(",offload=8") != std::string::npos, true);
}

TEST(Offload, CopiesHideBehindComputeUntilTheHostLinkIsTooSlow) {
  const Model m = load_model("llama3-8b");
  Cluster c = load_cluster("dgx-h100", 8);
  const Strategy none = parse_strategy(kPlan, 8);
  const Strategy off = parse_strategy(std::string(kPlan) + ",offload=8", 8);
  const double layer = layer_activation_bytes(m, none, AttentionKernel::flash, Recompute::none);
  // A host link far faster than the compute: every copy hides, the step is unchanged.
  c.groups.front().device.pcie_bandwidth_Bps = 1e15;
  EXPECT_NEAR(estimate(m, c, off).step_time_s, estimate(m, c, none).step_time_s, 1e-9);
  // 1 GB/s: each copy takes layer/1e9 seconds each way, far beyond a layer's compute, so the
  // step grows by nearly 2 x 8 copies, less at most the compute that hides them.
  c.groups.front().device.pcie_bandwidth_Bps = 1e9;
  const Estimate slow = estimate(m, c, off), base = estimate(m, c, none);
  const double copies = 2 * 8 * layer / 1e9;
  const double compute = part(base, "compute_forward") + part(base, "compute_backward");
  const double grown = slow.step_time_s - base.step_time_s;
  EXPECT_LE(grown, copies + 16 * 20e-6);  // each copy's kernel gap at most
  EXPECT_GE(grown, copies - compute);
  EXPECT_GT(part(slow, "compute_forward"), part(base, "compute_forward"));
}

TEST(Offload, MegatronsRulesHold) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 8);
  auto why = [&](const char* extra) {
    return check_strategy(m, c, parse_strategy(std::string(kPlan) + extra, 8));
  };
  EXPECT_FALSE(why(",offload=31").has_value());
  EXPECT_TRUE(why(",offload=32").has_value());  // the last layer stays
  EXPECT_TRUE(
      check_strategy(m, c, parse_strategy("tp=1,pp=1,dp=8,mbs=1,gbs=8,recompute=full,offload=4", 8))
          .has_value());
  EXPECT_TRUE(
      check_strategy(m, c, parse_strategy("tp=1,pp=2,dp=4,mbs=1,gbs=8,offload=4", 8)).has_value());
}

}  // namespace
}  // namespace shardcost
