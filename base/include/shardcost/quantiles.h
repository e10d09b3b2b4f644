#pragma once
// Order statistics of integer samples (nanoseconds, bytes), linear between ranks: what the
// store's summaries and compare's tests both need.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace shardcost {

// q in [0, 1]; 0 for no samples.
inline double percentile(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return static_cast<double>(v[lo]) * (1 - frac) + static_cast<double>(v[hi]) * frac;
}

inline double median(std::vector<int64_t> v) {
  return percentile(std::move(v), 0.5);
}

}  // namespace shardcost
