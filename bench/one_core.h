#pragma once
// What the single-core speed benchmarks share: pinning the process to CPU 0, how the report
// names the cores it ran on, and the median of the repeated runs.
#include <sched.h>

#include <algorithm>
#include <vector>

namespace shardcost::bench {

// False where the scheduler refuses (the run then says it was unpinned).
inline bool pin_to_one_core() {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  return sched_setaffinity(0, sizeof(one), &one) == 0;
}

inline const char* cores(bool pinned) {
  return pinned ? "one pinned core" : "unpinned cores";
}

// The middle run (of an odd count; the upper middle of an even one).
inline double median_run(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

}  // namespace shardcost::bench
