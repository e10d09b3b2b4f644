// db merge: folds another store into this one. Runs are identified by uuid, devices by
// fingerprint and strings by text, so merging the same file twice adds nothing.
#include <filesystem>
#include <optional>
#include <string>

#include "shardcost/db.h"
#include "shardcost/error.h"
#include "sqlite.h"

namespace shardcost::db {
namespace {

constexpr std::string_view kRunColumns =
    "uuid, tool, tool_version, git_revision, host, command_line, start_time_ns, end_time_ns, "
    "status, source, recorded_by, library_versions";
constexpr std::string_view kLaunchColumns = "grid_x, grid_y, grid_z, block_x, block_y, block_z";
constexpr std::string_view kDeviceColumns =
    "fingerprint, name, uuid, host, device_index, pci_bus, compute_capability, memory_bytes, "
    "sm_clock_khz, memory_clock_khz, sms, driver_version, cuda_version";

// Per-run copies: ?1 the new run id, ?2 the run's id in src. Device ids are mapped through
// the fingerprint, string ids through the text.
constexpr std::string_view kDeviceMap =
    " JOIN src.device sd ON sd.id = x.device_id JOIN main.device md ON md.fingerprint = "
    "sd.fingerprint ";
struct RowCopy {
  std::string_view table;
  std::string_view columns;
};
constexpr RowCopy kRowCopies[] = {
    {"gemm", "dtype, m, n, k, batch, time_ns, time_p10_ns, time_p90_ns, iterations, samples_ns"},
    {"memory", "kind, bytes, time_ns, time_p10_ns, time_p90_ns, iterations, samples_ns"},
    {"collective",
     "op, dtype, redop, root, bytes, elements, ranks, nodes, fabric_level, in_place, time_ns, "
     "time_p10_ns, time_p90_ns, wrong_elements, max_error, iterations, samples_ns"},
    {"embedding",
     "pass, dtype, optimizer, rows, dim, pooling, batch, zipf, time_ns, time_p10_ns, time_p90_ns, "
     "iterations, samples_ns"},
};

// A run's rows of one table come from one source: a table the run already holds rows of is
// never copied again (a run in both files, or the gemm and memory exports of one run imported
// into two stores, gains only the tables it lacks).
constexpr std::string_view kNoRowsYet = "AND NOT EXISTS (SELECT 1 FROM main.";

std::string prefixed(std::string_view columns, std::string_view prefix) {
  std::string out;
  size_t start = 0;
  while (start < columns.size()) {
    size_t end = columns.find(',', start);
    if (end == std::string_view::npos) end = columns.size();
    std::string_view col = columns.substr(start, end - start);
    while (!col.empty() && col.front() == ' ') col.remove_prefix(1);
    out += (out.empty() ? "" : ", ") + std::string(prefix) + std::string(col);
    start = end + 1;
  }
  return out;
}

// DETACH runs whatever happens after ATTACH.
class Attached {
 public:
  Attached(const Connection& c, const std::string& path) : c_(c) {
    c_.prepare("ATTACH DATABASE ? AS src").bind(1, path).run();
  }
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;
  ~Attached() {
    try {
      c_.exec("DETACH DATABASE src");
    } catch (...) {
      // The connection closes right after a failed merge; nothing stays attached.
    }
  }

 private:
  const Connection& c_;
};

}  // namespace

MergeResult Store::merge_from(const std::string& other_path) {
  std::error_code ec;
  if (std::filesystem::equivalent(other_path, path_, ec))
    throw InputError("cannot merge " + other_path + " into itself; name a different output file");
  // Opening it as a store first gives the same clear errors as every other command.
  { Store::open(other_path, Mode::read_only); }

  const Connection& c = *conn_;
  MergeResult result;
  Attached attached(c, other_path);
  {
    Transaction t(c);
    c.exec("INSERT OR IGNORE INTO main.string (text) SELECT text FROM src.string ORDER BY id");
    c.exec("INSERT OR IGNORE INTO main.launch_config (" + std::string(kLaunchColumns) +
           ") SELECT " + std::string(kLaunchColumns) + " FROM src.launch_config ORDER BY id");
    c.exec("INSERT INTO main.device (" + std::string(kDeviceColumns) + ") SELECT " +
           std::string(kDeviceColumns) +
           " FROM src.device WHERE true ORDER BY id "
           "ON CONFLICT (fingerprint) DO NOTHING");
    c.exec(
        "INSERT OR IGNORE INTO main.fitted_model (kind, device_id, key, parameters_json, "
        "source_runs, created_ns) SELECT x.kind, md.id, x.key, x.parameters_json, "
        "x.source_runs, x.created_ns FROM src.fitted_model x" +
        std::string(kDeviceMap));
    // Models of no one device (pooled ones, step calibrations): UNIQUE never matches a NULL
    // device, so the one already there is kept by hand.
    c.exec(
        "INSERT INTO main.fitted_model (kind, device_id, key, parameters_json, source_runs, "
        "created_ns) SELECT x.kind, NULL, x.key, x.parameters_json, x.source_runs, x.created_ns "
        "FROM src.fitted_model x WHERE x.device_id IS NULL AND NOT EXISTS (SELECT 1 FROM "
        "main.fitted_model f WHERE f.kind = x.kind AND f.key = x.key AND f.device_id IS NULL)");
    t.commit();
  }

  Statement runs = c.prepare("SELECT id, uuid FROM src.run ORDER BY id");
  std::vector<std::pair<int64_t, std::string>> src_runs;
  while (runs.step()) src_runs.emplace_back(runs.int64(0), runs.text(1));

  Statement exists = c.prepare("SELECT id, status FROM main.run WHERE uuid = ?");
  Statement src_status = c.prepare("SELECT status FROM src.run WHERE id = ?");
  Statement copy_run = c.prepare("INSERT INTO main.run (" + std::string(kRunColumns) + ") SELECT " +
                                 std::string(kRunColumns) + " FROM src.run WHERE id = ?");
  Statement copy_links = c.prepare(
      "INSERT OR IGNORE INTO main.run_device (run_id, device_id) SELECT ?1, md.id "
      "FROM src.run_device x" +
      std::string(kDeviceMap) + "WHERE x.run_id = ?2");
  std::vector<Statement> copy_rows;
  for (const auto& rc : kRowCopies) {
    copy_rows.push_back(
        c.prepare("INSERT INTO main." + std::string(rc.table) + " (run_id, device_id, " +
                  std::string(rc.columns) + ") SELECT ?1, md.id, " + prefixed(rc.columns, "x.") +
                  " FROM src." + std::string(rc.table) + " x" + std::string(kDeviceMap) +
                  "WHERE x.run_id = ?2 " + std::string(kNoRowsYet) + std::string(rc.table) +
                  " WHERE run_id = ?1) ORDER BY x.id"));
  }
  copy_rows.push_back(
      c.prepare("INSERT INTO main.step (run_id, number, start_ns, duration_ns) SELECT ?1, "
                "x.number, x.start_ns, x.duration_ns FROM src.step x WHERE x.run_id = ?2 " +
                std::string(kNoRowsYet) + "step WHERE run_id = ?1) ORDER BY x.rowid"));
  // A job schedule and its jobs, the head before the rows that refer to it.
  copy_rows.push_back(c.prepare(
      "INSERT INTO main.job_schedule (run_id, cluster, gpus, objective, solver, optimal, "
      "makespan_ns, bound_ns, sequential_ns, even_split_ns) SELECT ?1, x.cluster, x.gpus, "
      "x.objective, x.solver, x.optimal, x.makespan_ns, x.bound_ns, x.sequential_ns, "
      "x.even_split_ns FROM src.job_schedule x WHERE x.run_id = ?2 " +
      std::string(kNoRowsYet) + "job_schedule WHERE run_id = ?1)"));
  copy_rows.push_back(c.prepare(
      "INSERT INTO main.scheduled_job (run_id, name, model, gbs, steps, gpus, start_ns, end_ns, "
      "strategy) SELECT ?1, x.name, x.model, x.gbs, x.steps, x.gpus, x.start_ns, x.end_ns, "
      "x.strategy FROM src.scheduled_job x WHERE x.run_id = ?2 " +
      std::string(kNoRowsYet) + "scheduled_job WHERE run_id = ?1) ORDER BY x.rowid"));
  // A measured run's one row.
  copy_rows.push_back(c.prepare(
      "INSERT INTO main.measured_step (run_id, label, model_json, model_name, cluster, gpus, "
      "strategy, software, device, precision, seq_len, step_time_ns, step_time_p10_ns, "
      "step_time_p90_ns, steps, tokens_per_s, peak_memory_bytes, source_kind, content_hash) "
      "SELECT ?1, x.label, x.model_json, x.model_name, x.cluster, x.gpus, x.strategy, "
      "x.software, x.device, x.precision, x.seq_len, x.step_time_ns, x.step_time_p10_ns, "
      "x.step_time_p90_ns, x.steps, x.tokens_per_s, x.peak_memory_bytes, x.source_kind, "
      "x.content_hash FROM src.measured_step x WHERE x.run_id = ?2 " +
      std::string(kNoRowsYet) + "measured_step WHERE run_id = ?1)"));
  // Launch configurations map by their six values, as strings by their text.
  copy_rows.push_back(c.prepare(
      "INSERT INTO main.kernel_event (run_id, device_id, stream, kind, name_id, start_ns, "
      "duration_ns, bytes, launch_id) SELECT ?1, md.id, x.stream, x.kind, ms.id, x.start_ns, "
      "x.duration_ns, x.bytes, ml.id FROM src.kernel_event x" +
      std::string(kDeviceMap) +
      "JOIN src.string ss ON ss.id = x.name_id JOIN main.string ms ON ms.text = ss.text "
      "LEFT JOIN src.launch_config sl ON sl.id = x.launch_id "
      "LEFT JOIN main.launch_config ml ON ml.grid_x = sl.grid_x AND ml.grid_y = sl.grid_y AND "
      "ml.grid_z = sl.grid_z AND ml.block_x = sl.block_x AND ml.block_y = sl.block_y AND "
      "ml.block_z = sl.block_z WHERE x.run_id = ?2 " +
      std::string(kNoRowsYet) + "kernel_event WHERE run_id = ?1) ORDER BY x.rowid"));

  for (const auto& [src_id, uuid] : src_runs) {
    exists.bind(1, uuid);
    std::optional<int64_t> present;
    bool both_completed = false;
    if (exists.step()) {
      present = exists.int64(0);
      src_status.bind(1, src_id);
      both_completed =
          exists.text(1) == "completed" && src_status.step() && src_status.text(0) == "completed";
      src_status.reset();
    }
    exists.reset();
    // A run unfinished on either side is left as it is: its rows may be partial.
    if (present && !both_completed) {
      ++result.runs_skipped;
      continue;
    }
    Transaction t(c);
    int64_t id = 0;
    if (present) {
      id = *present;
    } else {
      copy_run.bind(1, src_id).run();
      id = c.last_insert_id();
    }
    copy_links.bind(1, id).bind(2, src_id).run();
    int64_t rows = 0;
    for (auto& s : copy_rows) {
      s.bind(1, id).bind(2, src_id).run();
      rows += c.changes();
    }
    t.commit();
    result.rows_added += rows;
    if (!present)
      ++result.runs_added;
    else if (rows > 0)
      ++result.runs_extended;
    else
      ++result.runs_skipped;
  }
  return result;
}

}  // namespace shardcost::db
