#include "gemm_features.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "costs/pricing.h"

namespace shardcost::learned {
namespace {

// CTA tiles of cuBLAS's bf16/fp8 kernels on Ampere, Hopper, Ada and Blackwell.
constexpr int kTiles[][2] = {{128, 128}, {128, 256}, {256, 128}, {64, 128},
                             {128, 64},  {64, 64},   {256, 256}, {32, 128}};
// The prior's tiles, and split-K: a grid with fewer tiles than SMs splits K, each split
// keeping at least kMinSplitK of it.
constexpr int kPriorTiles[][2] = {{64, 64},   {64, 128},  {128, 64},
                                  {128, 128}, {128, 256}, {256, 128}};
constexpr double kMinSplitK = 256;
constexpr double kKOverhead = GemmModel::kKOverhead;  // pipeline fill as K length

// Best fraction of the SMs' tile work that is useful: wave quantization, padding to whole
// tiles, and the K loop's fill, over the tiles (small m uses smaller tiles) and split-K; and
// whether that best tiling splits K.
struct Quantized {
  double fraction = 0;
  bool split_k = false;
};
Quantized quantization(const Device& d, const GemmShape& s) {
  const double m = s.m, n = s.n, k = s.k, b = s.batch, sms = d.sms;
  const double m_cap = std::exp2(std::ceil(std::log2(std::max(m, 16.0))));
  Quantized best;
  for (const auto& tile : kPriorTiles) {
    const double tm = std::min<double>(tile[0], m_cap), tn = tile[1];
    const double tiles = std::ceil(m / tm) * std::ceil(n / tn) * b;
    const double splits =
        std::clamp(std::floor(sms / tiles), 1.0, std::max(1.0, std::floor(k / kMinSplitK)));
    const double k_split = std::ceil(k / splits);
    const double all = tiles * splits;
    const double wave = all / (std::ceil(all / sms) * sms);
    const double padding = m * n / (std::ceil(m / tm) * tm * std::ceil(n / tn) * tn);
    const double fraction = wave * padding * k_split / (k_split + kKOverhead);
    if (fraction > best.fraction) best = {fraction, splits > 1};
  }
  return best;
}

// The prior's parts that do not depend on its two constants: the compute and memory times,
// the clock the launch cost is counted at, and the kernels the GEMM runs as. cuBLAS runs a
// GEMM whose K it splits as two kernels, the split products and a reduction of them
// (splitKreduce_kernel in traces; cublasLtReductionScheme_t's COMPUTE_TYPE and OUTPUT_TYPE
// schemes), each paying the launch cost: the split GEMMs of small m and long K cost two
// launches, not one (docs/learned-models.md, "A GPU the store has no rows of").
struct PriorTerms {
  double compute, memory, clock, kernels;
};
PriorTerms prior_terms(const Device& d, DType t, const GemmShape& s) {
  const double flops = 2.0 * s.m * s.n * s.k * s.batch;
  // Store measurements are bursts: the burst figure where the catalog has one.
  const double efficiency =
      d.gemm_burst_efficiency > 0 ? d.gemm_burst_efficiency : d.gemm_efficiency;
  const Quantized q = quantization(d, s);
  return {flops / d.peak_flops[static_cast<int>(t)] / (efficiency * q.fraction),
          gemm_bytes(t, s) / d.memory_bandwidth_Bps / d.memory_efficiency,
          d.boost_clock_hz > 0 ? d.boost_clock_hz : 1.5e9, q.split_k ? 2.0 : 1.0};
}
double prior_of_terms(const PriorTerms& x, double c0, double p) {
  const double mx = std::max(x.compute, x.memory);
  return x.kernels * c0 / x.clock +
         mx * std::pow(std::pow(x.compute / mx, p) + std::pow(x.memory / mx, p), 1 / p);
}
}  // namespace

double gemm_prior_seconds(const Device& d, DType t, const GemmShape& s, const GemmPrior& prior) {
  return prior_of_terms(prior_terms(d, t, s), prior.c0_cycles, prior.p);
}

GemmPrior fit_gemm_prior(const std::vector<PriorRow>& all) {
  // Two constants need no more than a few thousand rows: every k-th row beyond that.
  constexpr size_t kMaxRows = 4000;
  std::vector<std::pair<PriorTerms, double>> rows;  // terms, measured seconds
  const size_t step = std::max<size_t>(1, (all.size() + kMaxRows - 1) / kMaxRows);
  for (size_t i = 0; i < all.size(); i += step)
    rows.emplace_back(prior_terms(*all[i].device, all[i].dtype, all[i].shape), all[i].seconds);
  // Soft-L1 loss on log residuals (robust to the odd kernel-selection jump), minimised on a
  // log grid, then on a finer grid around the best point.
  auto loss = [&](double c0, double p) {
    double sum = 0;
    for (const auto& [terms, seconds] : rows) {
      const double e = std::log(prior_of_terms(terms, c0, p) / seconds) / 0.1;
      sum += 2 * (std::sqrt(1 + e * e) - 1);
    }
    return sum;
  };
  GemmPrior best;
  double best_loss = 1e300;
  double lc_lo = std::log(500.0), lc_hi = std::log(100000.0), lp_lo = std::log(1.0),
         lp_hi = std::log(20.0);
  for (int round = 0; round < 3; ++round) {
    constexpr int kSteps = 16;
    double bc = 0, bp = 0;
    bool improved = false;
    for (int i = 0; i <= kSteps; ++i) {
      for (int j = 0; j <= kSteps; ++j) {
        const double lc = lc_lo + (lc_hi - lc_lo) * i / kSteps,
                     lp = lp_lo + (lp_hi - lp_lo) * j / kSteps;
        const double l = loss(std::exp(lc), std::exp(lp));
        if (l < best_loss)
          best_loss = l, bc = lc, bp = lp, best = {std::exp(lc), std::exp(lp)}, improved = true;
      }
    }
    if (!improved) break;
    const double wc = (lc_hi - lc_lo) / kSteps, wp = (lp_hi - lp_lo) / kSteps;
    lc_lo = bc - wc, lc_hi = bc + wc, lp_lo = bp - wp, lp_hi = bp + wp;
  }
  return best;
}

double gemm_roofline_seconds(const Device& d, DType t, const GemmShape& s) {
  const double flops = 2.0 * s.m * s.n * s.k * s.batch;
  return std::max(flops / d.peak_flops[static_cast<int>(t)],
                  gemm_bytes(t, s) / d.memory_bandwidth_Bps);
}

const std::vector<std::string>& gemm_feature_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {"log2_m",     "log2_n",     "log2_k",         "log2_batch",
                                  "log2_flops", "log2_bytes", "log2_intensity", "k_amortised"};
    for (const auto& t : kTiles) {
      const std::string tile = std::to_string(t[0]) + "x" + std::to_string(t[1]);
      v.push_back("wave_efficiency_" + tile);
      v.push_back("padding_efficiency_" + tile);
      v.push_back("log2_waves_" + tile);
    }
    for (const char* x : {"log2_gcd_m_256", "log2_gcd_n_256", "log2_gcd_k_256",
                          "log2_bytes_over_l2", "log2_weights_over_l2", "log2_activations_over_l2",
                          "log2_tiles_128x128_per_sm", "log2_k_iterations_64", "prior_kernels"})
      v.emplace_back(x);
    for (const char* d :
         {"log2_roofline_us", "log2_compute_over_memory", "device_sms", "device_log2_peak_tflops",
          "device_log2_bandwidth_gbps", "device_log2_ridge", "device_l2_mib", "device_clock_mhz",
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
  const auto gcd256 = [](int64_t v) {
    return std::log2(static_cast<double>(std::gcd(v, int64_t{256})));
  };
  push(gcd256(s.m));
  push(gcd256(s.n));
  push(gcd256(s.k));
  const double l2 = d.l2_bytes > 0 ? d.l2_bytes : 1;
  push(std::log2(bytes / l2));
  push(std::log2(dtype_bytes(t) * k * n * b / l2));
  push(std::log2(dtype_bytes(t) * m * k * b / l2));
  push(std::log2(std::ceil(m / 128) * std::ceil(n / 128) * b / sms));
  push(std::log2(std::ceil(k / 64)));
  push(quantization(d, s).split_k ? 2 : 1);  // the kernels the prior launches
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
