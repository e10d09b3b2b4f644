#pragma once
// "Did you mean": the known name closest to a mistyped one.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace shardcost {

// Edits (insert, delete, substitute) between two short names.
inline size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The name in `names` within 2 edits of `name` (the closest), or empty.
inline std::string closest_name(std::string_view name, const std::vector<std::string_view>& names) {
  std::string_view closest;
  size_t best = 3;  // at most 2 edits away
  for (std::string_view n : names)
    if (const size_t d = edit_distance(name, n); d < best) best = d, closest = n;
  return std::string(closest);
}

}  // namespace shardcost
