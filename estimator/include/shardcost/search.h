#pragma once
// Hyperparameter searches on one cluster (Li et al., "A System for Massively Parallel
// Hyperparameter Tuning", MLSys 2020): many trials of one model whose training budgets grow in
// rungs, most stopped early. Planned as synchronous successive halving (every rung waits for
// all its trials) and as ASHA (a free worker promotes the best unpromoted trial of the highest
// rung it can, else starts a new one), by simulation over the cluster's GPUs with each trial's
// step time from the estimator. Records only (docs/scheduling.md).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardcost {

// The most trials a search plans (the simulator keeps a counter per trial and rung).
inline constexpr int kMaxSearchTrials = 100000;

// One search file.
struct SearchSpec {
  std::string name = "search";
  std::string model;  // a catalog model or a model file; empty with step_seconds
  int global_batch = 0;
  int trials = 0;
  int64_t min_steps = 0, max_steps = 0;  // the first rung's budget, the full budget
  int reduction = 3;                     // eta: one trial in `reduction` goes on
  bool resume = true;                    // a promoted trial continues from its checkpoint
  std::vector<int> gpu_counts;           // GPUs per trial to choose from; empty: offered
  std::map<int, double> step_seconds;    // GPUs per trial -> seconds per step, given
  uint64_t seed = 1;                     // the trials' ranking (which ones are promoted)
  // The rungs' budgets in steps: min_steps x reduction^k below max_steps, then max_steps.
  std::vector<int64_t> budgets() const;
};

// Parses a search file (JSON: {"name", "model", "gbs", "trials", "min_steps", "max_steps",
// "reduction", "gpus", "resume", "seed", "step_seconds": {"8": 0.4}}). Throws InputError
// naming the field.
SearchSpec parse_search(std::string_view text, std::string_view origin);
SearchSpec load_search(std::string_view path);

enum class Halving { synchronous, asynchronous };
std::string_view to_string(Halving);

struct RungCount {
  int64_t budget_steps = 0;
  int trials = 0;  // trials that finished this rung
};

// One way to run the search: halving kind, GPUs per trial.
struct HalvingRun {
  Halving kind = Halving::synchronous;
  int gpus_per_trial = 0;
  int workers = 0;            // trials running at once: the cluster's GPUs / GPUs per trial
  double step_s = 0;          // one trial's step at that many GPUs
  double first_full_s = 0;    // when the first trial finishes the full budget
  double makespan_s = 0;      // when the last trial ends
  double gpu_busy_share = 0;  // GPU-seconds trained / (cluster GPUs x makespan)
  double time_full_s = 0;     // one trial trained to the full budget alone: max_steps x step_s
  std::vector<RungCount> rungs;
};

// Simulates one way. Deterministic for a spec (its seed ranks the trials).
HalvingRun simulate_halving(const SearchSpec&, Halving, int gpus_per_trial, int cluster_gpus,
                            double step_s);

}  // namespace shardcost
