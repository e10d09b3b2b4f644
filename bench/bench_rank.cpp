// Benchmark: rank the full strategy space of GPT-3 175B on 4096 A100s (global batch 3072)
// pinned to one core, and check the speed target: at least 100,000 candidates evaluated in
// under 2 seconds. Prints the figures; exits 1 when the target is missed.
#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <vector>

#include "shardcost/estimator.h"

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  const bool pinned = sched_setaffinity(0, sizeof(one), &one) == 0;

  const shardcost::Model m = shardcost::load_model("gpt3-175b");
  const shardcost::Cluster c = shardcost::load_cluster("dgx-a100", 4096);
  shardcost::RankOptions o;
  o.global_batch = 3072;
  o.top = 10;
  std::vector<double> seconds;
  shardcost::RankResult r;
  for (int i = 0; i < repeats; ++i) {
    r = shardcost::rank(m, c, o);
    seconds.push_back(r.elapsed_s);
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  const int64_t priced = r.feasible;
  fmt::print("rank gpt3-175b on 4096 x a100 (gbs 3072), {} core{}:\n",
             pinned ? "one pinned" : "unpinned", pinned ? "" : "s");
  fmt::print("  evaluated {} candidates ({} priced in full, the rest pruned by memory or rules)\n",
             r.evaluated, priced);
  fmt::print("  median of {} runs: {:.3f} s  ({:.0f} candidates/s, {:.2f} us per candidate)\n",
             repeats, median, r.evaluated / median, 1e6 * median / r.evaluated);
  const bool ok = r.evaluated >= 100000 && median < 2.0;
  fmt::print("  target (>= 100,000 candidates in < 2 s): {}\n", ok ? "met" : "MISSED");
  return ok ? 0 : 1;
}
