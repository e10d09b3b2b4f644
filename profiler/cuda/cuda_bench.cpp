// CUDA backend: cuBLASLt GEMMs and device memory benchmarks, timed with CUDA events.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends.h"
#include "cuda/cublaslt_api.h"
#include "cuda/cuda_api.h"
#include "device_gemm.h"
#include "device_memory.h"
#include "harness.h"
#include "result_records.h"
#include "shardcost/error.h"
#include "stop.h"

namespace shardcost::bench {
namespace {

using cuda::DeviceBuffer;

// Flushes L2 before each iteration (outside the timed region) by writing a buffer twice its size.
class L2Flush {
 public:
  explicit L2Flush(int gpu)
      : bytes_(std::max<int64_t>(2 * cuda::props(gpu).l2_bytes, 1 << 20)),
        buf_(cuda::device_alloc(bytes_)) {}
  void run(cudaStream_t s) const { cuda::set_async(buf_.get(), 0, bytes_, s); }

 private:
  int64_t bytes_;
  DeviceBuffer buf_;
};

// cuBLASLt on one GPU: the device behind DeviceGemm.
class CublasLtDevice final : public GemmDevice {
 public:
  CublasLtDevice(int gpu, const std::string& dtype, const GemmShapeSpec& s)
      : flush_(gpu),
        work_(cuda::device_alloc(kWorkspace)),
        mm_(dtype, s.m, s.n, s.k, kWorkspace, work_.get(), s.batch) {}
  cudaStream_t stream() const { return stream_.get(); }
  Buffer alloc(int64_t bytes) override {
    DeviceBuffer b = cuda::device_alloc(bytes);
    return Buffer(b.release(), [](std::byte* p) { cuda::DeviceFree()(p); });
  }
  int64_t free_bytes() const override { return cuda::free_bytes(); }
  void fill(float* out, int64_t count, uint32_t seed) override {
    cuda::launch_fill_f32(out, count, seed, stream_.get());
  }
  void convert(const float* in, std::byte* out, int64_t count, const std::string& dtype) override {
    cuda::launch_convert(in, out, count, dtype, stream_.get());
  }
  void flush_l2() override { flush_.run(stream_.get()); }
  void matmul(const std::byte* a, const std::byte* b, std::byte* d) override {
    mm_.run(a, b, d, stream_.get());
  }
  void sync() override { stream_.sync(); }
  void download(void* host, const std::byte* src, int64_t bytes) override {
    cuda::copy(host, src, bytes);
  }

 private:
  static constexpr size_t kWorkspace = 64 << 20;
  cuda::Stream stream_;
  L2Flush flush_;
  DeviceBuffer work_;
  cuda::LtMatmul mm_;
};

// CUDA on one GPU: the device behind DeviceMemory.
class CudaMemoryDevice final : public MemoryDevice {
 public:
  cudaStream_t stream() const { return stream_.get(); }
  Buffer device_alloc(int64_t bytes) override {
    DeviceBuffer b = cuda::device_alloc(bytes);
    return Buffer(b.release(), [](std::byte* p) { cuda::DeviceFree()(p); });
  }
  Buffer host_alloc(int64_t bytes) override {
    cuda::PinnedBuffer b = cuda::pinned_alloc(bytes);
    return Buffer(b.release(), [](std::byte* p) { cuda::PinnedFree()(p); });
  }
  int64_t free_bytes() const override { return cuda::free_bytes(); }
  void copy(std::byte* dst, const std::byte* src, int64_t bytes) override {
    cuda::copy_async(dst, src, bytes, stream_.get());
  }
  void set(std::byte* p, int value, int64_t bytes) override {
    cuda::set_async(p, value, bytes, stream_.get());
  }
  void read(const std::byte* p, int64_t bytes, std::byte* sum) override {
    cuda::launch_read(p, bytes, reinterpret_cast<unsigned long long*>(sum), stream_.get());
  }
  void write(std::byte* p, int64_t bytes, uint32_t value) override {
    cuda::launch_write(p, bytes, value, stream_.get());
  }
  void sync() override { stream_.sync(); }
  void download(void* host, const std::byte* src, int64_t bytes) override {
    cuda::copy(host, src, bytes);
  }

 private:
  cuda::Stream stream_;
};

}  // namespace

db::DeviceRecord cuda_device_record(int gpu) {
  cuda::use_device(gpu);
  const cuda::DeviceProps p = cuda::props(gpu);
  db::DeviceRecord d;
  d.name = p.name;
  d.uuid = p.uuid;
  d.host = host_info().hostname;
  d.index = gpu;
  d.pci_bus = p.pci_bus;
  d.compute_capability = p.compute_capability;
  d.memory_bytes = p.memory_bytes;
  d.sm_clock_khz = p.sm_clock_khz;
  d.memory_clock_khz = p.memory_clock_khz;
  d.sms = p.sms;
  d.driver_version = cuda::driver_version();
  d.cuda_version = cuda::runtime_version();
  return d;
}

GemmReport cuda_bench_gemm(const GemmOptions& o, const Progress& progress) {
  GemmReport report;
  report.device = cuda_device_record(o.gpu);
  report.planned = o.shapes.size();
  for (const auto& s : o.shapes) {
    if (stop_before_next(report, false)) break;
    if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0)
      throw InputError(fmt::format("GEMM shape {}x{}x{} must be positive", s.m, s.n, s.k));
    if (progress) progress(fmt::format("gemm {} {}x{}x{}", o.dtype, s.m, s.n, s.k));
    CublasLtDevice device(o.gpu, o.dtype, s);
    DeviceGemm bench(device, o.dtype, s);
    cuda::EventTimer timer({{o.gpu, device.stream()}});
    const Measured m = measure(bench, timer, o.timing);
    report.results.push_back(gemm_result(s, o.dtype, m, bench.checked_elements()));
    checkpoint_last(o.checkpoint, report);
  }
  return report;
}

MemoryReport cuda_bench_memory(const MemoryOptions& o, const Progress& progress) {
  const auto kinds = memory_kinds("cuda");
  for (const auto& k : o.kinds)
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end())
      throw InputError(fmt::format("--op {} is not a CUDA memory benchmark; use one of: {}", k,
                                   fmt::join(kinds, ", ")));
  MemoryReport report;
  report.device = cuda_device_record(o.gpu);
  report.planned = o.kinds.size() * o.sizes.size();
  for (const auto& kind : o.kinds) {
    for (const int64_t bytes : o.sizes) {
      if (stop_before_next(report, false)) return report;
      if (progress) progress(fmt::format("memory {} {} bytes", kind, bytes));
      CudaMemoryDevice device;
      DeviceMemory bench(device, kind, bytes);
      cuda::EventTimer timer({{o.gpu, device.stream()}});
      const Measured m = measure(bench, timer, o.timing);
      report.results.push_back(memory_result(kind, bytes / 16 * 16, m));
      report.results.back().kernel = device_memory_kernel(kind);
      checkpoint_last(o.checkpoint, report);
    }
  }
  return report;
}

}  // namespace shardcost::bench
