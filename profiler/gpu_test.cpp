// GPU checks through the public API; each skips with the reason when no CUDA device is usable.
#include <gtest/gtest.h>

#include "shardcost/profiler.h"

namespace shardcost::bench {
namespace {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const DeviceList d = list_devices();
    if (d.gpus.empty()) GTEST_SKIP() << "no GPU: " << d.gpu_status;
  }
  static Timing quick() {
    Timing t;
    t.warmup = 2;
    t.iterations = 5;
    return t;
  }
};

TEST_F(Gpu, GemmEveryTypeTheDeviceHasIsChecked) {
  for (const char* dtype : {"fp32", "tf32", "bf16", "fp16"}) {
    GemmOptions o;
    o.device = "cuda";
    o.dtype = dtype;
    o.shapes = {{"s", 256, 512, 1024, 1}};
    o.timing = quick();
    const GemmReport r = bench_gemm(o);
    EXPECT_EQ(r.results.at(0).wrong, 0) << dtype;
    EXPECT_GT(r.results.at(0).tflops, 0) << dtype;
  }
}

// A strided-batched product over distinct operands (one cuBLASLt call): the samples checked
// cover the first product and the last.
TEST_F(Gpu, BatchedGemmsRunOnDistinctOperands) {
  GemmOptions o;
  o.device = "cuda";
  o.dtype = "bf16";
  o.shapes = {{"one", 512, 512, 128, 1}, {"eight", 512, 512, 128, 8}};
  o.timing = quick();
  const GemmReport r = bench_gemm(o);
  ASSERT_EQ(r.results.size(), 2u);
  for (const auto& g : r.results) EXPECT_EQ(g.wrong, 0) << g.shape.name;
  EXPECT_GT(r.results[1].tflops, 0);
}

TEST_F(Gpu, MemoryKindsAreChecked) {
  MemoryOptions o;
  o.device = "cuda";
  o.kinds = memory_kinds("cuda");
  o.sizes = {1 << 20, 64 << 20};
  o.timing = quick();
  for (const auto& m : bench_memory(o).results) EXPECT_EQ(m.wrong, 0) << m.kind << " " << m.bytes;
}

// Both passes, uniform and skewed rows: sampled pooled sums and updated rows (weights and
// Adagrad state) checked against the host's arithmetic.
TEST_F(Gpu, EmbeddingBagsAreChecked) {
  for (const char* dtype : {"fp32", "bf16"}) {
    EmbeddingOptions o;
    o.device = "cuda";
    o.dtype = dtype;
    o.shapes = {{100000, 64, 8, 1024, 0, {}}, {100000, 64, 8, 1024, 1.05, {}}};
    o.timing = quick();
    const EmbeddingReport r = bench_embedding(o);
    ASSERT_EQ(r.results.size(), 4u) << dtype;
    for (const auto& e : r.results) {
      EXPECT_EQ(e.wrong, 0) << dtype << " " << e.pass << " zipf " << e.shape.zipf;
      EXPECT_GT(e.stats.median_ns, 0) << dtype << " " << e.pass << " zipf " << e.shape.zipf;
    }
  }
}

// The kernels' other paths: fp16 weights and SGD, one-element loads (odd dim), rows longer
// than a warp keeps in registers (dim 1000), fractional pooling and a row hit many times.
TEST_F(Gpu, EmbeddingOddShapesAreChecked) {
  EmbeddingOptions o;
  o.device = "cuda";
  o.dtype = "fp16";
  o.shapes = {
      {5000, 17, 2.5, 300, 0, {}}, {1000, 1000, 3.5, 64, 1.05, {}}, {10, 128, 20, 256, 0, {}}};
  o.timing = quick();
  for (const char* optimizer : {"sgd", "rowwise_adagrad"}) {
    o.optimizer = optimizer;
    for (const auto& e : bench_embedding(o).results)
      EXPECT_EQ(e.wrong, 0) << optimizer << " " << e.pass << " dim " << e.shape.dim;
  }
}

TEST_F(Gpu, NcclCollectivesOnOneGpuAreChecked) {
  CollectiveOptions o;
  o.backend = "nccl";
  o.gpus = 1;
  o.ops = collective_ops();
  o.sizes = {1024, 1 << 20};
  o.timing = quick();
  o.timeout_s = 60;
  for (const auto& c : bench_collective(o).results) EXPECT_EQ(c.wrong, 0) << c.op << " " << c.bytes;
}

}  // namespace
}  // namespace shardcost::bench
