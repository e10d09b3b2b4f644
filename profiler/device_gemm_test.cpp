// The GPU GEMM benchmark's logic against a host fake of the device: products computed in
// double from the converted operands, L2 flushes and launches counted, and faults a device can
// have (a batch's products all reading the first set, a wrong element) that the check must see.
#include "device_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "shardcost/error.h"

namespace shardcost::bench {
namespace {

uint16_t to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}
float from_bf16(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

class FakeGpu final : public GemmDevice {
 public:
  FakeGpu(std::string dtype, GemmShapeSpec s) : dtype_(std::move(dtype)), s_(s) {}
  int flushes = 0, launches = 0;
  bool every_product_reads_the_first_set = false, one_wrong = false;

  int64_t free = int64_t{1} << 40;
  Buffer alloc(int64_t bytes) override {
    return Buffer(new std::byte[static_cast<size_t>(bytes)](), [](std::byte* p) { delete[] p; });
  }
  int64_t free_bytes() const override { return free; }
  void fill(float* out, int64_t count, uint32_t seed) override {
    for (int64_t i = 0; i < count; ++i)
      out[i] = static_cast<float>(static_cast<int>((i * 2654435761u ^ seed) % 17) - 8) / 8.0f;
  }
  void convert(const float* in, std::byte* out, int64_t count, const std::string& dtype) override {
    for (int64_t i = 0; i < count; ++i) {
      if (dtype == "bf16") {
        const uint16_t h = to_bf16(in[i]);
        std::memcpy(out + 2 * i, &h, 2);
      } else {
        std::memcpy(out + 4 * i, &in[i], 4);
      }
    }
  }
  void flush_l2() override { ++flushes; }
  void matmul(const std::byte* a, const std::byte* b, std::byte* d) override {
    ++launches;
    const int64_t mk = s_.m * s_.k, kn = s_.k * s_.n, mn = s_.m * s_.n;
    for (int64_t q = 0; q < s_.batch; ++q) {
      const int64_t from = every_product_reads_the_first_set ? 0 : q;
      for (int64_t j = 0; j < s_.n; ++j)
        for (int64_t i = 0; i < s_.m; ++i) {
          double sum = 0;
          for (int64_t p = 0; p < s_.k; ++p)
            sum += in(a, from * mk + i * s_.k + p) * in(b, from * kn + j * s_.k + p);
          if (one_wrong && q == 0 && i == 0 && j == 0) sum += 1;
          out(d, q * mn + j * s_.m + i, static_cast<float>(sum));
        }
    }
  }
  void sync() override {}
  void download(void* host, const std::byte* src, int64_t bytes) override {
    std::memcpy(host, src, static_cast<size_t>(bytes));
  }

 private:
  double in(const std::byte* p, int64_t i) const {
    if (dtype_ == "bf16") {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return from_bf16(h);
    }
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  void out(std::byte* p, int64_t i, float v) const {
    if (dtype_ == "bf16") {
      const uint16_t h = to_bf16(v);
      std::memcpy(p + 2 * i, &h, 2);
    } else {
      std::memcpy(p + 4 * i, &v, 4);
    }
  }
  std::string dtype_;
  GemmShapeSpec s_;
};

TEST(DeviceGemm, ChecksCleanFlushesBeforeEveryIterationAndLaunchesOncePerIteration) {
  for (const char* dtype : {"fp32", "bf16"})
    for (int64_t batch : {1, 4}) {
      const GemmShapeSpec s{"s", 24, 40, 72, batch};
      FakeGpu gpu(dtype, s);
      DeviceGemm bench(gpu, dtype, s);
      HostTimer timer;
      Timing t;
      t.warmup = 2;
      t.iterations = 6;
      const Measured m = measure(bench, timer, t);
      EXPECT_EQ(m.wrong, 0) << dtype << " batch " << batch;
      EXPECT_EQ(m.stats.iterations, 6);
      EXPECT_EQ(gpu.flushes, 2 + 6);  // warm-up and timed iterations; the check needs none
      EXPECT_EQ(gpu.launches, 2 + 6 + 1);
    }
}

// What a batched GEMM timed as repeated calls on one operand set computes: every product from
// the first set. The check samples the last product and sees it.
TEST(DeviceGemm, ABatchWhoseProductsShareOneOperandSetIsWrong) {
  const GemmShapeSpec s{"s", 16, 16, 32, 3};
  FakeGpu gpu("fp32", s);
  gpu.every_product_reads_the_first_set = true;
  DeviceGemm bench(gpu, "fp32", s);
  EXPECT_GT(bench.check(), 0);
}

TEST(DeviceGemm, AWrongElementIsCounted) {
  const GemmShapeSpec s{"s", 16, 16, 32, 1};
  FakeGpu gpu("fp32", s);
  gpu.one_wrong = true;
  DeviceGemm bench(gpu, "fp32", s);
  EXPECT_EQ(bench.check(), 1);  // sample 0 reads D(0, 0)
}

TEST(DeviceGemm, ElementSizes) {
  EXPECT_EQ(gemm_input_bytes("fp8"), 1u);
  EXPECT_EQ(gemm_output_bytes("fp8"), 2u);
  EXPECT_EQ(gemm_input_bytes("tf32"), 4u);
  EXPECT_EQ(gemm_output_bytes("bf16"), 2u);
}

// Operands that do not fit the device are refused with the numbers before anything is
// allocated.
TEST(DeviceGemm, OperandsThatDoNotFitAreRefusedWithTheNumbers) {
  const GemmShapeSpec s{"big", 65536, 65536, 65536, 1};
  FakeGpu gpu("bf16", s);
  gpu.free = int64_t{40} << 30;
  try {
    DeviceGemm bench(gpu, "bf16", s);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("GEMM 65536x65536x65536 (batch 1, bf16) needs 56.0 GiB "
                                         "of device memory; 40.0 GiB are free"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace shardcost::bench
