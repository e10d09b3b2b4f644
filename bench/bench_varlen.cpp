// Benchmark: price 1,000 sampled global batches of 512 sequences in under 1 s on one core
// (Llama-3-8B on 64 H100s, tp=2, a token budget of 8,192 per micro-batch, balanced by cost,
// which prices every batch twice: the plan and its balance=none baseline), without a pipeline
// and with pp=4 (the 1F1B schedule played out per rank). Lengths: the shared
// Wikipedia sample where it is there, else a lognormal with its median and spread. Median of 3.
//   bench_varlen [LENGTHS_FILE]   (default:
//   SOURCE/../shared/data/workloads/wikipedia_seqlens.txt.gz)
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <vector>

#include "shardcost/estimator.h"
#include "shardcost/varlen.h"

int main(int argc, char** argv) {
  using namespace shardcost;
  const std::string path = argc > 1 ? argv[1]
                                    : SHARDCOST_SOURCE_DIR
                               "/../shared/data/workloads/wikipedia_seqlens.txt.gz";
  VarlenOptions o;
  const bool have = std::filesystem::exists(path);
  o.lengths = have ? LengthDistribution::load(path)
                   : LengthDistribution::parse("lognormal:median=347,sigma=1.6");
  o.batches = 1000;
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 64);
  fmt::print("lengths: {}\n", o.lengths.describe());
  bool fast = true;
  // Without a pipeline, and with one of 4 stages whose 1F1B schedule is played out per rank.
  for (const char* text : {"tp=2,mbs=1,gbs=512,zero=1,max_tokens=8192,balance=cost",
                           "tp=2,pp=4,mbs=1,gbs=512,zero=1,max_tokens=8192,balance=cost"}) {
    const Strategy s = parse_strategy(text, 64);
    std::vector<double> runs;
    VarlenEstimate v;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      v = estimate_varlen(m, c, s, o);
      runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(runs.begin(), runs.end());
    fmt::print(
        "{}: 1,000 global batches of 512 sequences (and the baseline's): {:.3f} s, median of 3 "
        "(target < 1 s)\n",
        text, runs[1]);
    fmt::print("  step {:.3f} s (p10 {:.3f}, p90 {:.3f}), imbalance {:.3f}, baseline {:.3f} s\n",
               v.estimate.step_time_s, v.step_time_p10_s, v.step_time_p90_s, v.imbalance,
               v.baseline_step_time_s);
    fast = fast && runs[1] < 1.0;
  }
  return fast ? 0 : 1;
}
