#pragma once
// Order statistics of samples (nanoseconds, bytes, seconds), linear between ranks: what the
// store's summaries, compare's tests and the variable-length step spread need.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace shardcost {

// q in [0, 1]; 0 for no samples. Equal samples give exactly their value at every q.
template <class T>
double percentile(std::vector<T> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  const double a = static_cast<double>(v[lo]), b = static_cast<double>(v[hi]);
  return a + (b - a) * frac;
}

// Integer samples by name, so that a braced list ({0, 10}) picks them.
inline double percentile(std::vector<int64_t> v, double q) {
  return percentile<int64_t>(std::move(v), q);
}

inline double median(std::vector<int64_t> v) {
  return percentile(std::move(v), 0.5);
}

}  // namespace shardcost
