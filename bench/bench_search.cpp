// Benchmark: a 256-trial hyperparameter search of llama3-8b on 64 H100s, pinned to one core:
// a trial's step time from rank at 1, 2, 4 and 8 GPUs per trial, then synchronous successive
// halving and ASHA simulated at each (run_search, as schedule --search does). Target: under
// 1 s in all. Exits 1 when missed.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "one_core.h"
#include "shardcost/planner_requests.h"

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const bool pinned = shardcost::bench::pin_to_one_core();
  const auto file = std::filesystem::temp_directory_path() / "shardcost-bench-search.json";
  std::ofstream(file) << R"({"name": "bench", "model": "llama3-8b", "gbs": 256, "trials": 256,
    "min_steps": 100, "max_steps": 8100, "reduction": 3, "gpus": [1, 2, 4, 8]})";
  shardcost::SearchRequest q;
  q.search = file.string();
  q.cluster = "dgx-h100";
  q.gpus = 64;
  std::vector<double> seconds;
  shardcost::SearchReport r;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    r = shardcost::run_search(q);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::filesystem::remove(file);
  const double median = shardcost::bench::median_run(seconds);
  fmt::print("search: 256 trials of llama3-8b on 64 x h100, {}:\n",
             shardcost::bench::cores(pinned));
  fmt::print(
      "  {} ways simulated; fastest: {} GPUs per trial, {} halving, first full result "
      "{:.1f} h\n",
      r.runs.size(), r.runs.empty() ? 0 : r.runs[r.fastest].gpus_per_trial,
      r.runs.empty() ? "-" : shardcost::to_string(r.runs[r.fastest].kind).data(),
      r.runs.empty() ? 0.0 : r.runs[r.fastest].first_full_s / 3600);
  fmt::print("  median of {} runs: {:.3f} s\n", repeats, median);
  const bool ok = median < 1 && !r.runs.empty();
  fmt::print("  target (< 1 s, step times included): {}\n", ok ? "met" : "MISSED");
  return ok ? 0 : 1;
}
