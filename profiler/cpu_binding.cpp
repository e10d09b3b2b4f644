#include "cpu_binding.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "shardcost/error.h"

namespace shardcost::bench {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    throw Error(fmt::format("sched_getaffinity: {}", std::strerror(errno)));
  std::vector<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

Binding resolve_binding(std::string_view spec, int threads, const NodeTopology& t,
                        const std::vector<int>& allowed) {
  Binding b;
  if (spec == "none") {
    b.threads = threads > 0 ? threads : std::max(1, static_cast<int>(allowed.size()));
    b.where = fmt::format("{} thread{} not bound (may run on CPUs {})", b.threads,
                          b.threads == 1 ? "" : "s", cpus_where(t, allowed));
    return b;
  }
  std::vector<int> named = allowed;
  if (spec.rfind("numa:", 0) == 0) {
    named.clear();
    for (const int node : parse_cpu_list(spec.substr(5), "--cpus numa:")) {
      const auto it = std::find_if(t.numa.begin(), t.numa.end(),
                                   [&](const NumaNode& n) { return n.id == node; });
      if (it == t.numa.end())
        throw InputError(fmt::format(
            "--cpus {}: this node has no NUMA node {} (shardcost devices lists them)", spec, node));
      for (const int c : it->cpus)
        if (std::find(allowed.begin(), allowed.end(), c) != allowed.end()) named.push_back(c);
    }
    if (named.empty())
      throw InputError(fmt::format(
          "--cpus {}: none of those nodes' CPUs is one this process may run on ({}); name "
          "others",
          spec, cpu_list_text(allowed)));
  } else if (!spec.empty()) {
    named = parse_cpu_list(spec, "--cpus");
    for (const int c : named)
      if (std::find(allowed.begin(), allowed.end(), c) == allowed.end())
        throw InputError(fmt::format(
            "--cpus {}: CPU {} is not one this process may run on ({}); name those, or change "
            "the process's affinity (taskset, numactl, the job's cgroup)",
            spec, c, cpu_list_text(allowed)));
  }
  const std::vector<int> order = binding_order(t, named);
  b.threads = threads > 0 ? threads : static_cast<int>(order.size());
  const int n = static_cast<int>(order.size());
  if (b.threads > n && !spec.empty())
    throw InputError(fmt::format(
        "--threads {} is more than the {} CPUs --cpus {} names; give at most {} threads, name "
        "more CPUs, or --cpus none to let threads share CPUs",
        b.threads, n, spec, n));
  // More threads than the process may use (asked for with --threads alone): they take the
  // CPUs in turn, and the line says how many share each.
  for (int i = 0; i < b.threads; ++i) b.cpus.push_back(order[static_cast<size_t>(i % n)]);
  b.where = fmt::format("{} thread{} bound to CPU{} {}", b.threads, b.threads == 1 ? "" : "s",
                        std::min(b.threads, n) == 1 ? "" : "s", cpus_where(t, b.cpus));
  if (b.threads > n) b.where += fmt::format(", up to {} per CPU", (b.threads + n - 1) / n);
  return b;
}

Binding resolve_binding(std::string_view spec, int threads) {
  return resolve_binding(spec, threads, read_topology(), allowed_cpus());
}

}  // namespace shardcost::bench
