#include "gemm_features.h"

#include <cmath>

namespace shardcost::learned {
namespace {

// CTA tiles of cuBLAS's bf16/fp8 kernels on Ampere, Hopper, Ada and Blackwell.
constexpr int kTiles[][2] = {{128, 128}, {128, 256}, {256, 128}, {64, 128}, {128, 64}};
constexpr double kKOverhead = 96;  // pipeline fill as K length (costs/pricing.h GemmModel)

double in_bytes(DType t) {
  return t == DType::fp8 ? 1 : t == DType::fp32 || t == DType::tf32 ? 4 : 2;
}
double out_bytes(DType t) { return t == DType::fp32 || t == DType::tf32 ? 4 : 2; }
double gemm_bytes(DType t, const GemmShape& s) {
  const double m = s.m, n = s.n, k = s.k, b = s.batch;
  return (in_bytes(t) * (m * k + k * n) + out_bytes(t) * m * n) * b;
}

}  // namespace

double gemm_roofline_seconds(const Device& d, DType t, const GemmShape& s) {
  const double flops = 2.0 * s.m * s.n * s.k * s.batch;
  return std::max(flops / d.peak_flops[static_cast<int>(t)],
                  gemm_bytes(t, s) / d.memory_bandwidth_Bps);
}

const std::vector<std::string>& gemm_feature_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {"log2_m", "log2_n", "log2_k", "log2_batch", "log2_flops",
                                  "log2_bytes", "log2_intensity", "k_amortised"};
    for (const auto& t : kTiles) {
      const std::string tile = std::to_string(t[0]) + "x" + std::to_string(t[1]);
      v.push_back("wave_efficiency_" + tile);
      v.push_back("padding_efficiency_" + tile);
      v.push_back("log2_waves_" + tile);
    }
    for (const char* d : {"log2_roofline_us", "log2_compute_over_memory", "device_sms",
                          "device_log2_peak_tflops", "device_log2_bandwidth_gbps",
                          "device_log2_ridge", "device_l2_mib", "device_clock_mhz",
                          "device_flops_per_sm_cycle"})
      v.emplace_back(d);
    return v;
  }();
  return names;
}

void gemm_features(const Device& d, DType t, const GemmShape& s, std::vector<float>& out) {
  const double m = s.m, n = s.n, k = s.k, b = s.batch;
  const double flops = 2 * m * n * k * b;
  const double bytes = gemm_bytes(t, s);
  const double peak = d.peak_flops[static_cast<int>(t)];
  const double sms = d.sms;
  auto push = [&](double v) { out.push_back(static_cast<float>(v)); };
  push(std::log2(m));
  push(std::log2(n));
  push(std::log2(k));
  push(std::log2(b));
  push(std::log2(flops));
  push(std::log2(bytes));
  push(std::log2(flops / bytes));
  push(k / (k + kKOverhead));
  for (const auto& tile : kTiles) {
    const double tm = tile[0], tn = tile[1];
    const double tiles = std::ceil(m / tm) * std::ceil(n / tn) * b;
    const double waves = std::ceil(tiles / sms);
    push(tiles / (waves * sms));
    push(m * n / (std::ceil(m / tm) * tm * std::ceil(n / tn) * tn));
    push(std::log2(tiles / sms));
  }
  const double compute_s = flops / peak, memory_s = bytes / d.memory_bandwidth_Bps;
  push(std::log2(std::max(compute_s, memory_s) * 1e6));
  push(std::log2(compute_s / memory_s));
  push(sms);
  push(std::log2(peak / 1e12));
  push(std::log2(d.memory_bandwidth_Bps / 1e9));
  push(std::log2(peak / d.memory_bandwidth_Bps));
  push(d.l2_bytes / (1024.0 * 1024.0));
  push(d.boost_clock_hz / 1e6);
  push(d.boost_clock_hz > 0 ? peak / (sms * d.boost_clock_hz) : 0);
}

}  // namespace shardcost::learned
