#pragma once
// Interval arithmetic for busy time and overlap: unions and intersections of [start, end).
#include <cstdint>
#include <vector>

namespace shardcost::trace {

struct Interval {
  int64_t start = 0, end = 0;
};

// Sorts and merges overlapping or touching intervals.
std::vector<Interval> merge(std::vector<Interval> v);
int64_t total_length(const std::vector<Interval>& merged);
// Length of the intersection of two merged interval lists.
int64_t intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace shardcost::trace
