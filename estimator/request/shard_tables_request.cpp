// shard-tables: the options checked, the tables sharded by the search and by TorchRec's greedy
// baseline, and the JSON of both plans with each shard as the pass `bench embedding --plan`
// measures (docs/embeddings.md).
#include <fmt/format.h>

#include "shardcost/error.h"
#include "shardcost/planner_requests.h"
#include "shardcost/units.h"

namespace shardcost {
namespace {

constexpr double kGiB = units::kGiB;

nlohmann::json plan_json(const ShardingPlan& p, const std::vector<EmbeddingTable>& tables,
                         const Cluster& c, int batch) {
  nlohmann::json gpus = nlohmann::json::array(), placed = nlohmann::json::array();
  for (const GpuLoad& g : p.gpus)
    gpus.push_back({{"shards", g.shards},
                    {"compute_s", round6(g.compute_s)},
                    {"memory_gib", round6(g.memory_bytes / kGiB)},
                    {"send_mib", round6(g.send_bytes / (1 << 20))}});
  for (const TablePlacement& t : p.tables) {
    const EmbeddingTable& table = tables[t.table];
    nlohmann::json shards = nlohmann::json::array();
    for (const ShardPass& s : shard_passes(t, table, c, batch))
      shards.push_back({{"gpu", s.gpu},
                        {"rows", round6(s.rows)},
                        {"dim", s.dim},
                        {"pooling", round6(s.pooling)},
                        {"batch", round6(s.batch)},
                        {"zipf", table.zipf},
                        {"histogram", table.histogram},
                        {"dtype_bytes", table.dtype_bytes}});
    placed.push_back({{"table", table.name},
                      {"sharding", to_string(t.type)},
                      {"gpus", t.gpus},
                      {"compute_s", round6(t.compute_s)},
                      {"memory_gib", round6(t.memory_bytes / kGiB)},
                      {"shards", shards}});
  }
  return {{"step_s", round6(p.step_s)},
          {"slowest_compute_s", round6(p.slowest_compute_s)},
          {"mean_compute_s", round6(p.mean_compute_s)},
          {"balance", round6(p.balance())},
          {"comm_s", round6(p.comm_s)},
          {"gpus", gpus},
          {"tables", placed}};
}

}  // namespace

ShardTablesReport run_shard_tables(const ShardTablesRequest& a) {
  ShardTablesReport r;
  r.request = a;
  ShardingOptions& o = r.options;
  o.batch = a.batch;
  if (a.beam < 1 || a.beam > 256) throw InputError("--beam must be from 1 to 256");
  o.beam = a.beam;
  if (a.optimizer == "rowwise_adagrad")
    o.optimizer = EmbeddingOptimizer::rowwise_adagrad;
  else if (a.optimizer == "adam")
    o.optimizer = EmbeddingOptimizer::adam;
  else if (a.optimizer == "sgd")
    o.optimizer = EmbeddingOptimizer::sgd;
  else
    throw InputError(
        fmt::format("--optimizer '{}': give rowwise_adagrad, adam or sgd", a.optimizer));
  o.dense_mlps = a.dense_mlps;
  if (a.dense_precision != "fp32" && a.dense_precision != "tf32" && a.dense_precision != "bf16")
    throw InputError(
        fmt::format("--dense-precision {}: give fp32, tf32 or bf16", a.dense_precision));
  o.dense_dtype = parse_dtype(a.dense_precision);
  o.progress = a.progress;
  r.tables = load_tables(a.tables);
  r.cluster = load_cluster(a.cluster, a.gpus);
  const auto costs = load_cost_sources(a.db);
  r.warnings = costs->warnings;
  EstimateOptions eo;
  eo.costs = costs->source();
  r.result = shard_tables(r.tables, r.cluster, o, eo);
  return r;
}

nlohmann::json to_json(const ShardTablesReport& rep) {
  const ShardingResult& r = rep.result;
  const int batch = rep.request.batch;
  return {{"cluster", rep.cluster.name},
          {"gpus", rep.cluster.total_gpus()},
          {"batch", batch},
          {"evaluated", r.evaluated},
          {"lookup_costs", r.lookup_costs},
          {"dense",
           {{"parameters", r.dense.parameters},
            {"memory_gib", round6(r.dense.memory_bytes / kGiB)},
            {"compute_s", round6(r.dense.compute_s)},
            {"all_reduce_s", round6(r.dense.all_reduce_s)}}},
          {"plan", plan_json(r.plan, rep.tables, rep.cluster, batch)},
          {"greedy", r.greedy_failed.empty() ? plan_json(r.greedy, rep.tables, rep.cluster, batch)
                                             : nlohmann::json(nullptr)},
          {"greedy_failed", r.greedy_failed}};
}

}  // namespace shardcost
