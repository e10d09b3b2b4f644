#include "shardcost/layerwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "layerwise/eliminate.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost {
namespace {

std::string path(const char* rel) {
  return std::string(SHARDCOST_SOURCE_DIR) + "/" + rel;
}

using Edges = std::map<std::pair<int, int>, std::vector<double>>;

// Every assignment, for graphs small enough.
double brute_force(const std::vector<std::vector<double>>& nc, const Edges& e) {
  std::vector<int> at(nc.size(), 0);
  double best = 1e300;
  for (;;) {
    best = std::min(best, assignment_cost(nc, e, at));
    size_t i = 0;
    while (i < at.size() && ++at[i] == static_cast<int>(nc[i].size())) at[i++] = 0;
    if (i == at.size()) return best;
  }
}

void random_costs(std::mt19937& rng, int nodes, const std::vector<std::pair<int, int>>& dag,
                  std::vector<std::vector<double>>& nc, Edges& e) {
  std::uniform_real_distribution<double> u(0, 1);
  std::uniform_int_distribution<int> choices(1, 4);
  nc.assign(static_cast<size_t>(nodes), {});
  for (auto& c : nc) {
    c.resize(static_cast<size_t>(choices(rng)));
    for (double& x : c) x = u(rng);
  }
  e.clear();
  for (auto [a, b] : dag) {
    auto& m = e[{a, b}];
    m.resize(nc[static_cast<size_t>(a)].size() * nc[static_cast<size_t>(b)].size());
    for (double& x : m) x = u(rng);
  }
}

TEST(Eliminate, FindsTheOptimumOfChainsBranchesAndTheRest) {
  std::mt19937 rng(7);
  // A chain, a residual block (a diamond with a skip), two nested diamonds, a tree with two
  // leaves, and a graph that does not reduce (K4-like: enumerated).
  const std::vector<std::pair<int, std::vector<std::pair<int, int>>>> dags = {
      {5, {{0, 1}, {1, 2}, {2, 3}, {3, 4}}},
      {6, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {1, 4}, {4, 5}}},
      {7, {{0, 1}, {1, 2}, {2, 3}, {1, 3}, {3, 4}, {0, 4}, {4, 5}, {5, 6}, {4, 6}}},
      {5, {{0, 1}, {1, 2}, {1, 3}, {0, 4}}},
      {4, {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}}},
  };
  for (const auto& [n, dag] : dags)
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<std::vector<double>> nc;
      Edges e;
      random_costs(rng, n, dag, nc, e);
      const std::vector<int> choice = eliminate(nc, e);
      EXPECT_NEAR(assignment_cost(nc, e, choice), brute_force(nc, e), 1e-12)
          << n << " nodes, trial " << trial;
    }
}

LayerwiseOptions options(int gbs) {
  LayerwiseOptions o;
  o.global_batch = gbs;
  o.precision = DType::fp32;
  o.epoch_samples = 1281167;
  return o;
}

TEST(Layerwise, NeverSlowerThanAUniformStrategy) {
  for (const char* file : {"data/onnx/resnet50.onnx", "data/onnx/vgg16.onnx",
                           "data/onnx/gpt-small.onnx", "data/onnx/unet3d.onnx"}) {
    const OpGraph g = load_onnx(path(file));
    const bool unet = std::string(file).find("unet") != std::string::npos;
    for (int gpus : {4, 16}) {
      const Cluster c = load_cluster("abci-v100", gpus);
      const LayerwiseResult r = plan_layerwise(g, c, options(unet ? gpus : 32 * gpus));
      ASSERT_TRUE(r.best.feasible) << file << " " << r.best.reason;
      for (const GraphPlan& u : r.uniform)
        if (u.feasible) {
          EXPECT_LE(r.best.step_s, u.step_s * (1 + 1e-12)) << file << " " << u.strategy;
        }
      EXPECT_GT(r.configurations, 0);
    }
  }
}

// The devices that split the first operator's batch load distinct samples (issue 39 item 4):
// data parallelism has one loader per device, a pipeline of data-parallel stages only its first
// stage's; a step waits for what loading takes beyond its compute.
TEST(Layerwise, InputBoundPlansWaitForTheirLoaders) {
  const OpGraph g = load_onnx(path("data/onnx/resnet50.onnx"));
  const Cluster c = load_cluster("abci-v100", 8);
  LayerwiseOptions o = options(512);
  const GraphPlan free = price_uniform(g, c, o, "data");
  ASSERT_TRUE(free.feasible) << free.reason;
  EXPECT_FALSE(free.input);
  // 64 images per GPU at 1 core x 200 images/s: 0.32 s, past the step's compute.
  o.loading = DataLoading{1, 200};
  const GraphPlan data = price_uniform(g, c, o, "data");
  ASSERT_TRUE(data.input);
  EXPECT_EQ(data.input->loaders, 8);
  EXPECT_NEAR(data.step_s, 0.32, 1e-12);
  EXPECT_NEAR(data.input->wait_s, 0.32 - free.step_s, 1e-12);
  EXPECT_NEAR(data.samples_per_s, 1600, 1e-6);
  EXPECT_NEAR(data.epoch_s, std::ceil(1281167.0 / 512) * 0.32, 1e-6);
  const GraphPlan pipe = price_uniform(g, c, o, "data+pipeline");
  if (pipe.feasible) {
    ASSERT_TRUE(pipe.input);
    EXPECT_EQ(pipe.input->loaders, c.total_gpus() / pipe.stages);
  }
  // Enough cores: no wait, the plan as without a loader.
  o.loading = DataLoading{8, 200};
  EXPECT_NEAR(price_uniform(g, c, o, "data").step_s, free.step_s, 1e-12);
}

// fp32 convolutions on TF32 tensor cores where the stack allows it (issue 35): PyTorch's
// cudnn.allow_tf32 is on by default, its matmul.allow_tf32 off; a part without TF32 (V100)
// prices fp32 either way.
TEST(Layerwise, Fp32ConvolutionsAndMatmulsFollowTheStacksTf32Settings) {
  const OpGraph g = load_onnx(path("data/onnx/resnet50.onnx"));
  const Cluster a100 = load_cluster("dgx-a100", 8);
  auto priced = [&](const Cluster& c, bool conv, bool matmul, DType t = DType::fp32) {
    LayerwiseOptions o = options(256);
    o.precision = t;
    o.tf32_conv = conv;
    o.tf32_matmul = matmul;
    return price_uniform(g, c, o, "data").compute_s;
  };
  const double ieee = priced(a100, false, false);
  const double conv = priced(a100, true, false);  // PyTorch's defaults
  const double both = priced(a100, true, true);
  EXPECT_GT(ieee, 2 * conv);  // the convolutions are most of ResNet-50's compute
  EXPECT_GT(conv, both);      // and its one fully connected layer the rest
  EXPECT_DOUBLE_EQ(both, priced(a100, false, false, DType::tf32));
  const Cluster v100 = load_cluster("abci-v100", 8);
  EXPECT_DOUBLE_EQ(priced(v100, true, true), priced(v100, false, false));
}

// Issue 35: cuDNN's Winograd F(2x2, 3x3) for fp32 3x3 convolutions of stride 1: 16 multiplies
// per 2x2 output tile instead of 36, by hand for a 56x56 layer (0.444) and a 7x7 one
// (16 x 16 tiles' worth against 9 x 49: 0.580); strided, 1x1 and tensor-core convolutions as
// before.
TEST(Layerwise, Fp32ThreeByThreeConvolutionsRunAsWinogradWhereCudnnChooses) {
  const OpGraph g = load_onnx(path("data/onnx/resnet50.onnx"));
  const Cluster v100 = load_cluster("abci-v100", 1);
  LayerwiseOptions on = options(64), off = options(64);
  off.conv_winograd = false;
  const GraphPlan a = price_uniform(g, v100, on, "data"), b = price_uniform(g, v100, off, "data");
  int winograd = 0;
  for (size_t i = 0; i < a.layers.size(); ++i) {
    const GraphNode* n = nullptr;
    for (const GraphNode& x : g.nodes)
      if (x.name == a.layers[i].node) n = &x;
    ASSERT_NE(n, nullptr);
    const double ratio = a.layers[i].compute_s / b.layers[i].compute_s;
    const bool eligible = n->kind == NodeKind::conv && n->kernel == Dims{3, 3} &&
                          n->stride == Dims{1, 1} && n->groups == 1;
    if (!eligible) {
      EXPECT_DOUBLE_EQ(ratio, 1.0) << n->name;
      continue;
    }
    ++winograd;
    const double h = static_cast<double>(n->out_spatial[0]);
    const double w = static_cast<double>(n->out_spatial[1]);
    EXPECT_NEAR(ratio, 16 * std::ceil(h / 2) * std::ceil(w / 2) / (9 * h * w), 1e-9) << n->name;
    if (h == 56) {
      EXPECT_NEAR(ratio, 16.0 / 36, 1e-9);
    }
    if (h == 7) {
      EXPECT_NEAR(ratio, 16.0 * 16 / (9 * 49), 1e-9);
    }
  }
  EXPECT_EQ(winograd, 13);                    // ResNet-50's 16 3x3 layers less the 3 that stride 2
  EXPECT_LT(a.compute_s, 0.9 * b.compute_s);  // 0.1767 s against 0.2070 s
  // On tensor cores (tf32 on an A100), implicit GEMM only.
  const Cluster a100 = load_cluster("dgx-a100", 1);
  LayerwiseOptions tf32 = options(64);
  tf32.precision = DType::tf32;
  LayerwiseOptions tf32_off = tf32;
  tf32_off.conv_winograd = false;
  EXPECT_DOUBLE_EQ(price_uniform(g, a100, tf32, "data").compute_s,
                   price_uniform(g, a100, tf32_off, "data").compute_s);
}

TEST(Layerwise, DataParallelScalesAndPaysItsAllReduce) {
  const OpGraph g = load_onnx(path("data/onnx/resnet50.onnx"));
  LayerwiseOptions o = options(64);
  const GraphPlan one = price_uniform(g, load_cluster("abci-v100", 1), o, "data");
  ASSERT_TRUE(one.feasible) << one.reason;
  EXPECT_EQ(one.sync_exposed_s, 0);
  o.global_batch = 64 * 64;
  const GraphPlan many = price_uniform(g, load_cluster("abci-v100", 64), o, "data");
  ASSERT_TRUE(many.feasible);
  // The same work per GPU, plus the part of the gradient all-reduce the backward cannot hide.
  EXPECT_NEAR(many.compute_s, one.compute_s, 1e-9);
  EXPECT_GT(many.step_s, one.step_s);
  EXPECT_NEAR(many.epoch_s / one.epoch_s, many.step_s / one.step_s / 64, 0.01);
  // ChainerMN reduces after the backward: all of it exposed.
  o.overlap_grad_reduce = false;
  const GraphPlan chainer = price_uniform(g, load_cluster("abci-v100", 64), o, "data");
  EXPECT_GT(chainer.sync_exposed_s, many.sync_exposed_s);
}

// The host launches every operator's kernels (no CUDA graphs): a small GPT (data/onnx/
// gpt-small.onnx) at one sample on one H100 runs most kernels for a few microseconds, shorter
// than their 8 us launches, so its step waits for the host; at 64 samples the queue runs
// ahead behind longer kernels and hides most of them. With no launch cost (CUDA graphs)
// nothing waits. ResNet-50 at one image on a V100 does not wait at all: its fp32 kernels at
// batch 1 are priced at tens of microseconds each, and each pass's first launch was made while
// the step before it ran.
TEST(Layerwise, ShortKernelsWaitForTheHostsLaunches) {
  const OpGraph g = load_onnx(path("data/onnx/gpt-small.onnx"));
  const Cluster c = load_cluster("dgx-h100", 1);
  LayerwiseOptions o = options(1);
  o.precision = DType::bf16;
  const GraphPlan one = price_uniform(g, c, o, "data");
  ASSERT_TRUE(one.feasible) << one.reason;
  EXPECT_GT(one.host_launch_s, 0.5 * one.compute_s);
  EXPECT_NEAR(one.step_s, one.compute_s + one.host_launch_s, 1e-12);
  // Each priced operator launches at least one kernel forward (8 us) and one backward (4 us):
  // the step takes at least that.
  EXPECT_GE(one.step_s, static_cast<double>(one.layers.size()) * 12e-6);
  o.global_batch = 64;
  const GraphPlan many = price_uniform(g, c, o, "data");
  EXPECT_LT(many.host_launch_s, 0.1 * many.step_s);
  o.global_batch = 1;
  o.host_forward_launch_s = o.host_backward_launch_s = 0;
  const GraphPlan graphed = price_uniform(g, c, o, "data");
  EXPECT_EQ(graphed.host_launch_s, 0);
  EXPECT_NEAR(graphed.step_s, one.step_s - one.host_launch_s, 1e-12);
  const GraphPlan resnet = price_uniform(load_onnx(path("data/onnx/resnet50.onnx")),
                                         load_cluster("abci-v100", 1), options(1), "data");
  EXPECT_EQ(resnet.host_launch_s, 0);
}

// A plan holds its operators' state, what they keep for their backward passes, the
// gradients in flight where the backward peaks and the stack's allowance. NVIDIA's
// DeepLearningExamples train ResNet-50 in fp32 at 128 images on a 16 GB T4 and 112 on a
// 16 GB V100, 256 on the 32 GB V100 (PyTorch/Classification/ConvNets/configs.yml): on a
// 16 GB V100 with PyTorch's preset 128 fits and 256 does not (counting every operator's
// inputs had 20.9 GiB at 128).
TEST(Layerwise, ResNet50InFp32FitsTheBatchesItTrainsAt) {
  const OpGraph g = load_onnx(path("data/onnx/resnet50.onnx"));
  const Cluster c = load_cluster("abci-v100", 1);
  const Software sw = parse_software("pytorch-ddp");
  auto at = [&](int batch, double fixed, double share) {
    LayerwiseOptions o = options(batch);
    o.memory_fixed_bytes = fixed, o.memory_fragmentation = share;
    return price_uniform(g, c, o, "data");
  };
  const GraphPlan fits = at(128, sw.memory_fixed_bytes, sw.memory_fragmentation);
  EXPECT_TRUE(fits.feasible) << fits.reason;
  EXPECT_FALSE(at(256, sw.memory_fixed_bytes, sw.memory_fragmentation).feasible);
  // The allowance: a fixed part and the fragmentation's share of the rest.
  const GraphPlan bare = at(128, 0, 0);
  EXPECT_NEAR(fits.memory_bytes,
              bare.memory_bytes * (1 + sw.memory_fragmentation) + sw.memory_fixed_bytes, 1);
  // 128 images of 84.3 MB kept, 25.6M parameters' weights, gradients and momentum (12 B),
  // and the gradients in flight where the backward starts: the last blocks' (the peak is
  // the end of the forward, when everything kept is held).
  const double kept = 128 * 21075968.0 * 4, state = 25557032.0 * 12;
  EXPECT_GT(bare.memory_bytes, kept + state);
  EXPECT_LT(bare.memory_bytes, kept + state + 128 * 2 * 2048 * 7 * 7 * 4.0);
}

TEST(Layerwise, SpatialSplitsPayHalosAndFilterSplitsGather) {
  const OpGraph g = load_onnx(path("data/onnx/unet3d.onnx"));
  const Cluster c = load_cluster("abci-v100", 4);
  const GraphPlan spatial = price_uniform(g, c, options(4), "spatial");
  const GraphPlan data = price_uniform(g, c, options(4), "data");
  ASSERT_TRUE(data.feasible || spatial.feasible);
  EXPECT_GT(spatial.comm_s, 0);  // halos
  EXPECT_EQ(data.comm_s, 0);
  // A quarter of every volume or every fourth volume: the same activations per device.
  EXPECT_NEAR(spatial.memory_bytes / data.memory_bytes, 1, 0.01);
  const GraphPlan filter = price_uniform(g, c, options(4), "filter");
  EXPECT_GT(filter.reshard_s, 0);  // output channels gathered before every convolution
}

TEST(Layerwise, NormsReduceTheirStatisticsOverTheSplitTheyNormalise) {
  // Layer norm normalises each token's features: a filter split of them all-reduces the
  // statistics, a split of the tokens does not. Batch norm the other way round.
  const OpGraph gpt = load_onnx(path("data/onnx/gpt-small.onnx"));
  const Cluster c = load_cluster("abci-v100", 4);
  auto norm_comm = [&](const GraphPlan& p, const char* op) {
    double s = 0;
    for (const LayerCost& l : p.layers)
      if (l.op == op) s += l.comm_s;
    return s;
  };
  EXPECT_GT(norm_comm(price_uniform(gpt, c, options(4), "filter"), "LayerNormalization"), 0);
  EXPECT_EQ(norm_comm(price_uniform(gpt, c, options(4), "spatial"), "LayerNormalization"), 0);
  const OpGraph resnet = load_onnx(path("data/onnx/resnet50.onnx"));
  EXPECT_GT(norm_comm(price_uniform(resnet, c, options(4), "spatial"), "BatchNormalization"), 0);
  EXPECT_EQ(norm_comm(price_uniform(resnet, c, options(4), "filter"), "BatchNormalization"), 0);
}

TEST(Layerwise, GroupedConvolutionsKeepTheirGroupsInputUnderAFilterSplit) {
  const OpGraph g = load_onnx(path("tests/data/onnx/odd-shapes.onnx"));
  const GraphPlan p = price_uniform(g, load_cluster("abci-v100", 4), options(4), "filter");
  for (const LayerCost& l : p.layers)
    if (l.node == "conv_5") {
      EXPECT_EQ(l.split.filter, 4);
      EXPECT_EQ(l.reshard_s, 0);  // its producer's channel shards are its groups' inputs
    }
}

TEST(Layerwise, BadInput) {
  const OpGraph g = load_onnx(path("data/onnx/resnet50.onnx"));
  const Cluster c = load_cluster("abci-v100", 8);
  EXPECT_THROW(plan_layerwise(g, c, options(0)), InputError);
  EXPECT_THROW(plan_layerwise(g, c, options(7)), InputError);  // no split of 8 divides 7
  EXPECT_THROW(price_uniform(g, c, options(64), "diagonal"), InputError);
  const OpGraph unet = load_onnx(path("data/onnx/unet3d.onnx"));
  EXPECT_THROW(plan_layerwise(unet, c, options(1 << 30)), InputError);  // past 1e17 elements
  LayerwiseOptions bad = options(64);
  bad.epoch_samples = -5;
  EXPECT_THROW(plan_layerwise(g, c, bad), InputError);
}

}  // namespace
}  // namespace shardcost
