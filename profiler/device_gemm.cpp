// The GPU GEMM benchmark's logic over GemmDevice (device_gemm.h).
#include "device_gemm.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "host_buffers.h"

namespace shardcost::bench {
namespace {

double bf16_to_double(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

double half_to_double(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

}  // namespace

size_t gemm_input_bytes(const std::string& dtype) {
  if (dtype == "fp32" || dtype == "tf32") return 4;
  return dtype == "fp8" ? 1 : 2;
}

size_t gemm_output_bytes(const std::string& dtype) {
  return dtype == "fp32" || dtype == "tf32" ? 4 : 2;
}

DeviceGemm::DeviceGemm(GemmDevice& dev, std::string dtype, const GemmShapeSpec& s)
    : dev_(dev), dtype_(std::move(dtype)), s_(s) {
  // Batched: distinct operands for every product, back to back (one strided-batched call),
  // so that no product reads another's operands from cache.
  const auto eb = static_cast<int64_t>(gemm_input_bytes(dtype_));
  const int64_t a_n = s.batch * s.m * s.k, b_n = s.batch * s.k * s.n;
  const int64_t out = static_cast<int64_t>(gemm_output_bytes(dtype_)) * s.batch * s.m * s.n;
  check_room((4 + eb) * (a_n + b_n) + out, dev_.free_bytes(),
             fmt::format("GEMM {}x{}x{} (batch {}, {})", s.m, s.n, s.k, s.batch, dtype_), "device");
  a32_ = dev_.alloc(a_n * 4);
  b32_ = dev_.alloc(b_n * 4);
  a_ = dev_.alloc(eb * a_n);
  b_ = dev_.alloc(eb * b_n);
  d_ = dev_.alloc(static_cast<int64_t>(gemm_output_bytes(dtype_)) * s.batch * s.m * s.n);
  dev_.fill(reinterpret_cast<float*>(a32_.get()), a_n, 1);
  dev_.fill(reinterpret_cast<float*>(b32_.get()), b_n, 2);
  dev_.convert(reinterpret_cast<const float*>(a32_.get()), a_.get(), a_n, dtype_);
  dev_.convert(reinterpret_cast<const float*>(b32_.get()), b_.get(), b_n, dtype_);
  dev_.sync();
}

int64_t DeviceGemm::check() {
  run(0);
  dev_.sync();
  const int64_t mk = s_.m * s_.k, kn = s_.k * s_.n, mn = s_.m * s_.n;
  std::vector<float> a(static_cast<size_t>(s_.batch * mk)), b(static_cast<size_t>(s_.batch * kn));
  dev_.download(a.data(), a32_.get(), static_cast<int64_t>(a.size() * 4));
  dev_.download(b.data(), b32_.get(), static_cast<int64_t>(b.size() * 4));
  const size_t ob = gemm_output_bytes(dtype_);
  std::vector<unsigned char> d(static_cast<size_t>(s_.batch * mn) * ob);
  dev_.download(d.data(), d_.get(), static_cast<int64_t>(d.size()));
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
      got = dtype_ == "fp16" ? half_to_double(h) : bf16_to_double(h);
    }
    // tf32 rounds inputs to 10 bits; 16-bit outputs round to 8 (bf16) or 11 (fp16) bits.
    const double rel = dtype_ == "fp32" ? 1e-5 : dtype_ == "fp16" ? 2e-3 : 1e-2;
    if (!(std::fabs(got - ref) <= rel * std::fabs(ref) + rel * std::sqrt(double(s_.k)))) ++wrong;
  }
  return wrong;
}

}  // namespace shardcost::bench
