// Benchmark: rank the full strategy space of GPT-3 175B on 4096 A100s (global batch 3072)
// pinned to one core, and check the speed target: at least 100,000 candidates evaluated in
// under 2 seconds; and a 64-GPU cluster of three node groups in under 10 seconds. Prints the
// figures; exits 1 when a target is missed.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "one_core.h"
#include "shardcost/estimator.h"

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const bool pinned = shardcost::bench::pin_to_one_core();

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
  const double median = shardcost::bench::median_run(seconds);
  const int64_t priced = r.feasible;
  fmt::print("rank gpt3-175b on 4096 x a100 (gbs 3072), {}:\n", shardcost::bench::cores(pinned));
  fmt::print("  evaluated {} candidates ({} priced in full, the rest pruned by memory or rules)\n",
             r.evaluated, priced);
  fmt::print("  median of {} runs: {:.3f} s  ({:.0f} candidates/s, {:.2f} us per candidate)\n",
             repeats, median, r.evaluated / median, 1e6 * median / r.evaluated);
  const bool ok = r.evaluated >= 100000 && median < 2.0;
  fmt::print("  target (>= 100,000 candidates in < 2 s): {}\n", ok ? "met" : "MISSED");

  // A mixed cluster (issue 14): three groups, 64 GPUs, every candidate priced stage by stage
  // with its layers also balanced by each stage's speed. Target: under 10 s.
  const shardcost::Cluster mixed = shardcost::parse_cluster_json(R"({"name": "three groups",
    "inter_node_bandwidth_GBps": 50, "intra_node_bandwidth_GBps": 300, "gpus_per_node": 8,
    "node_groups": [{"name": "a100", "device": "a100-sxm4-80gb", "nodes": 2},
                    {"name": "h100", "device": "h100-sxm5-80gb", "nodes": 4,
                     "intra_node_bandwidth_GBps": 450},
                    {"name": "h200", "device": "h200-sxm-141gb", "nodes": 2,
                     "intra_node_bandwidth_GBps": 450}]})",
                                                                 "bench");
  const shardcost::Model llama = shardcost::load_model("llama3-70b");
  shardcost::RankOptions mo;
  mo.global_batch = 512;
  mo.top = 10;
  std::vector<double> mixed_seconds;
  for (int i = 0; i < repeats; ++i) {
    r = shardcost::rank(llama, mixed, mo);
    mixed_seconds.push_back(r.elapsed_s);
  }
  const double mixed_median = shardcost::bench::median_run(mixed_seconds);
  fmt::print("rank llama3-70b on 64 GPUs in three groups (a100, h100, h200; gbs 512):\n");
  fmt::print("  evaluated {} candidates ({} feasible), median of {} runs: {:.3f} s\n", r.evaluated,
             r.feasible, repeats, mixed_median);
  const bool mixed_ok = mixed_median < 10.0 && !r.best.empty();
  fmt::print("  target (< 10 s): {}\n", mixed_ok ? "met" : "MISSED");
  return ok && mixed_ok ? 0 : 1;
}
