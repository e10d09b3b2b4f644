// Predictor: the cost sources in order, then the catalog, on one device.
#include "shardcost/predict.h"

#include <gtest/gtest.h>

#include <cmath>

#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/store_costs.h"

namespace shardcost {
namespace {

const char* kA100 = "NVIDIA A100-SXM4-80GB";

TEST(Predict, StoreFirstThenTheCatalog) {
  // Two measured rows of aiconfigurator's A100 table (n = k = 4096).
  const StoreCosts store({}, {{kA100, DType::bf16, {2048, 4096, 4096, 1}, 328049e-9},
                              {kA100, DType::bf16, {4096, 4096, 4096, 1}, 548896e-9}});
  const Predictor p(find_device("a100-sxm4-80gb"), load_cluster("dgx-a100"), &store);
  const Priced exact = p.gemm({4096, 4096, 4096, 1}, DType::bf16);
  EXPECT_EQ(exact.origin, CostOrigin::measured);
  EXPECT_DOUBLE_EQ(exact.seconds, 548896e-9);
  const Priced between = p.gemm({3000, 4096, 4096, 1}, DType::bf16);
  EXPECT_EQ(between.origin, CostOrigin::interpolated);
  EXPECT_GT(between.seconds, 328049e-9);
  EXPECT_LT(between.seconds, 548896e-9);
  EXPECT_EQ(p.gemm({100, 4096, 4096, 1}, DType::bf16).origin, CostOrigin::catalog);
  // Another data type is another measurement: the catalog's.
  EXPECT_EQ(p.gemm({4096, 4096, 4096, 1}, DType::fp16).origin, CostOrigin::catalog);
  EXPECT_THROW(p.gemm({4096, 4096, 4096, 1}, DType::fp8), InputError);  // no fp8 on A100
  EXPECT_THROW(p.gemm({0, 4096, 4096, 1}, DType::bf16), InputError);
}

TEST(Predict, CatalogGemmsScaleWithThePeakOfTheirType) {
  // A large square GEMM is compute-bound: fp32 (19.5 TFLOP/s, no tensor cores) against bf16
  // (312) on A100 is their datasheet ratio, less the fixed launch gap and less the share of the
  // tiles' fixed prologue, which the slower type amortises over fewer K steps (96 x 19.5/312).
  const Predictor p(find_device("a100-sxm4-80gb"), std::nullopt, nullptr);
  const double bf16 = p.gemm({8192, 8192, 8192, 1}, DType::bf16).seconds;
  const double fp32 = p.gemm({8192, 8192, 8192, 1}, DType::fp32).seconds;
  EXPECT_NEAR((fp32 - 2e-6) / (bf16 - 2e-6), 312.0 / 19.5 * (8192 + 6.0) / (8192 + 96.0), 1e-9);
}

TEST(Predict, CollectivesAtEveryLayoutNcclRuns) {
  const Predictor none(find_device("a100-sxm4-80gb"), std::nullopt, nullptr);
  EXPECT_THROW(none.collective(CollectiveOp::all_reduce, 1 << 20, 8, 1), InputError);
  const Predictor p(find_device("a100-sxm4-80gb"), load_cluster("dgx-a100"), nullptr);
  // What cannot run: one rank, a node with none, more ranks on a node than its 8 GPUs.
  EXPECT_THROW(p.collective(CollectiveOp::all_reduce, 1 << 20, 1, 1), InputError);
  EXPECT_THROW(p.collective(CollectiveOp::all_reduce, 1 << 20, 3, 4), InputError);
  EXPECT_THROW(p.collective(CollectiveOp::all_reduce, 1 << 20, 4, 0), InputError);
  EXPECT_THROW(p.collective(CollectiveOp::all_reduce, 1 << 20, 16, 1), InputError);
  EXPECT_THROW(p.collective(CollectiveOp::all_reduce, 1 << 20, 17, 2), InputError);
  EXPECT_THROW(p.collective(CollectiveOp::send_recv, 1 << 20, 4, 1), InputError);
  // Every rank count on one node, none refused: more ranks move more of the buffer (bus
  // factor 2(n-1)/n), so the time grows with them.
  double previous = 0;
  for (int ranks = 2; ranks <= 8; ++ranks) {
    const CollectiveAnswer a = p.collective(CollectiveOp::all_reduce, 1 << 28, ranks, 1);
    EXPECT_EQ(a.priced.origin, CostOrigin::catalog);
    EXPECT_EQ(a.most_per_node, ranks);
    EXPECT_EQ(a.fewest_per_node, ranks);
    EXPECT_EQ(a.basis.how.rfind("catalog: the node's links", 0), 0u) << a.basis.how;
    EXPECT_GT(a.priced.seconds, previous) << ranks;
    previous = a.priced.seconds;
  }
  // Between nodes: 3 a node over 2 nodes, 4 a node over 3, and 7 over 2 (4 and 3). The fewest
  // a node holds set the NICs that carry it: 7 ranks (3 NICs) are slower than 8 (4 NICs).
  const CollectiveAnswer six = p.collective(CollectiveOp::all_reduce, 1 << 28, 6, 2);
  EXPECT_EQ(six.most_per_node, 3);
  const CollectiveAnswer twelve = p.collective(CollectiveOp::all_reduce, 1 << 28, 12, 3);
  EXPECT_EQ(twelve.fewest_per_node, 4);
  const CollectiveAnswer seven = p.collective(CollectiveOp::all_reduce, 1 << 28, 7, 2);
  EXPECT_EQ(seven.most_per_node, 4);
  EXPECT_EQ(seven.fewest_per_node, 3);
  EXPECT_NE(seven.basis.how.find("3 NICs a node"), std::string::npos) << seven.basis.how;
  const double eight = p.collective(CollectiveOp::all_reduce, 1 << 28, 8, 2).priced.seconds;
  EXPECT_GT(seven.priced.seconds, eight);
  // Two nodes are slower than one for the same 8 ranks' worth of data.
  const double one = p.collective(CollectiveOp::all_reduce, 1 << 28, 8, 1).priced.seconds;
  const double two = p.collective(CollectiveOp::all_reduce, 1 << 28, 16, 2).priced.seconds;
  EXPECT_GT(two, one);
  EXPECT_GT(six.priced.seconds,
            p.collective(CollectiveOp::all_reduce, 1 << 28, 6, 1).priced.seconds);
  // Nodes of one NVLink domain (4-GPU trays of an NVL72 rack) talk over NVLink.
  const Predictor rack(find_device("gb200"), load_cluster("gb200-nvl72"), nullptr);
  const CollectiveAnswer trays = rack.collective(CollectiveOp::all_reduce, 1 << 28, 8, 2);
  EXPECT_EQ(trays.basis.how.rfind("catalog: the node's links", 0), 0u) << trays.basis.how;
}

TEST(Predict, MemoryCopiesMoveTheirSizeTwiceThroughHbm) {
  const Predictor p(find_device("h100-sxm5-80gb"), std::nullopt, nullptr);
  const double gap = 2e-6;
  const double copy = p.memory("copy_d2d", 1 << 30).seconds - gap;
  const double set = p.memory("memset", 1 << 30).seconds - gap;
  EXPECT_NEAR(copy / set, 2.0, 1e-12);
  // Host copies cross PCIe, slower than HBM by far.
  EXPECT_GT(p.memory("copy_h2d", 1 << 30).seconds, 10 * copy);
  EXPECT_THROW(p.memory("copy", 1 << 20), InputError);
  const StoreCosts store({}, {},
                         {{"NVIDIA H100 80GB HBM3", "copy_d2d", 1 << 30, 0.5e-3},
                          {"NVIDIA H100 80GB HBM3", "copy_d2d", 2.0 * (1 << 30), 2e-3}});
  const Predictor measured(find_device("h100-sxm5-80gb"), std::nullopt, &store);
  EXPECT_EQ(measured.memory("copy_d2d", 1 << 30).origin, CostOrigin::measured);
  const Priced between = measured.memory("copy_d2d", std::sqrt(2.0) * (1 << 30));
  EXPECT_EQ(between.origin, CostOrigin::interpolated);
  EXPECT_NEAR(between.seconds, 1e-3, 1e-12);  // halfway in log-log
  // Beyond the last point: not the interpolation's (a learned model's, else the catalog's).
  EXPECT_EQ(measured.memory("copy_d2d", 4.0 * (1 << 30)).origin, CostOrigin::catalog);
}

}  // namespace
}  // namespace shardcost
