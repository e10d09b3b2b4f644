#pragma once
// Measurements as compare sees them: each row's identity and time distribution, read from
// the store. The statistics that judge them live with compare (compare/).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardcost/db.h"

namespace shardcost::db {

// One measurement as compare sees it: its identity and its time distribution.
struct Measure {
  std::string table;  // gemm | memory | collective | kernels
  // Identity fields in a fixed order per table ("device", "dtype", "m", ...); a pair matches
  // when table and every field are equal. The host is not part of it: CI runners change.
  std::vector<std::pair<std::string, std::string>> key;
  int64_t run_id = 0;
  double median_ns = 0;
  std::optional<double> p10_ns, p90_ns;
  int64_t iterations = 0;
  std::vector<int64_t> samples_ns;  // per-iteration times (kernels: every event's duration)

  std::string label() const;  // "device=X dtype=fp32 m=1024 ..."
};

// Every measurement of one table in the store, oldest run first; run_id: only that run.
std::vector<Measure> load_measures(const Store&, std::string_view table,
                                   std::optional<int64_t> run_id = std::nullopt);
// gemm memory collective kernels
const std::vector<std::string>& comparable_tables();

// "7", a run id, or a uuid (a unique prefix is enough). Throws InputError listing the runs.
Run resolve_run(const Store&, std::string_view id_or_uuid);

}  // namespace shardcost::db
