#pragma once
// bench embedding --plan: a sharding plan's lookups run shard by shard on this machine's
// device, each GPU's measured time set beside what the store's fitted lookup models of that
// device predict for the same shards (docs/embeddings.md, "Checking a plan").
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardcost/profiler.h"

namespace shardcost::cli {

// The shards of `shard-tables --format json`'s plan: one pass geometry per shard, by GPU.
struct PlanShard {
  int gpu = 0;
  bench::EmbeddingShape shape;
  int dtype_bytes = 4;
};
// Throws InputError naming the field when the file is not such a plan.
std::vector<PlanShard> read_plan_shards(const std::string& path);
// Each distinct shard shape once, in the plan's order: what bench embedding measures.
std::vector<bench::EmbeddingShape> plan_shapes(const std::vector<PlanShard>&);

struct GpuCheck {
  int gpu = 0, shards = 0;
  double measured_s = 0;
  double predicted_s = -1;  // < 0: no fitted model of the device priced every shard
};
struct PlanCheck {
  std::string device;  // the device measured (as the store names it)
  std::vector<GpuCheck> gpus;
  std::string origin;  // learned | extrapolated | mixed | none
};
// Each GPU's shards' forward and backward, measured (report: every pass run, in one round or
// several: each pass counts at its median over them) and predicted from the store at `db`
// (empty: measured only).
PlanCheck check_plan(const std::vector<PlanShard>&, const bench::EmbeddingReport&,
                     const std::string& db);
std::string render(const PlanCheck&, bool json);

}  // namespace shardcost::cli
