// StoreCosts: measured curves and shapes, interpolation, and a plan priced from the store.
#include "shardcost/store_costs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "costs/pricing.h"
#include "shardcost/db.h"
#include "shardcost/estimator.h"
#include "shardcost/importers.h"

namespace shardcost {
namespace {

Device a100() {
  return find_device("a100-sxm4-80gb");
}

// busbw in GB/s at each size; time from nccl-tests' definition.
std::vector<CollectiveSample> curve(const std::string& device, CollectiveOp op, int ranks,
                                    FabricLevel level, double busbw_gbps) {
  std::vector<CollectiveSample> out;
  const double factor = op == CollectiveOp::all_reduce ? 2.0 * (ranks - 1) / ranks : 1.0;
  for (double bytes = 1 << 20; bytes <= (1 << 30); bytes *= 2)
    out.push_back({device, op, ranks, level, bytes, 5e-6 + bytes * factor / (busbw_gbps * 1e9)});
  return out;
}

TEST(StoreCosts, ExactSizeIsMeasuredBetweenIsInterpolated) {
  const StoreCosts costs(
      curve("NVIDIA A100-SXM4-80GB", CollectiveOp::all_reduce, 8, FabricLevel::intra_node, 200),
      {});
  const auto exact = costs.collective(a100(), CollectiveOp::all_reduce, 1 << 20, GroupShape{8, 1});
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->origin, CostOrigin::measured);
  EXPECT_NEAR(exact->seconds, 5e-6 + (1 << 20) * 1.75 / 200e9, 1e-12);
  const auto between =
      costs.collective(a100(), CollectiveOp::all_reduce, 1.5 * (1 << 20), GroupShape{8, 1});
  ASSERT_TRUE(between);
  EXPECT_EQ(between->origin, CostOrigin::interpolated);
  const auto lo = costs.collective(a100(), CollectiveOp::all_reduce, 1 << 20, GroupShape{8, 1});
  const auto hi = costs.collective(a100(), CollectiveOp::all_reduce, 1 << 21, GroupShape{8, 1});
  // Time linear in bytes between neighbours: latency plus bytes over the bandwidth, exactly.
  EXPECT_NEAR(between->seconds, 0.5 * (lo->seconds + hi->seconds), 1e-15);
  // Beyond the measured sizes the interpolation does not guess: a learned model or the
  // catalog prices there.
  EXPECT_FALSE(costs.collective(a100(), CollectiveOp::all_reduce, 1024, GroupShape{8, 1}));
  EXPECT_FALSE(
      costs.collective(a100(), CollectiveOp::all_reduce, 4.0 * (1 << 30), GroupShape{8, 1}));
  // Nor between measurements further apart than a factor 2.
  std::vector<CollectiveSample> sparse;
  for (double b : {1.0 * (1 << 20), 8.0 * (1 << 20)})
    sparse.push_back({"NVIDIA A100-SXM4-80GB", CollectiveOp::all_reduce, 8, FabricLevel::intra_node,
                      b, 1e-5 + b / 1e11});
  EXPECT_FALSE(StoreCosts(sparse, {})
                   .collective(a100(), CollectiveOp::all_reduce, 1 << 22, GroupShape{8, 1}));
}

TEST(StoreCosts, MatchesOpLevelAndDevice) {
  const StoreCosts costs(
      curve("NVIDIA A100-SXM4-80GB", CollectiveOp::all_reduce, 8, FabricLevel::intra_node, 200),
      {});
  EXPECT_FALSE(costs.collective(a100(), CollectiveOp::all_gather, 1 << 20, GroupShape{8, 1}));
  EXPECT_FALSE(costs.collective(a100(), CollectiveOp::all_reduce, 1 << 20, GroupShape{8, 2}));
  EXPECT_FALSE(costs.collective(find_device("h100-sxm5-80gb"), CollectiveOp::all_reduce, 1 << 20,
                                GroupShape{8, 1}));
  // Another rank count is a learned model's (where the links are uniform) or the catalog's.
  EXPECT_FALSE(costs.collective(a100(), CollectiveOp::all_reduce, 1 << 20, GroupShape{4, 1}));
}

TEST(StoreCosts, DriverNamesFindTheirCatalogDevice) {
  // nvidia-smi's names: aliases in the catalog, or the model and memory tokens.
  EXPECT_EQ(catalog_device_for("NVIDIA H100 80GB HBM3")->name, "h100-sxm5-80gb");
  EXPECT_EQ(catalog_device_for("NVIDIA H200")->name, "h200-sxm-141gb");
  EXPECT_EQ(catalog_device_for("NVIDIA B200")->name, "b200-sxm-180gb");
  EXPECT_EQ(catalog_device_for("NVIDIA A100-SXM4-40GB")->name, "a100-sxm4-40gb");
  // Another package of the same GPU is another device: no SXM figures for a PCIe card.
  EXPECT_FALSE(catalog_device_for("NVIDIA H100 PCIe"));
  EXPECT_FALSE(catalog_device_for("NVIDIA A100 80GB PCIe"));
  EXPECT_FALSE(same_device_name("NVIDIA H100 NVL", "h100-sxm5-80gb"));
  // The model number decides, past brand words: two RTX cards are not one.
  EXPECT_FALSE(same_device_name("rtx-3090", "rtx-4090"));
  EXPECT_FALSE(same_device_name("NVIDIA RTX 6000 Ada Generation", "rtx-a6000"));
  EXPECT_TRUE(same_device_name("NVIDIA GeForce RTX 4090", "rtx-4090"));
  EXPECT_TRUE(same_device_name("NVIDIA H100 80GB HBM3", "h100-sxm5-80gb"));
  EXPECT_EQ(catalog_device_for("Tesla V100-SXM2-32GB")->name, "v100-sxm2-32gb");
  EXPECT_EQ(catalog_device_for("Tesla V100-SXM2-16GB")->name, "v100-sxm2-16gb");
  // A name without the memory (as some tables write it) is one of them: the links are alike.
  EXPECT_EQ(catalog_device_for("Tesla V100-SXM2")->architecture, "volta");
  EXPECT_FALSE(catalog_device_for("Tesla V100-PCIE-32GB"));
}

TEST(StoreCosts, DeviceNamesNormalise) {
  EXPECT_EQ(normalize_device_name("NVIDIA A100-SXM4-80GB"), "a100-sxm4-80gb");
  EXPECT_EQ(normalize_device_name("NVIDIA H100 80GB HBM3"), "h100-80gb-hbm3");
  const StoreCosts costs(
      curve("NVIDIA H100 80GB HBM3", CollectiveOp::all_reduce, 8, FabricLevel::intra_node, 400),
      {});
  EXPECT_TRUE(costs.collective(find_device("h100-sxm5-80gb"), CollectiveOp::all_reduce, 1 << 20,
                               GroupShape{8, 1}));
}

TEST(StoreCosts, GemmExactInterpolatedOrNothing) {
  auto store = [](std::initializer_list<std::pair<int64_t, double>> points) {
    std::vector<GemmSample> g;
    for (const auto& [m, tflops] : points)
      g.push_back({"NVIDIA A100-SXM4-80GB",
                   DType::bf16,
                   {m, 4096, 4096, 1},
                   2.0 * m * 4096 * 4096 / (tflops * 1e12)});
    return StoreCosts({}, g);
  };
  const StoreCosts costs = store({{2048, 150}, {4096, 250}});
  const auto exact = costs.gemm(a100(), DType::bf16, {4096, 4096, 4096, 1});
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->origin, CostOrigin::measured);
  // 2896 is the geometric middle of 2048 and 4096: halfway in log m, 200 TFLOP/s.
  const auto mid = costs.gemm(a100(), DType::bf16, {2896, 4096, 4096, 1});
  ASSERT_TRUE(mid);
  EXPECT_EQ(mid->origin, CostOrigin::interpolated);
  EXPECT_NEAR(2.0 * 2896 * 4096 * 4096 / mid->seconds / 1e12, 200, 0.05);
  EXPECT_FALSE(costs.gemm(a100(), DType::bf16, {8192, 4096, 4096, 1}));  // outside: catalog
  EXPECT_FALSE(costs.gemm(a100(), DType::fp16, {4096, 4096, 4096, 1}));
  // Neighbours a factor 4 apart are not close: a learned model or the catalog prices between.
  EXPECT_FALSE(store({{1024, 150}, {4096, 250}}).gemm(a100(), DType::bf16, {2048, 4096, 4096, 1}));
}

TEST(StoreCosts, PlanPriceMovesWhenTheStoreSaysTheNetworkIsSlower) {
  const Model model = load_model("gpt3-1.3b");
  const Cluster cluster = load_cluster("dgx-a100", 16);
  const Strategy s = parse_strategy("tp=8,pp=1,mbs=1,gbs=64", cluster.total_gpus());
  auto measured = [&](double inter_busbw_gbps) {
    std::vector<CollectiveSample> samples;
    for (CollectiveOp op :
         {CollectiveOp::all_reduce, CollectiveOp::all_gather, CollectiveOp::reduce_scatter}) {
      for (int ranks : {2, 8, 16}) {
        for (auto& c :
             curve("NVIDIA A100-SXM4-80GB", op, ranks, FabricLevel::inter_node, inter_busbw_gbps))
          samples.push_back(c);
        for (auto& c : curve("NVIDIA A100-SXM4-80GB", op, ranks, FabricLevel::intra_node, 230))
          samples.push_back(c);
      }
    }
    return StoreCosts(samples, {});
  };
  const StoreCosts fast = measured(90), slow = measured(10);
  EstimateOptions opt;
  const Estimate catalog = estimate(model, cluster, s, opt);
  opt.costs = &fast;
  const Estimate e_fast = estimate(model, cluster, s, opt);
  opt.costs = &slow;
  const Estimate e_slow = estimate(model, cluster, s, opt);
  EXPECT_GT(e_slow.step_time_s, e_fast.step_time_s * 1.02);
  EXPECT_NE(e_fast.step_time_s, catalog.step_time_s);
  bool named = false;
  for (const auto& p : e_slow.time)
    named = named || (p.seconds > 0 && p.origin != CostOrigin::catalog);
  EXPECT_TRUE(named) << "the breakdown names a store-priced part";
}

// A store's measured device-to-device copies price the framework's memory-bound passes (norms,
// activations, residual adds, the loss): a pass moving B bytes as a copy of B / 2 (which reads
// and writes it), at the framework kernels' fraction of that copy's rate; the catalog's STREAM
// figure where the store has no copy near the size.
TEST(StoreCosts, MemoryPassesTakeTheStoresMeasuredCopies) {
  std::vector<MemorySample> copies;
  // 2.4 TB/s of traffic (1.2 TB/s of copy size) and 3 us per copy, 1 MiB to 1 GiB.
  auto copy_s = [](double n) { return 3e-6 + 2 * n / 2.4e12; };
  for (double n = 1 << 20; n <= (1 << 30); n *= 2)
    copies.push_back({"NVIDIA H100 80GB HBM3", "copy_d2d", n, copy_s(n)});
  const StoreCosts costs({}, {}, copies);
  const Cluster c = load_cluster("dgx-h100", 8);
  const NodeGroup& g = c.groups.front();
  const Pricer with{g.device, g.intra_node, c.inter_node, g.gpus_per_node, &costs};
  const Pricer catalog{g.device, g.intra_node, c.inter_node, g.gpus_per_node, nullptr};
  const double gap = GemmModel::kKernelGap_s, share = GemmModel::kFrameworkBandwidthFraction;
  // 128 MiB moved: a 64 MiB copy, measured.
  const Priced exact = with.memory_pass(128.0 * (1 << 20));
  EXPECT_EQ(exact.origin, CostOrigin::measured);
  EXPECT_NEAR(exact.seconds, copy_s(64.0 * (1 << 20)) / share + gap, 1e-12);
  // Between measured sizes: interpolated; past them, the catalog (no learned model here).
  EXPECT_EQ(with.memory_pass(3.0 * (1 << 20)).origin, CostOrigin::interpolated);
  const Priced beyond = with.memory_pass(8.0 * (1 << 30));
  EXPECT_EQ(beyond.origin, CostOrigin::catalog);
  EXPECT_DOUBLE_EQ(beyond.seconds, catalog.memory_pass(8.0 * (1 << 30)).seconds);
  // The catalog: H100's BabelStream triad fraction (0.887 of 3.35 TB/s) at the same share.
  EXPECT_NEAR(catalog.memory_pass(128.0 * (1 << 20)).seconds,
              128.0 * (1 << 20) / (3.35e12 * 0.887 * share) + gap, 1e-12);
}

// The store names collectives as the importers and benchmarks write them (all_to_all,
// send_recv); every op the estimator prices must be read back, not silently dropped.
TEST(StoreCosts, ReadsEveryCollectiveTheStoreNames) {
  // 16 rows of aiconfigurator's A100 table (tests/fixtures/measured/README.md).
  std::ifstream in(SHARDCOST_SOURCE_DIR "/tests/fixtures/measured/collective_a100_excerpt.csv");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string path = ::testing::TempDir() + "/store_costs_names.db";
  std::remove(path.c_str());
  {
    db::Store store = db::Store::open(path, db::Store::Mode::read_write);
    store.write(db::import_cost_csv(text.str(), "collective_a100_excerpt.csv"));
  }
  const StoreCosts costs = StoreCosts::load(path);
  // all_gather, all_reduce, all_to_all and reduce_scatter, each on 2 and 8 GPUs.
  EXPECT_EQ(costs.collective_curves(), 8u);
  // aiconfigurator's 8-GPU all-to-all of 8 Mi fp16 elements (16 MiB), as measured.
  const auto a2a =
      costs.collective(a100(), CollectiveOp::all_to_all, 16.0 * (1 << 20), GroupShape{8, 1});
  ASSERT_TRUE(a2a);
  EXPECT_EQ(a2a->origin, CostOrigin::measured);
  EXPECT_EQ(parse_collective_op("all_to_all"), CollectiveOp::all_to_all);
  EXPECT_EQ(parse_collective_op("alltoall"), CollectiveOp::all_to_all);
  EXPECT_EQ(parse_collective_op("send_recv"), CollectiveOp::send_recv);
  EXPECT_EQ(parse_collective_op("sendrecv"), CollectiveOp::send_recv);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

const TimePart& part_named(const Estimate& e, const std::string& name) {
  for (const auto& p : e.time)
    if (p.name == name) return p;
  throw std::runtime_error("no part " + name);
}

double from(const TimePart& p, CostOrigin o) {
  for (const auto& [origin, seconds] : p.sources)
    if (origin == o) return seconds;
  return 0;
}

// Every forward GEMM of Llama-3-8B under tp=8 measured at 1 ms: per micro-batch 32 layers of
// qkv, attention_proj, mlp_fc1 and mlp_fc2 (attention is fused) plus the LM head, 129 GEMMs,
// and 8 micro-batches: 1.032 s of compute_forward is the store's, the rest (norms,
// attention, elementwise passes) the catalog's, and the part says it is mostly measured.
TEST(StoreCosts, EveryPartSaysHowManyOfItsSecondsEachSourcePriced) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-a100", 8);
  const Strategy s = parse_strategy("tp=8,mbs=1,gbs=8", 8);
  std::vector<GemmSample> gemms;
  for (const auto& g : gemm_shapes(m, s))
    if (g.name.find("grad") == std::string::npos)
      gemms.push_back({"NVIDIA A100-SXM4-80GB", DType::bf16, g.shape, 1e-3});
  ASSERT_EQ(gemms.size(), 5u);
  const StoreCosts store({}, gemms);
  EstimateOptions opt;
  opt.costs = &store;
  const Estimate e = estimate(m, c, s, opt);
  const TimePart& fwd = part_named(e, "compute_forward");
  EXPECT_NEAR(from(fwd, CostOrigin::measured), 129 * 8 * 1e-3, 1e-9);
  EXPECT_GT(from(fwd, CostOrigin::catalog), 0);
  EXPECT_EQ(fwd.origin, CostOrigin::measured);
  for (const auto& p : e.time) {
    double sum = 0;
    for (const auto& [origin, seconds] : p.sources) sum += seconds;
    EXPECT_NEAR(sum, p.seconds, 1e-12 * std::max(1.0, p.seconds)) << p.name;
  }
  // Without the store the same part is the catalog's alone.
  const Estimate plain = estimate(m, c, s);
  const TimePart& cat = part_named(plain, "compute_forward");
  ASSERT_EQ(cat.sources.size(), 1u);
  EXPECT_EQ(cat.sources[0].first, CostOrigin::catalog);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// A 16-rank all-reduce measured over 2 nodes (8 a node, 8 NICs each) says nothing of a DP
// group of 16 with one GPU a node (1 NIC each): the store prices the group laid out as it
// measured and leaves the other to a model of its own layout or the catalog (it priced it
// 7.7x too cheap when the layout was not part of the key).
TEST(StoreCosts, AGroupLaidOutOtherwiseThanMeasuredIsNotPricedFromIt) {
  std::vector<CollectiveSample> samples;
  for (double bytes = 1 << 20; bytes <= (1 << 30); bytes *= 2)
    samples.push_back({"NVIDIA A100-SXM4-80GB", CollectiveOp::all_reduce, 16,
                       FabricLevel::inter_node, bytes, 5e-6 + bytes / 150e9, 2});
  const StoreCosts costs(samples, {});
  const Cluster c = load_cluster("dgx-a100", 128);
  const NodeGroup& g = c.groups.front();
  const Pricer pr{g.device, g.intra_node, c.inter_node, g.gpus_per_node, &costs};
  // tp = 8 inside each node, then 16 data-parallel ranks over 16 nodes: stride 8.
  const Priced one_a_node = pr.collective(CollectiveOp::all_reduce, 1 << 28, {16, 8});
  EXPECT_EQ(one_a_node.origin, CostOrigin::catalog);
  // 16 consecutive ranks: 2 nodes of 8, as measured.
  const Priced as_measured = pr.collective(CollectiveOp::all_reduce, 1 << 28, {16, 1});
  EXPECT_EQ(as_measured.origin, CostOrigin::measured);
  EXPECT_GT(one_a_node.seconds, 4 * as_measured.seconds);
  EXPECT_TRUE(costs.collective(a100(), CollectiveOp::all_reduce, 1 << 28, GroupShape{16, 2}));
  EXPECT_FALSE(costs.collective(a100(), CollectiveOp::all_reduce, 1 << 28, GroupShape{16, 16}));
  EXPECT_FALSE(costs.collective(a100(), CollectiveOp::all_reduce, 1 << 28, GroupShape{16, 4}));
}

}  // namespace
}  // namespace shardcost
