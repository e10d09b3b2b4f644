// Benchmark: 100 training jobs on 1,024 H100s (a hyper-parameter and size sweep over five
// catalog models at two global batches each), pinned to one core: every job's speed-up curve
// from rank at every GPU count the cluster offers, then the schedule (list scheduling: more
// jobs than the exact solver takes). Target: under 10 s in all. Exits 1 when missed.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "one_core.h"
#include "shardcost/jobs.h"

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const bool pinned = shardcost::bench::pin_to_one_core();

  const char* models[] = {"gpt3-1.3b", "gpt3-6.7b", "llama3-8b", "gpt3-13b", "llama3-70b"};
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> billions(1, 20);
  std::vector<shardcost::JobSpec> jobs;
  for (int i = 0; i < 100; ++i) {
    shardcost::JobSpec j;
    j.name = fmt::format("job{}", i);
    j.model = models[i % 5];
    j.global_batch = (i / 5) % 2 ? 512 : 1024;
    j.tokens = billions(rng) * 1e9;
    jobs.push_back(j);
  }
  shardcost::EstimateOptions eo;
  eo.breakdown = false;
  std::vector<double> seconds;
  shardcost::JobSchedule s;
  size_t options = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const auto curves = shardcost::job_curves(jobs, "dgx-h100", 1024, eo);
    s = shardcost::schedule_jobs(curves, 1024);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    options = 0;
    for (const auto& c : curves) options += c.options.size();
  }
  const double median = shardcost::bench::median_run(seconds);
  fmt::print("schedule 100 jobs (5 models x 2 batches) on 1024 x h100, {}:\n",
             shardcost::bench::cores(pinned));
  fmt::print(
      "  {} job options from rank, {} scheduled by {}, makespan {:.1f} h (bound {:.1f} h, "
      "one after another {:.1f} h, split evenly {:.1f} h)\n",
      options, s.jobs.size(), s.solver, s.makespan_s / 3600, s.makespan_bound_s / 3600,
      s.sequential_s / 3600, s.even_split_s / 3600);
  fmt::print("  median of {} runs: {:.2f} s\n", repeats, median);
  const bool ok = median < 10 && s.jobs.size() == jobs.size();
  fmt::print("  target (< 10 s, curves included): {}\n", ok ? "met" : "MISSED");
  return ok ? 0 : 1;
}
