#pragma once
// The divisors of n up to limit, ascending: the sizes a split of n can take. O(sqrt n), and
// safe for every int (no d + 1 past INT_MAX).
#include <algorithm>
#include <cstdint>
#include <vector>

namespace shardcost {

inline std::vector<int> divisors(int n, int limit) {
  std::vector<int> small, large;
  if (n < 1 || limit < 1) return small;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    if (d <= limit) small.push_back(static_cast<int>(d));
    const int64_t other = n / d;
    if (other != d && other <= limit) large.push_back(static_cast<int>(other));
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

}  // namespace shardcost
