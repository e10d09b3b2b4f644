// The statistics compare judges a pair with: Mann-Whitney U on samples, a z-test on medians
// from summaries, and Holm's correction over the pairs.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "shardcost/compare.h"

namespace shardcost::regress::stats {

double normal_cdf(double z) {
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

double mann_whitney_p(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t n1 = a.size(), n2 = b.size(), n = n1 + n2;
  if (n1 == 0 || n2 == 0) return 1;
  // (value, from a) sorted; tied values share their average rank.
  std::vector<std::pair<int64_t, bool>> all;
  all.reserve(n);
  for (const int64_t x : a) all.emplace_back(x, true);
  for (const int64_t x : b) all.emplace_back(x, false);
  std::sort(all.begin(), all.end());
  double rank_sum_a = 0, tie_term = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && all[j].first == all[i].first) ++j;
    const double t = static_cast<double>(j - i);
    const double avg_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k)
      if (all[k].second) rank_sum_a += avg_rank;
    tie_term += t * t * t - t;
    i = j;
  }
  const double d1 = static_cast<double>(n1), d2 = static_cast<double>(n2),
               dn = static_cast<double>(n);
  const double u = rank_sum_a - d1 * (d1 + 1) / 2;
  const double mean = d1 * d2 / 2;
  const double var = d1 * d2 / 12 * ((dn + 1) - tie_term / (dn * (dn - 1)));
  if (var <= 0) return 1;  // every value equal
  const double z = std::max(0.0, std::abs(u - mean) - 0.5) / std::sqrt(var);
  return std::min(1.0, 2 * (1 - normal_cdf(z)));
}

std::optional<double> median_z_p(double median_a, double spread_a, int64_t n_a, double median_b,
                                 double spread_b, int64_t n_b) {
  // p90 - p10 of a normal distribution is 2 x 1.2816 sigma; a sample median's standard error
  // is sqrt(pi/2) sigma / sqrt(n).
  constexpr double kSpreadToSigma = 1.0 / 2.5631;
  constexpr double kMedianEfficiency = 1.2533;
  auto se = [&](double spread, int64_t n) {
    return kMedianEfficiency * spread * kSpreadToSigma /
           std::sqrt(static_cast<double>(std::max<int64_t>(n, 1)));
  };
  const double s = std::hypot(se(spread_a, n_a), se(spread_b, n_b));
  if (!(s > 0)) return std::nullopt;
  const double z = std::abs(median_b - median_a) / s;
  return std::min(1.0, 2 * (1 - normal_cdf(z)));
}

std::vector<double> holm(const std::vector<double>& p) {
  const size_t m = p.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return p[x] < p[y]; });
  std::vector<double> out(m);
  double running = 0;
  for (size_t i = 0; i < m; ++i) {
    const double adj = std::min(1.0, static_cast<double>(m - i) * p[order[i]]);
    running = std::max(running, adj);
    out[order[i]] = running;
  }
  return out;
}

}  // namespace shardcost::regress::stats
