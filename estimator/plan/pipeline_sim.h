#pragma once
// A pipeline schedule played out op by op: Megatron's 1F1B (interleaved when vpp > 1) over
// micro-batches that differ, each op starting when its device is free and its input has
// arrived. What variable-length pricing uses where the closed form (m paces plus one fill
// and drain) assumes equal micro-batches.
#include <vector>

namespace shardcost {

struct PipelineShape {
  int pp = 1, vpp = 1;
  // Each device's seconds per micro-batch against the pace-setting one's (1 for that one),
  // in rank order; empty: every device alike.
  std::vector<double> stage_share;
  // The forward's share of a micro-batch's seconds; the backward (and recomputation) the rest.
  double forward_share = 1.0 / 3;
};

// The makespan, in seconds, of one step over these micro-batches: micro_batch_s[j] is micro-
// batch j's seconds on the pace-setting device (its whole model chunk set: forward and
// backward). With interleaving, a count of micro-batches that is not a multiple of pp is
// padded with empty ones (Megatron needs the multiple). pp = 1: the sum.
double pipeline_seconds(const PipelineShape&, const std::vector<double>& micro_batch_s);

}  // namespace shardcost
