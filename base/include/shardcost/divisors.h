#pragma once
// The divisors of n up to limit, ascending: the sizes a split of n can take.
#include <algorithm>
#include <vector>

namespace shardcost {

inline std::vector<int> divisors(int n, int limit) {
  std::vector<int> out;
  for (int d = 1; d <= std::min(n, limit); ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

}  // namespace shardcost
