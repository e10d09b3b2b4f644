#include "pricing.h"

#include <gtest/gtest.h>

namespace shardcost {
namespace {

TEST(Pricing, BusBandwidthFactorsAreNcclTests) {
  // nccl-tests doc/PERFORMANCE.md.
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::all_reduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::all_gather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::reduce_scatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::all_to_all, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::reduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::send_recv, 2), 1.0);
}

struct PricingFixture : ::testing::Test {
  Cluster c = load_cluster("dgx-a100", 64);
  const NodeGroup& g = c.groups.front();
  Pricer pr{g.device, g.intra_node, c.inter_node, g.gpus_per_node, nullptr};
};

TEST_F(PricingFixture, CollectiveIsLatencyPlusBusBytesOverBandwidth) {
  const double bytes = 1e9;
  const double bw = g.intra_node.bandwidth_Bps * g.intra_node.efficiency;
  EXPECT_DOUBLE_EQ(pr.collective(CollectiveOp::all_reduce, bytes, {8, 1}).seconds,
                   g.intra_node.latency_s + bytes * 2 * 7 / 8 / bw);
  EXPECT_EQ(pr.collective(CollectiveOp::all_reduce, bytes, {1, 1}).seconds, 0);
}

TEST_F(PricingFixture, PlacementDecidesTheFabricLevel) {
  EXPECT_EQ(pr.level({8, 1}), FabricLevel::intra_node);   // tp=8 inside a node
  EXPECT_EQ(pr.level({2, 4}), FabricLevel::intra_node);   // stride 4, two fit in 8
  EXPECT_EQ(pr.level({4, 4}), FabricLevel::inter_node);
  EXPECT_EQ(pr.level({8, 8}), FabricLevel::inter_node);   // one member per node
  EXPECT_EQ(pr.ranks_per_node({32, 1}), 8);
  EXPECT_EQ(pr.ranks_per_node({8, 8}), 1);
}

TEST_F(PricingFixture, AcrossNodesEachLocalMemberDrivesItsOwnNic) {
  const double bytes = 1e9;
  // One member per node: one NIC carries the ring. Eight per node: eight NICs do.
  const double one_nic = pr.collective(CollectiveOp::all_reduce, bytes, {8, 8}).seconds;
  const double eight_nics = pr.collective(CollectiveOp::all_reduce, bytes, {64, 1}).seconds;
  EXPECT_GT(one_nic, 6 * eight_nics);
  const double nic = c.inter_node.bandwidth_Bps * c.inter_node.efficiency;
  EXPECT_NEAR(one_nic, c.inter_node.latency_s + bytes * 2 * 7 / 8 / nic, 1e-9);
}

TEST_F(PricingFixture, GemmEfficiencyFallsForSmallAndRaggedShapes) {
  const Device& d = g.device;
  const double big = gemm_efficiency(d, {8192, 8192, 8192, 1});
  EXPECT_GT(big, 0.8 * d.gemm_efficiency);
  EXPECT_LE(big, d.gemm_efficiency);
  EXPECT_LT(gemm_efficiency(d, {8192, 8192, 64, 1}), 0.5 * big);  // short K
  EXPECT_LT(gemm_efficiency(d, {256, 256, 8192, 1}), 0.1 * big);  // 2 tiles on 108 SMs
  // One tile more than a whole wave costs a whole wave.
  const GemmShape exact{108 * 128, 128, 4096, 1}, plus_one{109 * 128, 128, 4096, 1};
  EXPECT_LT(gemm_efficiency(d, plus_one), 0.6 * gemm_efficiency(d, exact));
}

TEST_F(PricingFixture, GemmTimeIsARoofline) {
  const Priced large = pr.gemm({8192, 8192, 8192, 1});
  const double flops = 2.0 * 8192 * 8192 * 8192;
  EXPECT_NEAR(large.seconds,
              flops / (312e12 * gemm_efficiency(g.device, {8192, 8192, 8192, 1})) +
                  GemmModel::kKernelGap_s,
              1e-9);
  // A skinny GEMM is bound by memory, not by its FLOPs.
  const Priced skinny = pr.gemm({1, 8192, 8192, 1});
  EXPECT_GE(skinny.seconds, 2.0 * 8192 * 8192 / g.device.memory_bandwidth_Bps);
  EXPECT_EQ(large.origin, CostOrigin::catalog);
}

// A cost source that claims every collective and GEMM.
class FixedSource : public CostSource {
 public:
  std::optional<Priced> gemm(const Device&, DType, const GemmShape&) const override {
    return Priced{1e-3, CostOrigin::measured};
  }
  std::optional<Priced> collective(const Device&, CollectiveOp, double, int,
                                   FabricLevel) const override {
    return Priced{2e-3, CostOrigin::interpolated};
  }
};

TEST_F(PricingFixture, MeasuredCostsComeBeforeTheCatalog) {
  FixedSource src;
  Pricer measured{g.device, g.intra_node, c.inter_node, g.gpus_per_node, &src};
  EXPECT_EQ(measured.gemm({4096, 4096, 4096, 1}).origin, CostOrigin::measured);
  EXPECT_DOUBLE_EQ(measured.gemm({4096, 4096, 4096, 1}).seconds, 1e-3);
  EXPECT_EQ(measured.collective(CollectiveOp::all_gather, 1e6, {8, 1}).origin,
            CostOrigin::interpolated);
  EXPECT_EQ(measured.send_recv(1e6, 8).origin, CostOrigin::interpolated);
}

}  // namespace
}  // namespace shardcost
