#include <gtest/gtest.h>

#include "pricing.h"

namespace shardcost {
namespace {

// P(a unit holding `held` of `pool` experts gets none of k drawn without replacement).
double miss(double pool, double held, int k) {
  double p = 1;
  for (int i = 0; i < k; ++i) p *= (pool - held - i) / (pool - i);
  return p;
}

// A token's k routed experts, spread evenly over the units (GPUs or nodes) of an expert-
// parallel group, reach this many distinct units on average: each unit missed with the
// hypergeometric probability of drawing none of its experts.
TEST(RoutedDispatch, UnitsReachedByUniformRouting) {
  const Routing mixtral{8, 2, 0, 0};
  // 8 experts on 4 GPUs, 2 each: P(miss) = 6/8 x 5/7 = 15/28; 4 x 13/28 reached.
  EXPECT_NEAR(expected_units_hit(mixtral, 4), 4 * (1 - 15.0 / 28), 1e-12);
  EXPECT_DOUBLE_EQ(expected_units_hit(mixtral, 1), 1);
  // 8 experts on 8 GPUs, top 2: always 2 GPUs.
  EXPECT_NEAR(expected_units_hit(mixtral, 8), 2, 1e-12);
  const Routing fine{256, 8, 0, 0};
  EXPECT_NEAR(expected_units_hit(fine, 4), 4 * (1 - miss(256, 64, 8)), 1e-12);
  // Never more units than copies.
  EXPECT_LE(expected_units_hit(fine, 256), 8.0 + 1e-9);
}

// DeepSeek-V3's group-limited routing (n_group 8, topk_group 4): a token's 8 experts lie in 4
// of 8 groups of 32. On 8 nodes of 32 experts each node is a group: 4 nodes reached, the
// technical report's "at most 4 nodes" (8 x (1 - C(7,4)/C(8,4)) = 8 x 1/2). On 4 nodes (two
// groups each): 4 x (1 - C(6,4)/C(8,4)) = 4 x (1 - 15/70). On 64 GPUs (4 experts each) a group
// spans 8 GPUs: the 8 experts are drawn from the 4 groups' 128 over their 32 GPUs.
TEST(RoutedDispatch, GroupLimitedRoutingReachesFewerUnits) {
  const Routing v3{256, 8, 8, 4};
  EXPECT_NEAR(expected_units_hit(v3, 8), 4, 1e-12);
  EXPECT_NEAR(expected_units_hit(v3, 4), 4 * (1 - 15.0 / 70), 1e-12);
  EXPECT_NEAR(expected_units_hit(v3, 64), 32 * (1 - miss(128, 4, 8)), 1e-12);
  EXPECT_LT(expected_units_hit(v3, 8), expected_units_hit(Routing{256, 8, 0, 0}, 8));
}

// Through a deduplicating dispatcher the network carries one copy per remote node reached:
// a flat all-to-all of (bytes / k) x nodes reached puts exactly that through the NICs, so the
// dispatch costs what that all-to-all costs (or the NVLink forwarding, if slower). DeepSeek-
// V3 over 4 DGX B200 nodes (ep 32): 3.14 nodes reached, against the flat dispatch's 8 copies.
TEST(RoutedDispatch, OverNodesTheNetworkCarriesOneCopyPerNodeReached) {
  const Cluster c = load_cluster("dgx-b200", 32);
  const NodeGroup& g = c.groups.front();
  const Pricer pr{g.device, g.intra_node, c.inter_node, g.gpus_per_node, nullptr};
  const Routing v3{256, 8, 8, 4};
  const GroupPlacement ep32{32, 1};
  const double bytes = 4096.0 * 8 * 7168 * 2;  // 4,096 tokens' 8 copies in bf16
  const double nodes = 4 * (1 - 15.0 / 70);
  const Priced routed = pr.routed_all_to_all(bytes, v3, ep32);
  const Priced network = pr.collective(CollectiveOp::all_to_all, bytes / 8 * nodes, ep32);
  const Priced nvlink = pr.collective(CollectiveOp::all_to_all,
                                      bytes / 8 * expected_units_hit(v3, 32), GroupPlacement{8, 1});
  EXPECT_DOUBLE_EQ(routed.seconds, std::max(network.seconds, nvlink.seconds));
  EXPECT_DOUBLE_EQ(routed.seconds, network.seconds);  // the NICs are the bottleneck
  const Priced flat = pr.collective(CollectiveOp::all_to_all, bytes, ep32);
  EXPECT_NEAR(routed.seconds / flat.seconds, nodes / 8, 0.02);
  // Inside one node only the GPUs reached get a copy; not routed, the flat all-to-all.
  const GroupPlacement ep8{8, 1};
  EXPECT_DOUBLE_EQ(
      pr.routed_all_to_all(bytes, v3, ep8).seconds,
      pr.collective(CollectiveOp::all_to_all, bytes / 8 * expected_units_hit(v3, 8), ep8).seconds);
  EXPECT_DOUBLE_EQ(pr.routed_all_to_all(bytes, Routing{}, ep32).seconds, flat.seconds);
}

}  // namespace
}  // namespace shardcost
