#pragma once
// Per-layer sharding (OSDP, Jiang et al., IJCAI'23) for one candidate shape: which parameter
// units to replicate and which to shard ZeRO-3 style so that the most parameters stay
// replicated (and the fewest are gathered every micro-batch) within device memory.
#include <functional>
#include <vector>

#include "plan/stages.h"
#include "shardcost/estimator.h"

namespace shardcost {

// The units in the order they are replicated (largest first), and how many slices a sharded
// unit is gathered in: the embedding and the head in as many as keep each slice within the
// largest layer (operator splitting), the layers whole. Index 0 is the embedding, 1..L the
// layers, L + 1 the head (Strategy::zero_layers).
struct ShardingUnits {
  std::vector<double> params;  // per unit
  std::vector<int> slices;     // when sharded
};
ShardingUnits sharding_units(const Graph&);

// A family of masks over one shape and base ZeRO stage (0-2), with the embedding and the head
// marked one way (replicated, sharded whole, or sharded in their slices): at(k) replicates
// the first k layers of `order` (largest first) and shards the rest, for k up to `most`, the
// most that fit. at(0) shards every layer; with both pinned units sharded whole it prices as
// uniform ZeRO-3, and at(layers) with both replicated is the uniform base stage.
struct MaskFamily {
  Strategy first;
  std::vector<size_t> order;
  size_t most = 0;
  Strategy at(size_t k) const;
};
// The families whose at(0) fits `capacity` bytes, `most` found by bisection (memory grows with
// the layers replicated).
std::vector<MaskFamily> sharding_families(const Graph&, const Strategy& shape, int base,
                                          const Software&, const StageLayout&, double capacity);
// The fastest count by `seconds`: both ends, a grid of about eight counts between them, then
// around the best with the step halved down to one layer. Time is near convex in the count
// (each window's exposed collectives are), which the refinement relies on; both ends are
// always priced.
Strategy fastest_mask(const MaskFamily&, const std::function<double(const Strategy&)>& seconds);

}  // namespace shardcost
