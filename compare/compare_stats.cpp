// The statistics compare judges a pair with: Mann-Whitney U on samples, a z-test on medians
// from summaries, Student's t on the medians of repeated runs, a robust scatter (MAD) of
// changes across rows, and Holm's correction over the pairs.
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

namespace {
// The regularized incomplete beta function I_x(a, b) by Lentz's continued fraction (the form
// of Numerical Recipes' betacf), for Student's t distribution.
double beta_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEps = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::abs(d) < kTiny ? kTiny : d);
  double h = d;
  for (int m = 1; m <= 500; ++m) {
    const double dm = m, m2 = 2 * dm;
    double aa = dm * (b - dm) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    c = 1 + aa / c;
    d = 1 / (std::abs(d) < kTiny ? kTiny : d);
    c = std::abs(c) < kTiny ? kTiny : c;
    h *= d * c;
    aa = -(a + dm) * (a + b + dm) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    c = 1 + aa / c;
    d = 1 / (std::abs(d) < kTiny ? kTiny : d);
    c = std::abs(c) < kTiny ? kTiny : c;
    const double step = d * c;
    h *= step;
    if (std::abs(step - 1) < kEps) break;
  }
  return h;
}
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}
}  // namespace

double student_t_p(double t, double df) {
  if (!(df > 0) || !std::isfinite(t)) return std::isfinite(t) ? 1 : 0;
  return std::min(1.0, incomplete_beta(df / 2, 0.5, df / (df + t * t)));
}

double student_t_critical(double alpha, double df) {
  // Bisection on the two-sided p: monotone in |t|.
  double lo = 0, hi = 1e6;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (student_t_p(mid, df) > alpha ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double robust_scatter(std::vector<double> x) {
  if (x.size() < 2) return 0;
  const double mid = median_of(x);
  for (double& v : x) v = std::abs(v - mid);
  return 1.4826 * median_of(x);
}

double median_of(std::vector<double> x) {
  if (x.empty()) return 0;
  const size_t h = x.size() / 2;
  std::nth_element(x.begin(), x.begin() + static_cast<long>(h), x.end());
  const double upper = x[h];
  if (x.size() % 2) return upper;
  return (*std::max_element(x.begin(), x.begin() + static_cast<long>(h)) + upper) / 2;
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
