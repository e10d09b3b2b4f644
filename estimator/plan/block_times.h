#pragma once
// One block's operators priced for one micro-batch: compute forward, backward and recomputed,
// communication by the parallel group it runs over, with what the software overlaps.
#include <vector>

#include "costs/pricing.h"
#include "placement.h"
#include "times.h"

namespace shardcost {

// track_origins: keep the seconds per cost origin (estimates with a breakdown).
Times block_times(const std::vector<Op>& ops, const Pricer&, const Placement&, Recompute,
                  const Software&, bool track_origins);

}  // namespace shardcost
