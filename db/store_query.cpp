// Reading cost tables back out: exports and the estimator's measurement points.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <set>
#include <string>

#include "shardcost/db.h"
#include "shardcost/error.h"
#include "sqlite.h"

namespace shardcost::db {
namespace {

struct TableQuery {
  std::string_view name;
  std::string_view sql;  // ?1 device substring, ?2 op/kind ('' = all)
  bool has_op;
};

// Column names carry their units; rates are derived here, never stored. Every row names its
// run (run_id, the store's own number; run_uuid, stable across stores), so tables join.
constexpr TableQuery kQueries[] = {
    {"gemm",
     "SELECT r.id AS run_id, r.uuid AS run_uuid, d.name AS device, d.host AS host, g.dtype, g.m, "
     "g.n, g.k, g.batch, g.time_ns, "
     "g.time_p10_ns, g.time_p90_ns, g.iterations, 2 * g.m * g.n * g.k * g.batch AS flop, "
     "2.0 * g.m * g.n * g.k * g.batch / g.time_ns / 1000 AS tflop_per_s "
     "FROM gemm g JOIN device d ON d.id = g.device_id JOIN run r ON r.id = g.run_id "
     "WHERE (?1 = '' OR d.name LIKE '%' || ?1 || '%') AND ?2 = '' "
     "ORDER BY d.name, d.host, g.dtype, g.m, g.n, g.k, g.batch, g.id",
     false},
    {"memory",
     "SELECT r.id AS run_id, r.uuid AS run_uuid, d.name AS device, d.host AS host, x.kind, "
     "x.bytes, x.time_ns, x.time_p10_ns, "
     "x.time_p90_ns, x.iterations, CAST(x.bytes AS REAL) / x.time_ns AS bandwidth_gbps "
     "FROM memory x JOIN device d ON d.id = x.device_id JOIN run r ON r.id = x.run_id "
     "WHERE (?1 = '' OR d.name LIKE '%' || ?1 || '%') AND (?2 = '' OR x.kind = ?2) "
     "ORDER BY d.name, d.host, x.kind, x.bytes, x.id",
     true},
    {"collective",
     "SELECT r.id AS run_id, r.uuid AS run_uuid, d.name AS device, d.host AS host, c.op, c.dtype, "
     "c.redop, c.root, c.bytes, "
     "c.elements, c.ranks, c.nodes, c.fabric_level, c.in_place, c.time_ns, c.time_p10_ns, "
     "c.time_p90_ns, c.wrong_elements, c.max_error, c.iterations, c.algbw_gbps, c.busbw_gbps "
     "FROM collective_rate c JOIN device d ON d.id = c.device_id JOIN run r ON r.id = c.run_id "
     "WHERE (?1 = '' OR d.name LIKE '%' || ?1 || '%') AND (?2 = '' OR c.op = ?2) "
     "ORDER BY d.name, d.host, c.op, c.ranks, c.nodes, c.dtype, c.in_place, c.bytes, c.id",
     true},
    {"embedding",
     "SELECT r.id AS run_id, r.uuid AS run_uuid, d.name AS device, d.host AS host, e.pass, "
     "e.dtype, e.optimizer, e.rows, e.dim, e.pooling, e.batch, e.zipf, e.time_ns, "
     "e.time_p10_ns, e.time_p90_ns, e.iterations, "
     "e.batch * e.pooling / e.time_ns * 1e9 AS lookups_per_s "
     "FROM embedding e JOIN device d ON d.id = e.device_id JOIN run r ON r.id = e.run_id "
     "WHERE (?1 = '' OR d.name LIKE '%' || ?1 || '%') AND (?2 = '' OR e.pass = ?2) "
     "ORDER BY d.name, d.host, e.pass, e.dtype, e.optimizer, e.rows, e.dim, e.pooling, e.batch, "
     "e.zipf, e.id",
     true},
    {"kernels",
     "SELECT r.id AS run_id, r.uuid AS run_uuid, d.name AS device, d.host AS host, d.device_index, "
     "k.stream, "
     "CASE k.kind WHEN 0 THEN 'kernel' WHEN 1 THEN 'memcpy' WHEN 2 THEN 'memset' ELSE 'sync' END "
     "AS kind, s.text AS name, k.start_ns, k.duration_ns, k.bytes, l.grid_x AS grid_x_blocks, "
     "l.grid_y AS grid_y_blocks, l.grid_z AS grid_z_blocks, l.block_x AS block_x_threads, "
     "l.block_y AS block_y_threads, l.block_z AS block_z_threads "
     "FROM kernel_event k JOIN device d ON d.id = k.device_id JOIN string s ON s.id = k.name_id "
     "JOIN run r ON r.id = k.run_id "
     "LEFT JOIN launch_config l ON l.id = k.launch_id "
     "WHERE (?1 = '' OR d.name LIKE '%' || ?1 || '%') AND (?2 = '' OR k.kind = CASE ?2 WHEN "
     "'kernel' THEN 0 WHEN 'memcpy' THEN 1 "
     "WHEN 'memset' THEN 2 WHEN 'sync' THEN 3 ELSE -1 END) "
     "ORDER BY k.rowid",
     true},
    {"measured",
     "SELECT r.id AS run_id, r.uuid AS run_uuid, m.label, m.model_name, m.device, m.gpus, "
     "m.precision, m.seq_len, m.strategy, m.software, m.step_time_ns, m.step_time_p10_ns, "
     "m.step_time_p90_ns, m.steps, m.tokens_per_s, m.peak_memory_bytes, m.source_kind, "
     "m.content_hash, m.cluster, m.model_json "
     "FROM measured_step m JOIN run r ON r.id = m.run_id "
     "WHERE (?1 = '' OR m.device LIKE '%' || ?1 || '%') AND ?2 = '' ORDER BY m.run_id",
     false},
    {"runs",
     "SELECT id AS run_id, uuid AS run_uuid, tool, tool_version, git_revision, host, command_line, "
     "start_time_ns, "
     "end_time_ns, status, source, library_versions FROM run "
     "WHERE ?1 = '' AND ?2 = '' ORDER BY id",
     false},
};

}  // namespace

std::vector<std::string> table_names() {
  std::vector<std::string> out;
  for (const auto& q : kQueries) out.emplace_back(q.name);
  return out;
}

void Store::each_row(std::string_view name, const TableFilter& filter,
                     const std::function<void(const std::vector<std::string>&)>& columns,
                     const std::function<void(const std::vector<Cell>&)>& row) const {
  for (const auto& q : kQueries) {
    if (q.name != name) continue;
    if (!q.has_op && !filter.op.empty())
      throw InputError("--op does not apply to table " + std::string(name) +
                       "; use it with collective, memory, embedding (the pass) or kernels");
    if (name == "runs" && !filter.device.empty())
      throw InputError("--device does not apply to table runs");
    Statement s = conn_->prepare(q.sql);
    s.bind(1, filter.device).bind(2, filter.op);
    std::vector<std::string> names;
    for (int i = 0; i < s.columns(); ++i) names.push_back(s.column_name(i));
    columns(names);
    std::vector<Cell> cells(names.size());
    while (s.step()) {
      for (int i = 0; i < s.columns(); ++i) cells[static_cast<size_t>(i)] = s.cell(i);
      row(cells);
    }
    return;
  }
  std::string known;
  for (const auto& n : table_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError("unknown table '" + std::string(name) + "'; use one of " + known);
}

CostTable Store::table(std::string_view name, const TableFilter& filter) const {
  CostTable t;
  t.name = std::string(name);
  each_row(
      name, filter, [&t](const std::vector<std::string>& c) { t.columns = c; },
      [&t](const std::vector<Cell>& r) { t.rows.push_back(r); });
  return t;
}

CostTable export_table(const Measurements& m, std::string_view table,
                       std::optional<int64_t> run_id) {
  Store scratch = Store::in_memory();
  scratch.write(m);
  CostTable t = scratch.table(table);
  const auto col = std::find(t.columns.begin(), t.columns.end(), "run_id");
  if (col != t.columns.end()) {
    const size_t at = static_cast<size_t>(col - t.columns.begin());
    for (auto& row : t.rows) row[at] = run_id ? Cell(*run_id) : Cell();
  }
  return t;
}

std::vector<CollectivePoint> Store::collective_points() const {
  Statement s = conn_->prepare(
      "SELECT d.name, c.op, c.ranks, c.nodes, c.fabric_level, c.bytes, c.time_ns FROM "
      "collective c JOIN device d ON d.id = c.device_id WHERE c.time_ns > 0 AND c.bytes > 0");
  std::vector<CollectivePoint> out;
  while (s.step()) {
    out.push_back({s.text(0), s.text(1), static_cast<int>(s.int64(2)), static_cast<int>(s.int64(3)),
                   s.text(4), s.int64(5), s.int64(6)});
  }
  return out;
}

std::vector<GemmPoint> Store::gemm_points() const {
  Statement s = conn_->prepare(
      "SELECT d.name, g.dtype, g.m, g.n, g.k, g.batch, g.time_ns FROM gemm g "
      "JOIN device d ON d.id = g.device_id WHERE g.time_ns > 0");
  std::vector<GemmPoint> out;
  while (s.step()) {
    out.push_back(
        {s.text(0), s.text(1), s.int64(2), s.int64(3), s.int64(4), s.int64(5), s.int64(6)});
  }
  return out;
}

std::vector<MemoryPoint> Store::memory_points() const {
  Statement s = conn_->prepare(
      "SELECT d.name, m.kind, m.bytes, m.time_ns FROM memory m "
      "JOIN device d ON d.id = m.device_id WHERE m.time_ns > 0 AND m.bytes > 0");
  std::vector<MemoryPoint> out;
  while (s.step()) out.push_back({s.text(0), s.text(1), s.int64(2), s.int64(3)});
  return out;
}

std::vector<EmbeddingPoint> Store::embedding_points() const {
  Statement s = conn_->prepare(
      "SELECT d.name, e.pass, e.dtype, e.optimizer, e.rows, e.dim, e.batch, e.pooling, e.zipf, "
      "e.time_ns FROM embedding e JOIN device d ON d.id = e.device_id "
      "WHERE e.time_ns > 0 AND e.rows > 0 AND e.dim > 0 AND e.batch > 0 AND e.pooling > 0");
  std::vector<EmbeddingPoint> out;
  while (s.step())
    out.push_back({s.text(0), s.text(1), s.text(2), s.text(3), s.int64(4), s.int64(5), s.int64(6),
                   s.real(7), s.real(8), s.int64(9)});
  return out;
}

std::vector<StepPoint> Store::step_points() const {
  Statement s = conn_->prepare(
      "SELECT r.uuid, r.source, st.number, st.duration_ns FROM step st JOIN run r ON r.id = "
      "st.run_id "
      "WHERE st.duration_ns > 0 ORDER BY r.id, st.number");
  std::vector<StepPoint> out;
  while (s.step())
    out.push_back({s.text(0), s.is_null(1) ? "" : s.text(1), s.int64(2), s.int64(3)});
  return out;
}

std::vector<JobScheduleRecord> Store::job_schedules() const {
  Statement heads = conn_->prepare(
      "SELECT r.uuid, s.run_id, s.cluster, s.gpus, s.objective, s.solver, s.optimal, "
      "s.makespan_ns, s.bound_ns, s.sequential_ns, s.even_split_ns FROM job_schedule s JOIN run "
      "r ON r.id = s.run_id ORDER BY s.run_id");
  Statement jobs = conn_->prepare(
      "SELECT name, model, gbs, steps, gpus, start_ns, end_ns, strategy FROM scheduled_job "
      "WHERE run_id = ? ORDER BY start_ns, rowid");
  std::vector<JobScheduleRecord> out;
  while (heads.step()) {
    JobScheduleRecord s;
    s.run_uuid = heads.text(0);
    const int64_t run_id = heads.int64(1);
    s.cluster = heads.text(2);
    s.gpus = heads.int64(3);
    s.objective = heads.text(4);
    s.solver = heads.text(5);
    s.optimal = heads.int64(6) != 0;
    s.makespan_ns = heads.int64(7);
    s.bound_ns = heads.int64(8);
    s.sequential_ns = heads.int64(9);
    if (!heads.is_null(10)) s.even_split_ns = heads.int64(10);
    jobs.bind(1, run_id);
    while (jobs.step())
      s.jobs.push_back({jobs.text(0), jobs.text(1), jobs.int64(2), jobs.int64(3), jobs.int64(4),
                        jobs.int64(5), jobs.int64(6), jobs.text(7)});
    jobs.reset();
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<KernelPoint> Store::kernel_points() const {
  Statement s = conn_->prepare(
      "SELECT d.name, n.text, l.grid_x, l.grid_y, l.grid_z, l.block_x, l.block_y, l.block_z, "
      "COUNT(*), AVG(k.duration_ns) FROM kernel_event k JOIN device d ON d.id = k.device_id "
      "JOIN string n ON n.id = k.name_id LEFT JOIN launch_config l ON l.id = k.launch_id "
      "WHERE k.kind = 0 AND k.duration_ns > 0 GROUP BY d.name, k.name_id, k.launch_id "
      "ORDER BY d.name, n.text, l.grid_x, l.grid_y, l.grid_z, l.block_x, l.block_y, l.block_z");
  std::vector<KernelPoint> out;
  while (s.step()) {
    KernelPoint p{s.text(0), s.text(1), {}, s.int64(8), s.real(9)};
    if (!s.is_null(2))
      p.launch = {static_cast<int32_t>(s.int64(2)), static_cast<int32_t>(s.int64(3)),
                  static_cast<int32_t>(s.int64(4)), static_cast<int32_t>(s.int64(5)),
                  static_cast<int32_t>(s.int64(6)), static_cast<int32_t>(s.int64(7))};
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace shardcost::db

namespace shardcost::db {

std::string Store::source_runs(std::string_view table, std::string_view device) const {
  static const std::set<std::string_view> tables = {"gemm", "memory", "collective", "embedding",
                                                    "kernel_event"};
  if (!tables.count(table))
    throw Error(fmt::format("internal: no table '{}' holds rows a model is fitted on", table));
  Statement s = conn_->prepare(
      fmt::format("SELECT DISTINCT r.uuid FROM {} x JOIN run r ON r.id = x.run_id JOIN device d ON "
                  "d.id = x.device_id WHERE (? = '' OR d.name = ?) ORDER BY r.uuid",
                  table));
  s.bind(1, device).bind(2, device);
  std::string out;
  while (s.step()) {
    if (!out.empty()) out += ' ';
    out += s.text(0);
  }
  return out;
}

void Store::put_fitted_model(const FittedModelRow& m) {
  Transaction tx(*conn_);
  std::optional<int64_t> device_id;
  if (!m.device.empty()) {
    Statement find = conn_->prepare("SELECT id FROM device WHERE name = ?1 ORDER BY id LIMIT 1");
    find.bind(1, m.device);
    if (!find.step())
      throw InputError(
          fmt::format("store {}: no device named '{}' to fit a model for", path_, m.device));
    device_id = find.int64(0);
  }
  // NULL device ids never compare equal in UNIQUE: delete by hand, then insert.
  Statement del =
      conn_->prepare("DELETE FROM fitted_model WHERE kind = ?1 AND key = ?2 AND device_id IS ?3");
  del.bind(1, m.kind).bind(2, m.key).bind(3, device_id);
  del.run();
  Statement ins = conn_->prepare(
      "INSERT INTO fitted_model (kind, device_id, key, parameters_json, source_runs, created_ns) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  ins.bind(1, m.kind).bind(2, device_id).bind(3, m.key).bind(4, m.parameters_json);
  const int64_t created = m.created_ns != 0
                              ? m.created_ns
                              : std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
  ins.bind(5, m.source_runs).bind(6, created);
  ins.run();
  tx.commit();
}

std::vector<FittedModelRow> Store::fitted_models() const {
  Statement s = conn_->prepare(
      "SELECT f.kind, COALESCE(d.name, ''), f.key, f.parameters_json, f.source_runs, "
      "f.created_ns FROM fitted_model f LEFT JOIN device d ON d.id = f.device_id ORDER BY f.id");
  std::vector<FittedModelRow> out;
  while (s.step())
    out.push_back({s.text(0), s.text(1), s.text(2), s.text(3), s.text(4), s.int64(5)});
  return out;
}

}  // namespace shardcost::db
