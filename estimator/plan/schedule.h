#pragma once
// Step time from priced operators: each block priced once per micro-batch, stages summed from
// their blocks, the pipeline schedule (1F1B, interleaved) over the slowest stage, the
// data-parallel collectives in the compute windows that hide them, the optimizer step.
// Independent of the model family: it reads graphs.
#include <vector>

#include "costs/pricing.h"
#include "placement.h"
#include "stages.h"
#include "times.h"

namespace shardcost {

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
};
// The step's seconds per part.
Times step_times(const ScheduleInputs&);

}  // namespace shardcost
