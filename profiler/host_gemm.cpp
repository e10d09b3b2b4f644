// Host GEMM benchmark: BLAS (OpenBLAS, multi-threaded) at the requested shapes.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "backends.h"
#include "blas.h"
#include "cpu_binding.h"
#include "harness.h"
#include "host_buffers.h"
#include "result_records.h"
#include "shardcost/error.h"
#include "shardcost/profiler.h"
#include "stop.h"

namespace shardcost::bench {
namespace {

uint16_t to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}
float from_bf16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// One set of operands: batch distinct A, B and C back to back (a batched GEMM's products
// never share operands). Sets rotate so that caches do not flatter small shapes.
struct Operands {
  std::vector<float> a, b, c;
  std::vector<uint16_t> a16, b16;
};

class HostGemm final : public Benchmark {
 public:
  HostGemm(const GemmShapeSpec& s, bool bf16) : s_(s), bf16_(bf16) {
    const int64_t elements = s.batch * (s.m * s.k + s.k * s.n + s.m * s.n);
    const int64_t set_bytes = elements * (bf16 ? 3 : 4);
    const int sets = rotation_sets(set_bytes);
    check_room(set_bytes * sets, host_available_bytes(),
               fmt::format("GEMM {}x{}x{} (batch {})", s.m, s.n, s.k, s.batch), "host");
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int i = 0; i < sets; ++i) {
      Operands o;
      const auto fill = [&](std::vector<float>& v, int64_t count) {
        v.resize(static_cast<size_t>(count));
        for (auto& x : v) x = bf16 ? from_bf16(to_bf16(dist(rng))) : dist(rng);
      };
      fill(o.a, s.batch * s.m * s.k);
      fill(o.b, s.batch * s.k * s.n);
      o.c.assign(static_cast<size_t>(s.batch * s.m * s.n), 0.0f);
      if (bf16) {
        for (float x : o.a) o.a16.push_back(to_bf16(x));
        for (float x : o.b) o.b16.push_back(to_bf16(x));
        o.a.shrink_to_fit();
      }
      sets_.push_back(std::move(o));
    }
  }

  void prepare(int i) override { current_ = &sets_[static_cast<size_t>(i) % sets_.size()]; }
  void run(int) override { gemm(*current_); }

  void gemm(Operands& o) {
    const auto mk = static_cast<size_t>(s_.m * s_.k), kn = static_cast<size_t>(s_.k * s_.n),
               mn = static_cast<size_t>(s_.m * s_.n);
    for (size_t b = 0; b < static_cast<size_t>(s_.batch); ++b) {
      if (bf16_)
        blas::sbgemm(s_.m, s_.n, s_.k, o.a16.data() + b * mk, o.b16.data() + b * kn,
                     o.c.data() + b * mn);
      else
        blas::sgemm(s_.m, s_.n, s_.k, o.a.data() + b * mk, o.b.data() + b * kn,
                    o.c.data() + b * mn);
    }
  }

  // Samples output elements against a double-precision dot product of the same inputs.
  int64_t check() override {
    Operands& o = sets_.front();
    std::fill(o.c.begin(), o.c.end(), 0.0f);
    gemm(o);
    std::mt19937 rng(7);
    int64_t wrong = 0;
    for (int sample = 0; sample < kSamples; ++sample) {
      // Every product of a batch is its own: samples cover the first and the last.
      const int64_t p0 = sample == kSamples - 1 ? s_.batch - 1 : sample % s_.batch;
      const int64_t i = static_cast<int64_t>(rng() % static_cast<uint32_t>(s_.m));
      const int64_t j = static_cast<int64_t>(rng() % static_cast<uint32_t>(s_.n));
      const int64_t a0 = p0 * s_.m * s_.k, b0 = p0 * s_.k * s_.n, c0 = p0 * s_.m * s_.n;
      double ref = 0, magnitude = 0;
      for (int64_t p = 0; p < s_.k; ++p) {
        const double x = a_at(o, a0 + i * s_.k + p),
                     y = o.b[static_cast<size_t>(b0 + p * s_.n + j)];
        ref += x * y;
        magnitude += std::fabs(x * y);
      }
      const double got = o.c[static_cast<size_t>(c0 + i * s_.n + j)];
      // fp32 accumulation: error grows with k; 1e-5 per term bounds OpenBLAS's blocking.
      const double tol = 1e-5 * magnitude * std::sqrt(static_cast<double>(s_.k)) + 1e-6;
      if (!(std::fabs(got - ref) <= tol)) ++wrong;
    }
    return wrong;
  }
  int64_t checked_elements() const override { return kSamples; }

  // A plain BLAS loop on one operand set, timed as a whole: the baseline the harness must match.
  double baseline_seconds(int iterations) {
    Operands& o = sets_.front();
    gemm(o);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) gemm(o);
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(t1 - t0).count() / iterations;
  }

 private:
  double a_at(const Operands& o, int64_t idx) const {
    return bf16_ ? from_bf16(o.a16[static_cast<size_t>(idx)]) : o.a[static_cast<size_t>(idx)];
  }
  static constexpr int kSamples = 32;
  GemmShapeSpec s_;
  bool bf16_;
  std::vector<Operands> sets_;
  Operands* current_ = nullptr;
};

}  // namespace

GemmReport host_bench_gemm(const GemmOptions& opt, const Progress& progress) {
  if (opt.dtype != "fp32" && opt.dtype != "bf16")
    throw InputError(
        fmt::format("--dtype {} is not available on --device cpu; use fp32 or bf16", opt.dtype));
  if (!blas::available()) blas::sgemm(1, 1, 1, nullptr, nullptr, nullptr);  // throws the reason
  if (opt.dtype == "bf16" && !blas::has_bf16()) blas::sbgemm(1, 1, 1, nullptr, nullptr, nullptr);
  blas::set_threads(opt.threads);
  GemmReport report;
  report.device = host_device_record();
  const int threads =
      opt.threads > 0 ? opt.threads : static_cast<int>(std::thread::hardware_concurrency());
  report.binding =
      fmt::format("{} BLAS thread{} placed by the BLAS on CPUs {}", threads,
                  threads == 1 ? "" : "s", cpus_where(read_topology(), allowed_cpus()));
  report.planned = opt.shapes.size();
  for (const auto& s : opt.shapes) {
    if (stop_before_next(report, false)) break;
    if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0)
      throw InputError(
          fmt::format("GEMM shape {}x{}x{} (batch {}) must be positive", s.m, s.n, s.k, s.batch));
    if (progress) progress(fmt::format("gemm {} {}x{}x{}", opt.dtype, s.m, s.n, s.k));
    HostGemm bench(s, opt.dtype == "bf16");
    HostTimer timer;
    const Measured m = measure(bench, timer, opt.timing);
    GemmResult r = gemm_result(s, opt.dtype, m, bench.checked_elements());
    if (opt.compare_baseline) {
      const double flops =
          2.0 * static_cast<double>(s.m * s.n) * static_cast<double>(s.k * s.batch);
      r.baseline_tflops =
          flops / bench.baseline_seconds(static_cast<int>(m.stats.iterations)) / 1e12;
    }
    report.results.push_back(r);
    checkpoint_last(opt.checkpoint, report);
  }
  return report;
}

}  // namespace shardcost::bench
