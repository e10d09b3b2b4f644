// Expert-parallel dispatch through a deduplicating dispatcher (DeepEP's normal kernels,
// HybridEP; Megatron-core's flex dispatcher): a token goes over the network once to each
// remote node that holds one of its experts, carrying the mask of the GPUs there, and over
// NVLink once to each GPU (DeepEP csrc/kernels/internode.cu: one RDMA token per node with
// its SourceMeta of NVLink ranks; intranode.cu: is_token_in_rank). Combine runs the reverse
// way and reduces per node. Against the flat all-to-all's top_k copies, what crosses each
// link is the expected number of distinct nodes and GPUs a token's experts sit on.
#include <algorithm>
#include <cmath>

#include "pricing.h"

namespace shardcost {
namespace {

// P(none of the top_k experts, drawn without replacement from `pool` equally likely experts,
// is among the `held` of one unit).
double miss_probability(double pool, double held, int top_k) {
  double p = 1;
  for (int i = 0; i < top_k; ++i) {
    if (pool - i <= 0) return 0;
    p *= std::max(0.0, (pool - held - i) / (pool - i));
  }
  return p;
}

// C(n, k) / C(m, k) for n <= m: P(a draw of k of m groups avoids a given n-sized complement).
double choose_ratio(int n, int m, int k) {
  if (k > n) return 0;
  double r = 1;
  for (int i = 0; i < k; ++i) r *= static_cast<double>(n - i) / (m - i);
  return r;
}

}  // namespace

double expected_units_hit(const Routing& r, int units) {
  if (units <= 1 || r.experts <= 0 || r.top_k <= 0) return 1;
  const int k = std::min(r.top_k, r.experts);
  const double per_unit = static_cast<double>(r.experts) / units;
  if (r.groups > 1 && r.group_top_k > 0 && r.group_top_k < r.groups) {
    if (r.groups % units == 0) {
      // Each unit holds whole groups: it is reached when one of its groups is among the
      // token's group_top_k (its experts then take some of the top_k, as a token's best
      // groups are picked by their best experts).
      const int held = r.groups / units;
      return std::min<double>(k,
                              units * (1 - choose_ratio(r.groups - held, r.groups, r.group_top_k)));
    }
    if (units % r.groups == 0) {
      // Each group spans units / groups units: the token's experts are drawn from its
      // group_top_k groups' experts, spread over that many groups' units.
      const int candidates = r.group_top_k * (units / r.groups);
      const double pool = static_cast<double>(r.experts) / r.groups * r.group_top_k;
      return candidates * (1 - miss_probability(pool, per_unit, k));
    }
  }
  return units * (1 - miss_probability(r.experts, per_unit, k));
}

Priced Pricer::routed_all_to_all(double bytes, const Routing& routing, GroupPlacement group) const {
  if (group.ranks <= 1 || bytes <= 0 || routing.top_k <= 0)
    return collective(CollectiveOp::all_to_all, bytes, group);
  const double per_copy = bytes / routing.top_k;
  const int local = ranks_per_node(group);
  const int nodes = (group.ranks + local - 1) / local;
  // NVLink: one copy per GPU reached (the flat all-to-all of that many copies keeps its own
  // share, as a token's expert on its own GPU does).
  const double gpus = expected_units_hit(routing, group.ranks);
  if (nodes == 1) return collective(CollectiveOp::all_to_all, per_copy * gpus, group);
  // Network: one copy per node reached. A flat all-to-all of B bytes over `nodes` nodes of
  // `local` ranks sends B (nodes - 1) / nodes through the NICs, which is what one copy per
  // node reached puts there: price it as that all-to-all (measured or catalog).
  const Priced network =
      collective(CollectiveOp::all_to_all, per_copy * expected_units_hit(routing, nodes), group);
  if (local <= 1) return network;
  // Then inside each node, the forwarding to the GPUs reached there.
  const Priced nvlink =
      collective(CollectiveOp::all_to_all, per_copy * gpus, GroupPlacement{local, group.stride});
  return nvlink.seconds > network.seconds ? nvlink : network;
}

}  // namespace shardcost
