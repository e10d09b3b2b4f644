#pragma once
// Step time from priced operators: each block priced once per micro-batch, stages summed from
// their blocks, the pipeline schedule (1F1B, interleaved) over the slowest stage, the
// data-parallel collectives in the compute windows that hide them, the optimizer step.
// Independent of the model family: it reads graphs.
#include <algorithm>
#include <functional>
#include <vector>

#include "costs/pricing.h"
#include "placement.h"
#include "stages.h"
#include "times.h"

namespace shardcost {

// A step's data-parallel collectives, by the compute window that hides them: what the
// schedule exposes behind the pace-setting stage's windows, and what variable-length pricing
// exposes behind each micro-batch's own.
struct DataParallelComm {
  struct Window {
    Cost hidden;   // overlapped collectives, summed
    Cost exposed;  // collectives the software does not overlap
    // The host's seconds issuing the window's collectives where they are not one call each
    // (Software::zero3_list_collectives' reduce-scatters): it runs beside the window's
    // kernels, and what outlasts them is exposed.
    Cost host;
  };
  Window every_forward, every_backward;  // once per micro-batch
  Window last_backward, next_forward;    // once per step
  // Exposed in each micro-batch's forward but the first (DeepSpeed's persisting tensors,
  // released after every backward and gathered back after the step).
  Cost later_forward;
  // later_forward over a step of `micro_batches`.
  Cost later_forwards(int micro_batches) const {
    return later_forward.as(later_forward.seconds * std::max(0, micro_batches - 1));
  }
  Cost tied;            // tied embeddings' all-reduce after the backward
  double sm_share = 0;  // of the hidden part, what the NCCL kernels' SMs cost
  // What outlasts a window of window_s seconds, plus the SMs' share of the hidden part.
  Cost exposed(const Window& w, double window_s) const {
    return combined(combined(behind(w.hidden, window_s, sm_share), w.exposed),
                    behind(w.host, window_s, 0));
  }
  // The step's seconds behind these windows: forward_s[j] and backward_s[j], micro-batch j's
  // windows in order (the first's forward hides the previous step's gather, the last's
  // backward the once-per-step reduction).
  double seconds(const std::vector<double>& forward_s, const std::vector<double>& backward_s) const;
};

// The pace-setting stage's compute windows per micro-batch.
struct PaceWindows {
  double forward = 0, backward = 0;  // backward: with recomputation and its own collectives
};

// One way a stage's replicas run: on one group's pricer, with the graph, strategy and
// placement of one tensor-parallel degree (a plan's replicas may differ in both).
struct ReplicaPricing {
  const Pricer* pricer = nullptr;
  const Graph* graph = nullptr;
  const Strategy* strategy = nullptr;
  const Placement* place = nullptr;
};

// A pipeline send between two stages' replicas: what each side runs, and the pricer of the
// link it crosses (a group's own fabric, or the link between two groups). It reshards when
// the two sides' tensor-parallel degrees differ.
struct StageSend {
  const Pricer* over = nullptr;
  ReplicaPricing from, to;
};

// A mixed cluster's (or a plan's with several TP degrees) pricers, which estimate builds from
// the plan's placement: per stage, each distinct way its replicas run, and where its
// data-parallel collectives run (over the links between its groups, with the graph of its
// largest shard); per stage boundary the distinct sends across it (the last stage's back to
// the first too when interleaved); the first and last stages' tied-embedding all-reduce's.
struct StagePricing {
  std::vector<std::vector<ReplicaPricing>> replicas;
  std::vector<ReplicaPricing> data_parallel;
  std::vector<std::vector<StageSend>> sends;
  const Pricer* tied = nullptr;
};

// Everything the schedule needs about one priced plan.
struct ScheduleInputs {
  const Graph& graph;
  const Strategy& strategy;
  const StageLayout& layout;
  const Software& software;
  const Placement& place;
  const Pricer& pricer;
  bool track_origins = true;  // seconds per cost origin (a breakdown); false: totals only
  // When set: each pipeline stage's seconds per micro-batch, in rank order (what a schedule
  // played out op by op needs).
  std::vector<double>* stage_seconds = nullptr;
  // When set: the data-parallel collectives and the pace-setting stage's windows.
  DataParallelComm* data_parallel = nullptr;
  PaceWindows* windows = nullptr;
  // A mixed cluster: each stage priced on its own groups (`pricer`, `graph` and `place` serve
  // what is not per stage), and, when set, each stage's slowest replica (an index into its
  // replicas).
  const StagePricing* stages = nullptr;
  std::vector<int>* stage_replicas = nullptr;
  // When set, on one group under 1F1B with a pipeline: the layers per stage that make the
  // slowest stage's seconds per micro-batch least, each stage priced as the schedule prices
  // it (its layers, and the first and last stages' embedding, head and MTP blocks;
  // min_max_stage_layers). Left empty otherwise, or where balance_if, given the layout's
  // mean and slowest stage seconds per micro-batch and its step, says it is not worth finding.
  std::vector<int>* balanced_layers = nullptr;
  const std::function<bool(double mean_s, double pace_s, double step_s)>* balance_if = nullptr;
};
// The step's seconds per part.
Times step_times(const ScheduleInputs&);

}  // namespace shardcost
