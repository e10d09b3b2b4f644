// Node groups in another order, links following them.
#include "group_order.h"

namespace shardcost {

Cluster reorder(const Cluster& c, const std::vector<size_t>& order) {
  Cluster out = c;
  out.groups.clear();
  std::vector<size_t> where(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    out.groups.push_back(c.groups[order[i]]);
    where[order[i]] = i;
  }
  for (GroupLink& l : out.links) l.a = where[l.a], l.b = where[l.b];
  return out;
}

Cluster reorder(const Cluster& c, const std::vector<std::string>& names) {
  if (names.empty()) return c;
  std::vector<size_t> order;
  for (const std::string& name : names)
    for (size_t i = 0; i < c.groups.size(); ++i)
      if (c.groups[i].name == name) order.push_back(i);
  return reorder(c, order);
}

}  // namespace shardcost
