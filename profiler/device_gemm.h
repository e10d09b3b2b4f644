#pragma once
// The GPU GEMM benchmark's logic, CUDA-free: batch distinct operand sets back to back, filled
// and converted on the device, L2 flushed before every iteration, one (strided-batched)
// product per iteration, and the check: sampled outputs of the first and the last product
// against a host dot product of the same inputs, within the data type's rounding. The device
// is behind GemmDevice: cuBLASLt in cuda/cuda_bench.cpp, a host fake in device_gemm_test.cpp.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"
#include "shardcost/profiler.h"

namespace shardcost::bench {

// Bytes per element of A and B, and of D (fp8 writes bf16), for the GPU GEMM types.
size_t gemm_input_bytes(const std::string& dtype);
size_t gemm_output_bytes(const std::string& dtype);

class GemmDevice {
 public:
  using Buffer = std::unique_ptr<std::byte[], std::function<void(std::byte*)>>;
  virtual ~GemmDevice() = default;
  virtual Buffer alloc(int64_t bytes) = 0;
  virtual int64_t free_bytes() const = 0;  // device memory free now
  // count floats of a fixed pseudo-random pattern of small multiples of 1/8 (exact in every
  // type), different per seed.
  virtual void fill(float* out, int64_t count, uint32_t seed) = 0;
  virtual void convert(const float* in, std::byte* out, int64_t count,
                       const std::string& dtype) = 0;
  virtual void flush_l2() = 0;
  // The planned product over all batch sets: D = A^T B per set, TN, column-major.
  virtual void matmul(const std::byte* a, const std::byte* b, std::byte* d) = 0;
  virtual void sync() = 0;
  virtual void download(void* host, const std::byte* src, int64_t bytes) = 0;
};

class DeviceGemm final : public Benchmark {
 public:
  DeviceGemm(GemmDevice&, std::string dtype, const GemmShapeSpec&);
  void prepare(int) override { dev_.flush_l2(); }
  void run(int) override { dev_.matmul(a_.get(), b_.get(), d_.get()); }
  int64_t check() override;
  int64_t checked_elements() const override { return kSamples; }

 private:
  static constexpr int kSamples = 16;
  GemmDevice& dev_;
  std::string dtype_;
  GemmShapeSpec s_;
  GemmDevice::Buffer a32_, b32_, a_, b_, d_;
};

}  // namespace shardcost::bench
