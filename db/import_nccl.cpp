#include "import_nccl.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "import_util.h"
#include "shardcost/error.h"
#include "shardcost/importers.h"

namespace shardcost::db {

std::string fallback_op(std::string_view op) {
  if (op.empty()) return "";
  const std::string name = nccl_op_name(op);
  if (name.empty())
    throw InputError(fmt::format(
        "--op '{}' is not a collective; use all_reduce, all_gather, reduce_scatter, broadcast, "
        "reduce, all_to_all or send_recv (alltoall, sendrecv too)",
        op));
  return name;
}

void nccl_records(const NcclRun& run, std::string_view source, Measurements& out) {
  if (run.op.empty())
    throw InputError(std::string(source) +
                     ": cannot tell which collective this nccl-tests output "
                     "measured (no 'Collective test starting' line, no op in the file name); "
                     "pass --op all_reduce (or all_gather, reduce_scatter, all_to_all, broadcast, "
                     "reduce, send_recv, gather, scatter, hypercube)");
  std::map<int, NcclRank> by_rank;
  for (const auto& r : run.rank_lines) by_rank[r.rank] = r;
  std::set<std::string> hosts;
  for (const auto& [rank, r] : by_rank) {
    hosts.insert(r.host);
    DeviceRecord d;
    d.name = r.name;
    d.host = r.host;
    d.index = r.device;
    d.pci_bus = r.pci_bus;
    out.devices.push_back(d);
  }
  const int ranks = run.ranks > 0 ? run.ranks : static_cast<int>(by_rank.size());
  if (ranks <= 0)
    throw InputError(std::string(source) +
                     ": no '#  Rank N ... device' lines and no nGpus in the "
                     "header, so the rank count is unknown; import the complete nccl-tests output");
  if (out.devices.empty()) {
    DeviceRecord unknown;
    unknown.name = "unknown GPU";
    out.devices.push_back(unknown);
  }
  if (!by_rank.empty()) out.run.host = by_rank.begin()->second.host;
  const int nodes = std::max<int>(1, static_cast<int>(hosts.size()));

  for (const auto& row : run.rows) {
    for (const auto* half : {&row.out_of_place, &row.in_place}) {
      if (!*half) continue;
      CollectiveRecord c;
      c.device = 0;  // rank 0's device
      c.op = run.op;
      c.dtype = row.dtype;
      c.redop = row.redop;
      c.root = row.root;
      c.bytes = row.bytes;
      c.elements = row.elements;
      c.ranks = ranks;
      c.nodes = nodes;
      c.fabric_level = nodes > 1 ? "inter_node" : "intra_node";
      c.in_place = half == &row.in_place;
      c.time_ns = std::llround((*half)->time_us * 1000);
      c.wrong_elements = (*half)->wrong;
      if (c.wrong_elements.value_or(0) > 0)
        out.warnings.push_back(fmt::format(
            "{}: {} {} bytes ({}): {} wrong elements; stored, flagged as wrong", source, c.op,
            c.bytes, c.in_place ? "in place" : "out of place", *c.wrong_elements));
      c.max_error = (*half)->max_error;
      c.iterations = run.iterations;
      out.collectives.push_back(c);
    }
  }
}

}  // namespace shardcost::db
