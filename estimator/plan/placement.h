#pragma once
// Where a strategy's parallel groups sit in the global rank order: tensor parallel innermost,
// then context, data, pipeline (Megatron's order); experts spread over data/context-parallel
// ranks. The pricer turns a group's placement into its fabric level.
#include "costs/pricing.h"
#include "shardcost/workload.h"

namespace shardcost {

struct Placement {
  GroupPlacement tp, cp, dp_cp, ep, expert_dp;
  int pp_stride = 1;
  const GroupPlacement& of(Axis a) const { return a == Axis::tp ? tp : a == Axis::cp ? cp : ep; }
};
Placement placement(const Strategy&);

}  // namespace shardcost
