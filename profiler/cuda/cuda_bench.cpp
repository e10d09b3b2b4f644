// CUDA backend: cuBLASLt GEMMs and device memory benchmarks, timed with CUDA events.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends.h"
#include "cuda/cublaslt_api.h"
#include "cuda/cuda_api.h"
#include "harness.h"
#include "result_records.h"
#include "shardcost/error.h"

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

class CudaGemm final : public Benchmark {
 public:
  CudaGemm(int gpu, const std::string& dtype, const GemmShapeSpec& s)
      : dtype_(dtype),
        s_(s),
        flush_(gpu),
        work_(cuda::device_alloc(kWorkspace)),
        mm_(dtype, s.m, s.n, s.k, kWorkspace, work_.get(), s.batch) {
    // Batched: distinct operands for every product, back to back (one strided-batched call),
    // so that no product reads another's operands from cache.
    const size_t eb = cuda::LtMatmul::element_bytes(dtype);
    const int64_t a_n = s.batch * s.m * s.k, b_n = s.batch * s.k * s.n;
    a32_ = cuda::device_alloc(a_n * 4);
    b32_ = cuda::device_alloc(b_n * 4);
    a_ = cuda::device_alloc(static_cast<int64_t>(eb) * a_n);
    b_ = cuda::device_alloc(static_cast<int64_t>(eb) * b_n);
    d_ = cuda::device_alloc(static_cast<int64_t>(cuda::LtMatmul::output_bytes(dtype)) * s.batch *
                            s.m * s.n);
    cuda::launch_fill_f32(reinterpret_cast<float*>(a32_.get()), a_n, 1, stream_.get());
    cuda::launch_fill_f32(reinterpret_cast<float*>(b32_.get()), b_n, 2, stream_.get());
    cuda::launch_convert(reinterpret_cast<float*>(a32_.get()), a_.get(), a_n, dtype, stream_.get());
    cuda::launch_convert(reinterpret_cast<float*>(b32_.get()), b_.get(), b_n, dtype, stream_.get());
    stream_.sync();
  }
  cudaStream_t stream() const { return stream_.get(); }
  void prepare(int) override { flush_.run(stream_.get()); }
  void run(int) override { mm_.run(a_.get(), b_.get(), d_.get(), stream_.get()); }
  // Samples D against a host dot product of the same (exactly representable) inputs.
  int64_t check() override {
    run(0);
    stream_.sync();
    const int64_t mk = s_.m * s_.k, kn = s_.k * s_.n, mn = s_.m * s_.n;
    std::vector<float> a(static_cast<size_t>(s_.batch * mk)), b(static_cast<size_t>(s_.batch * kn));
    cuda::copy(a.data(), a32_.get(), static_cast<int64_t>(a.size() * 4));
    cuda::copy(b.data(), b32_.get(), static_cast<int64_t>(b.size() * 4));
    const size_t ob = cuda::LtMatmul::output_bytes(dtype_);
    std::vector<unsigned char> d(static_cast<size_t>(s_.batch * mn) * ob);
    cuda::copy(d.data(), d_.get(), static_cast<int64_t>(d.size()));
    int64_t wrong = 0;
    for (int sample = 0; sample < kSamples; ++sample) {
      // Samples spread over the batch too: the last product as well as the first.
      const int64_t p0 = sample == kSamples - 1 ? s_.batch - 1 : sample % s_.batch;
      const int64_t i = (sample * 7919) % s_.m, j = (sample * 104729) % s_.n;
      double ref = 0;
      for (int64_t p = 0; p < s_.k; ++p)
        ref += double(a[static_cast<size_t>(p0 * mk + i * s_.k + p)]) *
               b[static_cast<size_t>(p0 * kn + j * s_.k + p)];
      const size_t at = static_cast<size_t>(p0 * mn + j * s_.m + i);
      double got;
      if (ob == 4) {
        float f;
        std::memcpy(&f, &d[at * 4], 4);
        got = f;
      } else {
        uint16_t h;
        std::memcpy(&h, &d[at * 2], 2);
        got = dtype_ == "fp16" ? half_to_float(h) : bf16_to_float(h);
      }
      // tf32 rounds inputs to 10 bits; 16-bit outputs round to 8 (bf16) or 11 (fp16) bits.
      const double rel = dtype_ == "fp32" ? 1e-5 : dtype_ == "fp16" ? 2e-3 : 1e-2;
      if (!(std::fabs(got - ref) <= rel * std::fabs(ref) + rel * std::sqrt(double(s_.k)))) ++wrong;
    }
    return wrong;
  }
  int64_t checked_elements() const override { return kSamples; }

 private:
  static double bf16_to_float(uint16_t h) {
    const uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  static double half_to_float(uint16_t h) {
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
  }
  static constexpr int kSamples = 16;
  static constexpr size_t kWorkspace = 64 << 20;
  std::string dtype_;
  GemmShapeSpec s_;
  cuda::Stream stream_;
  L2Flush flush_;
  DeviceBuffer work_;
  cuda::LtMatmul mm_;
  DeviceBuffer a32_, b32_, a_, b_, d_;
};

class CudaMemory final : public Benchmark {
 public:
  CudaMemory(std::string kind, int64_t bytes) : kind_(std::move(kind)), bytes_(bytes / 16 * 16) {
    if (bytes_ < 16)
      throw InputError(fmt::format("memory size {} must be at least 16 bytes", bytes));
    dev_a_ = cuda::device_alloc(bytes_);
    dev_b_ = cuda::device_alloc(bytes_);
    host_ = cuda::pinned_alloc(bytes_);
    sum_ = cuda::device_alloc(8);
    std::memset(host_.get(), 3, static_cast<size_t>(bytes_));
    cuda::set_async(dev_a_.get(), 1, bytes_, stream_.get());
    stream_.sync();
  }
  cudaStream_t stream() const { return stream_.get(); }
  void run(int iteration) override {
    const int64_t n = bytes_;
    const cudaStream_t s = stream_.get();
    if (kind_ == "copy_d2d")
      cuda::copy_async(dev_b_.get(), dev_a_.get(), n, s);
    else if (kind_ == "copy_h2d")
      cuda::copy_async(dev_b_.get(), host_.get(), n, s);
    else if (kind_ == "copy_d2h")
      cuda::copy_async(host_.get(), dev_a_.get(), n, s);
    else if (kind_ == "memset")
      cuda::set_async(dev_b_.get(), iteration & 0xff, n, s);
    else if (kind_ == "read")
      cuda::launch_read(dev_a_.get(), bytes_, reinterpret_cast<unsigned long long*>(sum_.get()), s);
    else
      cuda::launch_write(dev_b_.get(), bytes_, 0x02020202u, s);
  }
  int64_t check() override {
    cuda::set_async(sum_.get(), 0, 8, stream_.get());
    cuda::set_async(dev_b_.get(), 0, bytes_, stream_.get());
    run(5);
    stream_.sync();
    if (kind_ == "read") {
      unsigned long long sum = 0;
      cuda::copy(&sum, sum_.get(), 8);
      return sum == static_cast<unsigned long long>(bytes_ / 4) * 0x01010101ull ? 0 : 1;
    }
    std::vector<unsigned char> out(static_cast<size_t>(bytes_));
    const void* src = kind_ == "copy_d2h" ? host_.get() : dev_b_.get();
    cuda::copy(out.data(), src, static_cast<int64_t>(out.size()));
    const unsigned char want = kind_ == "copy_d2d" || kind_ == "copy_d2h" ? 1
                               : kind_ == "copy_h2d"                      ? 3
                               : kind_ == "memset"                        ? 5
                                                                          : 2;
    return std::count_if(out.begin(), out.end(), [&](unsigned char c) { return c != want; });
  }

 private:
  std::string kind_;
  int64_t bytes_;
  cuda::Stream stream_;
  DeviceBuffer dev_a_, dev_b_, sum_;
  cuda::PinnedBuffer host_;
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
  for (const auto& s : o.shapes) {
    if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0)
      throw InputError(fmt::format("GEMM shape {}x{}x{} must be positive", s.m, s.n, s.k));
    if (progress) progress(fmt::format("gemm {} {}x{}x{}", o.dtype, s.m, s.n, s.k));
    CudaGemm bench(o.gpu, o.dtype, s);
    cuda::EventTimer timer({{o.gpu, bench.stream()}});
    const Measured m = measure(bench, timer, o.timing);
    report.results.push_back(gemm_result(s, o.dtype, m, bench.checked_elements()));
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
  for (const auto& kind : o.kinds) {
    for (const int64_t bytes : o.sizes) {
      if (progress) progress(fmt::format("memory {} {} bytes", kind, bytes));
      CudaMemory bench(kind, bytes);
      cuda::EventTimer timer({{o.gpu, bench.stream()}});
      const Measured m = measure(bench, timer, o.timing);
      report.results.push_back(memory_result(kind, bytes / 16 * 16, m));
    }
  }
  return report;
}

}  // namespace shardcost::bench
