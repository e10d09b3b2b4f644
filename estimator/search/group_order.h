#pragma once
// A mixed cluster with its node groups in another order: which stages take which devices.
// rank searches orders; what it returns names its order (Estimate::group_order).
#include <string>
#include <vector>

#include "shardcost/hardware.h"

namespace shardcost {

// The cluster with groups[order[0]] first, then groups[order[1]], ...; links follow their
// groups.
Cluster reorder(const Cluster&, const std::vector<size_t>& order);
// The same by group names (an Estimate's group_order); empty: the cluster as it is.
Cluster reorder(const Cluster&, const std::vector<std::string>& names);

}  // namespace shardcost
