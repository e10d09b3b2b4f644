#pragma once
// The input side of a step: each rank's data loader (CPU cores running its worker processes)
// prepares the next step's samples while this one computes, as PyTorch's DataLoader does with
// prefetching; a step waits only for what loading takes beyond its compute. Formulas:
// docs/estimator.md, "Input pipelines".
#include <string>
#include <string_view>

namespace shardcost {

// One rank's loader: cores (worker processes) and the samples one core prepares per second
// (read, decode, augment, tokenize, collate), from the user's own pipeline: time it alone, or
// give a published rate for the same preprocessing.
struct DataLoading {
  int cores_per_rank = 0;
  double samples_per_s_per_core = 0;
};
// "cores=8,rate=450" (rate in samples per second per core). Throws InputError naming the key.
DataLoading parse_data_loading(std::string_view text);
std::string to_string(const DataLoading&);

struct InputBudget {
  DataLoading loading;
  int loaders = 0;                // ranks that load distinct samples (data-parallel replicas)
  double samples_per_loader = 0;  // per step
  double load_s = 0;              // seconds a loader takes for its samples
  double compute_s = 0;           // the step without waiting for input
  double wait_s = 0;              // what the step waits for input: max(0, load - compute)
  double cores_to_keep_up = 0;    // cores per rank at which loading takes as long as compute
  bool input_bound() const { return wait_s > 0; }
};
// A step of `samples` samples split over `loaders` loaders, against `compute_s` of compute.
InputBudget input_budget(const DataLoading&, double samples, int loaders, double compute_s);

}  // namespace shardcost
