#include "embedding_inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "shardcost/error.h"

namespace shardcost::bench {
namespace {

// log1p(x)/x and expm1(x)/x, with their series near zero (where the quotients lose digits).
double log1p_over(double x) {
  return std::fabs(x) > 1e-8 ? std::log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}
double expm1_over(double x) {
  return std::fabs(x) > 1e-8 ? std::expm1(x) / x : 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x));
}

}  // namespace

void check_shape(const EmbeddingShape& s) {
  const std::string what = fmt::format("embedding {}x{} pooling {} batch {} zipf {}", s.rows, s.dim,
                                       s.pooling, s.batch, s.zipf);
  if (s.rows < 1 || s.rows > (int64_t{1} << 31))
    throw InputError(fmt::format("{}: rows must be from 1 to 2^31", what));
  if (s.dim < 1 || s.dim > 65536)
    throw InputError(fmt::format("{}: dim must be from 1 to 65536", what));
  if (s.batch < 1 || s.batch > (int64_t{1} << 31))
    throw InputError(fmt::format("{}: batch must be from 1 to 2^31", what));
  if (!(s.pooling > 0) || !std::isfinite(s.pooling) || s.pooling > 1e5)
    throw InputError(fmt::format("{}: pooling must be a positive number up to 100000", what));
  if (!(s.zipf >= 0) || !std::isfinite(s.zipf) || s.zipf > 10)
    throw InputError(fmt::format("{}: zipf must be from 0 to 10", what));
  double rows = 0, lookups = 0;
  for (const auto& [r, a] : s.histogram) {
    if (!(r > 0) || !(a >= 0) || !std::isfinite(r) || !std::isfinite(a))
      throw InputError(
          fmt::format("{}: a histogram bucket's shares must be above 0 (rows) and "
                      "not negative (lookups)",
                      what));
    rows += r, lookups += a;
  }
  if (!s.histogram.empty() && (std::fabs(rows - 1) > 1e-3 || std::fabs(lookups - 1) > 1e-3))
    throw InputError(fmt::format(
        "{}: the histogram's shares of rows and of lookups must each add up to 1", what));
  if (static_cast<double>(s.batch) * s.pooling < 1)
    throw InputError(fmt::format("{}: fewer than one lookup in the batch", what));
  if (static_cast<double>(s.batch) * s.pooling > 2e9)
    throw InputError(fmt::format("{}: more than 2e9 lookups in one batch", what));
}

std::vector<int64_t> bag_offsets(const EmbeddingShape& s) {
  std::vector<int64_t> out(static_cast<size_t>(s.batch) + 1);
  for (int64_t b = 0; b <= s.batch; ++b)
    out[static_cast<size_t>(b)] =
        static_cast<int64_t>(std::floor(static_cast<double>(b) * s.pooling));
  return out;
}

ZipfSampler::ZipfSampler(int64_t n, double s)
    : n_(n),
      s_(s),
      h_integral_x1_(h_integral(1.5) - 1),
      h_integral_n_(h_integral(static_cast<double>(n) + 0.5)),
      threshold_(2 - h_integral_inverse(h_integral(2.5) - h(2))) {}

double ZipfSampler::h(double x) const {
  return std::exp(-s_ * std::log(x));
}
double ZipfSampler::h_integral(double x) const {
  const double lx = std::log(x);
  return expm1_over((1 - s_) * lx) * lx;
}
double ZipfSampler::h_integral_inverse(double x) const {
  double t = x * (1 - s_);
  if (t < -1) t = -1;  // rounding past the domain's end
  return std::exp(log1p_over(t) * x);
}

int64_t ZipfSampler::operator()(std::mt19937_64& rng) const {
  std::uniform_real_distribution<double> unit(0, 1);
  while (true) {
    const double u = h_integral_n_ + unit(rng) * (h_integral_x1_ - h_integral_n_);
    const double x = h_integral_inverse(u);
    int64_t k = static_cast<int64_t>(x + 0.5);
    k = std::clamp<int64_t>(k, 1, n_);
    const double kd = static_cast<double>(k);
    if (kd - x <= threshold_ || u >= h_integral(kd + 0.5) - h(kd)) return k;
  }
}

std::vector<int64_t> draw_indices(const EmbeddingShape& s, int64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> out(static_cast<size_t>(count));
  const auto R = static_cast<uint64_t>(s.rows);
  // A multiplier coprime to R scatters consecutive ranks over the table.
  uint64_t a = 2654435761u % R;
  if (a == 0) a = 1;
  while (std::gcd(a, R) != 1) ++a;
  auto scatter = [&](uint64_t rank) { return static_cast<int64_t>((rank * a) % R); };
  if (!s.histogram.empty()) {
    // A bucket by its share of the lookups, then a rank among its rows alike. Buckets take
    // consecutive ranks, hottest first; each at least one row.
    std::vector<double> weights;
    std::vector<std::pair<uint64_t, uint64_t>> ranks;  // [first, last]
    double first = 0;
    for (const auto& [r, share] : s.histogram) {
      const double last = std::min(static_cast<double>(R), first + std::max(1.0, r * R));
      if (last <= first) break;
      ranks.emplace_back(static_cast<uint64_t>(first), static_cast<uint64_t>(last) - 1);
      weights.push_back(share);
      first = last;
    }
    std::discrete_distribution<size_t> bucket(weights.begin(), weights.end());
    for (auto& v : out) {
      const auto& [lo, hi] = ranks[bucket(rng)];
      v = scatter(std::uniform_int_distribution<uint64_t>(lo, hi)(rng));
    }
    return out;
  }
  if (s.zipf <= 0) {
    std::uniform_int_distribution<int64_t> row(0, s.rows - 1);
    for (auto& v : out) v = row(rng);
    return out;
  }
  const ZipfSampler zipf(s.rows, s.zipf);
  for (auto& v : out) v = scatter(static_cast<uint64_t>(zipf(rng) - 1));
  return out;
}

float optimizer_step(const float* g, int64_t dim, bool adagrad, float* state) {
  if (!adagrad) return kLearningRate;
  double sq = 0;
  for (int64_t d = 0; d < dim; ++d) sq += static_cast<double>(g[d]) * g[d];
  *state += static_cast<float>(sq / static_cast<double>(dim));
  return kLearningRate / (std::sqrt(*state) + kAdagradEps);
}

std::vector<int64_t> checked_rows(const std::vector<int64_t>& indices) {
  std::vector<int64_t> rows;
  const size_t step = std::max<size_t>(1, indices.size() / 64);
  for (size_t i = 0; i < indices.size(); i += step) rows.push_back(indices[i]);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

std::vector<std::vector<float>> summed_gradients(const std::vector<int64_t>& offsets,
                                                 const std::vector<int64_t>& indices,
                                                 const std::vector<int64_t>& rows,
                                                 const std::vector<float>& grad_out, int64_t dim) {
  std::vector<std::vector<float>> out(rows.size(), std::vector<float>(static_cast<size_t>(dim)));
  for (size_t b = 0; b + 1 < offsets.size(); ++b)
    for (int64_t i = offsets[b]; i < offsets[b + 1]; ++i) {
      const int64_t row = indices[static_cast<size_t>(i)];
      const auto at = std::lower_bound(rows.begin(), rows.end(), row);
      if (at == rows.end() || *at != row) continue;
      auto& g = out[static_cast<size_t>(at - rows.begin())];
      for (int64_t d = 0; d < dim; ++d)
        g[static_cast<size_t>(d)] +=
            grad_out[b * static_cast<size_t>(dim) + static_cast<size_t>(d)];
    }
  return out;
}

uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace shardcost::bench
