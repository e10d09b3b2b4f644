#pragma once
// Where a host benchmark's threads run: the CPUs --cpus names (a list, NUMA nodes, or none),
// else every CPU the process may use, in binding_order; and the line that says so.
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/topology.h"

namespace shardcost::bench {

// The CPUs this process may run on (sched_getaffinity). Throws Error when the kernel refuses.
std::vector<int> allowed_cpus();

struct Binding {
  int threads = 1;
  std::vector<int> cpus;  // thread t runs on cpus[t]; empty: not bound
  std::string where;      // "2 threads bound to CPUs 0-1 (NUMA node 0)"
};

// spec: "" (every allowed CPU), "none" (threads float), "0-7,16" or "numa:0,1". threads 0:
// one per CPU named; more threads than the allowed CPUs take them in turn. Throws InputError
// for a CPU or node the process cannot use, or more threads than the CPUs --cpus names.
Binding resolve_binding(std::string_view spec, int threads, const NodeTopology&,
                        const std::vector<int>& allowed);
// The same on this node: its topology from /sys, the CPUs this process may use.
Binding resolve_binding(std::string_view spec, int threads);

}  // namespace shardcost::bench
