#pragma once
// Where a strategy's parallel groups sit in the global rank order: tensor parallel innermost,
// then context, data, pipeline (Megatron's order); experts spread over data/context-parallel
// ranks. The pricer turns a group's placement into its fabric level.
#include "costs/pricing.h"
#include "shardcost/workload.h"

namespace shardcost {

// Expert layers fold a stage's tp*cp*dp ranks their own way (Megatron-core's MoE parallel
// folding): expert tensor parallelism innermost, then expert parallelism, then expert data
// parallelism; with etp = tp that is experts spread over the data/context-parallel ranks.
struct Placement {
  GroupPlacement tp, cp, dp_cp, ep, etp, expert_dp;
  int pp_stride = 1;
  const GroupPlacement& of(Axis a) const {
    switch (a) {
      case Axis::tp:
        return tp;
      case Axis::cp:
        return cp;
      case Axis::etp:
        return etp;
      default:
        return ep;
    }
  }
};
Placement placement(const Strategy&);

}  // namespace shardcost
