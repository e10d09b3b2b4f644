// Store: opening, version checks, writing runs in batches, info and check.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <limits>
#include <random>
#include <thread>
#include <unordered_map>

#include "import_lock.h"
#include "schema.h"
#include "shardcost/db.h"
#include "shardcost/error.h"
#include "sqlite.h"
#include "store_rows.h"

namespace shardcost::db {
namespace {

// Whether run_id holds rows in any of the tables m brings rows for.
bool holds_rows_of(const Connection& c, int64_t run_id, const Measurements& m) {
  const std::pair<const char*, bool> tables[] = {{"gemm", !m.gemms.empty()},
                                                 {"memory", !m.memory.empty()},
                                                 {"collective", !m.collectives.empty()},
                                                 {"embedding", !m.embeddings.empty()},
                                                 {"kernel_event", !m.kernels.empty()},
                                                 {"step", !m.steps.empty()},
                                                 {"job_schedule", m.schedule.has_value()},
                                                 {"measured_step", m.measured.has_value()}};
  for (const auto& [table, brings] : tables) {
    if (!brings) continue;
    // Table names come from the list above, never from input.
    Statement s =
        c.prepare(std::string("SELECT EXISTS (SELECT 1 FROM ") + table + " WHERE run_id = ?)");
    s.bind(1, run_id);
    if (s.step() && s.int64(0) != 0) return true;
  }
  return false;
}

// A table's rows as text, each without the store's own run id (its other cells, the run's
// uuid among them, say what the row is); only the run `uuid`'s where given.
std::vector<std::string> row_texts(const CostTable& t, const std::string& uuid) {
  std::optional<size_t> run_id, run_uuid;
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (t.columns[i] == "run_id") run_id = i;
    if (t.columns[i] == "run_uuid") run_uuid = i;
  }
  std::vector<std::string> out;
  for (const auto& row : t.rows) {
    if (!uuid.empty() && run_uuid && cell_text(row[*run_uuid]) != uuid) continue;
    std::string text;
    for (size_t i = 0; i < row.size(); ++i)
      if (i != run_id) text += cell_text(row[i]) + '\x1f';
    out.push_back(std::move(text));
  }
  return out;
}

std::optional<int64_t> nonzero(int64_t v) {
  return v ? std::optional<int64_t>(v) : std::nullopt;
}

// Switching to WAL needs a moment alone with the file, and SQLite does not wait for it on its
// own when another process is creating the same file: retry for the busy timeout.
// A file that is not a store (InputError) or a full disk is said at once; only a lock is
// waited for.
void set_wal(const Connection& c) {
  for (int attempt = 0;; ++attempt) {
    try {
      c.exec("PRAGMA journal_mode = WAL");
      return;
    } catch (const BusyError&) {
      if (attempt >= 3000) throw;
      c.tell_lock_wait();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

// A store in a folder this process cannot write, with no write-ahead log beside it: no
// writer can be at work on it (a writer needs that log), and SQLite could not make the
// shared-memory file a WAL store is read through; it is opened as immutable instead.
bool read_only_folder(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  std::error_code ec;
  return ::access(folder.c_str(), W_OK) != 0 && !fs::exists(path + "-wal", ec);
}

void check_version(const Connection& c, Store::Mode mode) {
  int version = schema_version(c);
  // Another process creating the same file commits its tables and version together; a read
  // between our two looks can see the tables but the old version: look again. Emptiness is
  // looked at once: a second look could see the other process's tables where the version
  // read before them said 0, and take a store being created for a foreign file.
  const bool empty = is_empty(c);
  if (version == 0 && !empty) version = schema_version(c);
  const std::string& path = c.path();
  if (version > kSchemaVersion) {
    throw InputError(path + " has schema version " + std::to_string(version) +
                     " but this shardcost understands up to version " +
                     std::to_string(kSchemaVersion) + "; use a newer shardcost to read it");
  }
  if (version == 0) {
    if (!empty)
      throw InputError(path +
                       " is an SQLite file but not a shardcost store (no schema version); "
                       "check the path");
    if (mode == Store::Mode::read_only)
      throw InputError(path + " is empty, not a shardcost store; import or record something first");
    migrate(c, 0, kSchemaVersion);
    return;
  }
  if (version < kSchemaVersion && mode != Store::Mode::migrate) {
    throw InputError(path + " has schema version " + std::to_string(version) +
                     "; run 'shardcost db migrate " + path + "' to bring it to version " +
                     std::to_string(kSchemaVersion));
  }
}

}  // namespace

std::string new_run_uuid() {
  std::random_device rd;
  std::string out;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20) out += '-';
    out += kHex[rd() & 15];
  }
  return out;
}

std::string_view to_string(EventKind k) {
  switch (k) {
    case EventKind::kernel:
      return "kernel";
    case EventKind::memcpy:
      return "memcpy";
    case EventKind::memset:
      return "memset";
    case EventKind::sync:
      return "sync";
  }
  return "kernel";
}

Store::Store(std::unique_ptr<Connection> c, std::string path)
    : conn_(std::move(c)), path_(std::move(path)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

namespace {

// A store path that cannot be one, said in one line before SQLite sees it (SQLite would make a
// temporary database of "", and call a directory a disk I/O error).
void check_store_path(const std::string& path, Store::Mode mode) {
  namespace fs = std::filesystem;
  if (path.empty()) throw InputError("the store path is empty; name a file with --db FILE");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw InputError(fmt::format("cannot open the store {}: {}", path, ec.message()));
  if (fs::is_directory(st))
    throw InputError(
        fmt::format("{} is a directory, not a store file; name a file with --db", path));
  // Migrating or reading a file that is not there is a mistyped path, never a new store.
  if (!fs::exists(st) && mode != Store::Mode::read_write)
    throw InputError(fmt::format("{}: no such store file; check the path", path));
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw InputError(
        fmt::format("{} is not a regular file (a device, FIFO or socket); a store is "
                    "a file",
                    path));
}

}  // namespace

Store Store::open(const std::string& path, Mode mode) {
  check_store_path(path, mode);
  const Connection::Access access = mode != Mode::read_only  ? Connection::Access::read_write
                                    : read_only_folder(path) ? Connection::Access::immutable
                                                             : Connection::Access::read_only;
  auto conn = std::make_unique<Connection>(path, access);
  if (mode != Mode::read_only) {
    // WAL: readers never block the writer, and a killed writer loses only its open batch.
    set_wal(*conn);
    conn->exec("PRAGMA synchronous = NORMAL");
  }
  check_version(*conn, mode);
  // Reading every page header would be slow; this touches the schema and the last pages,
  // which is where a truncated file fails.
  conn->exec("SELECT count(*) FROM run");
  return Store(std::move(conn), path);
}

Store Store::in_memory() {
  auto conn = std::make_unique<Connection>(":memory:", false);
  check_version(*conn, Mode::read_write);
  return Store(std::move(conn), ":memory:");
}

int Store::migrate() {
  const int from = schema_version(*conn_);
  db::migrate(*conn_, from, kSchemaVersion);
  return from;
}

int64_t Store::remove_run(int64_t id) {
  const Connection& c = *conn_;
  int64_t rows = 0;
  for (const char* table : {"gemm", "memory", "collective", "embedding", "kernel_event", "step",
                            "scheduled_job", "job_schedule", "measured_step", "run_device"}) {
    Statement del = c.prepare(std::string("DELETE FROM ") + table + " WHERE run_id = ?");
    del.bind(1, id).run();
    rows += c.changes();
  }
  Statement del = c.prepare("DELETE FROM run WHERE id = ?");
  del.bind(1, id).run();
  return rows;
}

int64_t Store::delete_run(std::string_view id_or_uuid, int64_t* fitted_models_removed) {
  std::optional<Run> run = find_run(id_or_uuid);
  if (!run) {
    int64_t id = 0;
    const auto [p, ec] =
        std::from_chars(id_or_uuid.data(), id_or_uuid.data() + id_or_uuid.size(), id);
    if (ec == std::errc() && p == id_or_uuid.data() + id_or_uuid.size()) {
      Statement s = conn_->prepare(std::string(kRunSelect) + " WHERE id = ?");
      s.bind(1, id);
      if (s.step()) run = read_run(s);
    }
  }
  if (!run)
    throw InputError(fmt::format("{}: no run '{}'; 'shardcost db info {}' lists the runs", path_,
                                 id_or_uuid, path_));
  Transaction t(*conn_);
  const int64_t rows = remove_run(run->id);
  // Models fitted on the run are fitted on data the store no longer holds: they go with it
  // (fit again on what is left).
  Statement del = conn_->prepare("DELETE FROM fitted_model WHERE instr(source_runs, ?) > 0");
  del.bind(1, run->uuid).run();
  if (fitted_models_removed) *fitted_models_removed = conn_->changes();
  t.commit();
  return rows;
}

std::optional<Run> Store::find_run(std::string_view uuid) const {
  Statement s = conn_->prepare(std::string(kRunSelect) + " WHERE uuid = ?");
  s.bind(1, uuid);
  if (!s.step()) return std::nullopt;
  return read_run(s);
}

WriteResult Store::write(const Measurements& m, int64_t batch_rows) {
  batch_rows = std::max<int64_t>(batch_rows, 1);
  const Connection& c = *conn_;
  Run run = m.run;
  // Content with a content-derived uuid: another process writing the same content goes first,
  // and this one then finds its run completed, not a leftover to replace (issue 37, item 1).
  std::optional<ImportLock> lock;
  if (!run.uuid.empty() && path_ != ":memory:") lock.emplace(path_, run.uuid, lock_wait_notice());
  if (run.uuid.empty()) run.uuid = new_run_uuid();
  WriteResult result;

  // Rows that join a run already in the store go in one transaction: all or none, so a run
  // that was whole stays whole.
  const bool one_transaction = m.adds_to_run || m.appends;
  if (one_transaction) batch_rows = std::numeric_limits<int64_t>::max();

  std::vector<int64_t> device_ids;
  std::optional<Transaction> t;
  t.emplace(c);
  {
    Statement ins = c.prepare(
        "INSERT OR IGNORE INTO run (uuid, tool, tool_version, git_revision, host, command_line, "
        "start_time_ns, end_time_ns, status, source, recorded_by, library_versions) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)");
    auto insert = [&] {  // run() clears the bindings: bound afresh each time
      ins.bind(1, run.uuid).bind(2, run.tool).bind(3, run.tool_version).bind(4, run.git_revision);
      ins.bind(5, run.host).bind(6, run.command_line).bind(7, nonzero(run.start_time_ns));
      ins.bind(8, nonzero(run.end_time_ns)).bind(9, run.source).bind(10, run.recorded_by);
      ins.bind(11, run.library_versions);
      ins.run();
    };
    insert();
    if (c.changes() == 0) {
      const Run existing = *find_run(run.uuid);
      if (m.appends) {
        result.run_id = existing.id;
        result.extended = true;
      } else if (m.adds_to_run) {
        if (existing.status != "completed")
          throw InputError(fmt::format(
              "{}: run {} ({}) is unfinished here, so its rows may be partial; remove it with "
              "'shardcost db delete-run {} {}' or import it whole first",
              path_, existing.id, existing.uuid, path_, existing.id));
        result.run_id = existing.id;
        // The rows it brings: every one there already (the same file again), none (the run's
        // other rows: a table it lacked, or the rest of one split over files), or some.
        const auto [present, brought] = rows_present(existing.uuid, m);
        if (brought > 0 && present == brought) {
          result.duplicate = true;
          return result;
        }
        if (present > 0)
          throw InputError(fmt::format(
              "{}: {} of these {} rows of run {} ({}) are in the store already and {} are not; "
              "import only the rows it lacks (shardcost export --table ... shows what it holds)",
              path_, present, brought, existing.id, existing.uuid, brought - present));
        if (brought == 0 && holds_rows_of(c, existing.id, m)) {
          result.duplicate = true;
          return result;
        }
        result.extended = true;
      } else if (existing.status == "completed") {
        result.duplicate = true;
        result.run_id = existing.id;
        return result;
      } else {
        // The same content, unfinished: an import killed, interrupted or out of disk. What it
        // left is removed and the run written again, whole.
        remove_run(existing.id);
        insert();
        if (c.changes() == 0) throw Error("internal: the replaced run was not written again");
        result.replaced = true;
      }
    }
    if (!result.extended) result.run_id = c.last_insert_id();
    for (const auto& d : m.devices) device_ids.push_back(upsert_device(c, d));
    Statement link =
        c.prepare("INSERT OR IGNORE INTO run_device (run_id, device_id) VALUES (?, ?)");
    for (int64_t id : device_ids) link.bind(1, result.run_id).bind(2, id).run();
    if (!one_transaction) {
      t->commit();
      t.emplace(c);
    }
  }
  auto device = [&](int index) {
    if (index < 0 || static_cast<size_t>(index) >= device_ids.size())
      throw Error("internal: a record refers to device " + std::to_string(index) + " of " +
                  std::to_string(device_ids.size()));
    return device_ids[static_cast<size_t>(index)];
  };

  RowWriter w(c, result.run_id);
  int64_t in_batch = 0;
  auto row_done = [&] {
    ++result.rows;
    if (++in_batch >= batch_rows) {
      t->commit();
      t.emplace(c);
      in_batch = 0;
    }
  };
  for (const auto& r : m.gemms) w.gemm(r, device(r.device)), row_done();
  for (const auto& r : m.memory) w.memory(r, device(r.device)), row_done();
  for (const auto& r : m.collectives) w.collective(r, device(r.device)), row_done();
  for (const auto& r : m.embeddings) w.embedding(r, device(r.device)), row_done();
  std::vector<int64_t> name_ids(m.names.size(), 0);
  int64_t chunk_devices[RowWriter::kKernelChunk], chunk_names[RowWriter::kKernelChunk],
      chunk_launches[RowWriter::kKernelChunk];
  for (size_t i = 0; i < m.kernels.size();) {
    // A chunk never straddles a commit, so every committed batch is whole.
    const size_t n = std::min({RowWriter::kKernelChunk, m.kernels.size() - i,
                               static_cast<size_t>(batch_rows - in_batch)});
    for (size_t j = 0; j < n; ++j) {
      const KernelEvent& e = m.kernels[i + j];
      int64_t& name_id = name_ids.at(static_cast<size_t>(e.name));
      if (name_id == 0) name_id = w.intern(m.names[static_cast<size_t>(e.name)]);
      chunk_devices[j] = device(e.device);
      chunk_names[j] = name_id;
      chunk_launches[j] = e.kind == EventKind::kernel && e.launch.known() ? w.launch(e.launch) : 0;
    }
    w.kernels(&m.kernels[i], n, chunk_devices, chunk_names, chunk_launches);
    result.rows += static_cast<int64_t>(n) - 1;
    in_batch += static_cast<int64_t>(n) - 1;
    row_done();
    i += n;
  }
  if (!m.steps.empty()) {
    Statement step =
        c.prepare("INSERT INTO step (run_id, number, start_ns, duration_ns) VALUES (?, ?, ?, ?)");
    for (const StepSpan& sp : m.steps) {
      step.bind(1, result.run_id)
          .bind(2, sp.number)
          .bind(3, sp.start_ns)
          .bind(4, sp.duration_ns)
          .run();
      row_done();
    }
  }
  if (m.schedule) {
    const JobScheduleRecord& s = *m.schedule;
    Statement head = c.prepare(
        "INSERT INTO job_schedule (run_id, cluster, gpus, objective, solver, optimal, "
        "makespan_ns, bound_ns, sequential_ns, even_split_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
        "?)");
    head.bind(1, result.run_id)
        .bind(2, s.cluster)
        .bind(3, s.gpus)
        .bind(4, s.objective)
        .bind(5, s.solver)
        .bind(6, int64_t{s.optimal ? 1 : 0})
        .bind(7, s.makespan_ns)
        .bind(8, s.bound_ns)
        .bind(9, s.sequential_ns)
        .bind(10, s.even_split_ns)
        .run();
    row_done();
    Statement job = c.prepare(
        "INSERT INTO scheduled_job (run_id, name, model, gbs, steps, gpus, start_ns, end_ns, "
        "strategy) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    for (const ScheduledJobRecord& j : s.jobs) {
      job.bind(1, result.run_id)
          .bind(2, j.name)
          .bind(3, j.model)
          .bind(4, j.gbs)
          .bind(5, j.steps)
          .bind(6, j.gpus)
          .bind(7, j.start_ns)
          .bind(8, j.end_ns)
          .bind(9, j.strategy)
          .run();
      row_done();
    }
  }
  if (m.measured) {
    write_measured_step(c, result.run_id, *m.measured);
    row_done();
  }
  Statement done = c.prepare(
      m.appends
          ? "UPDATE run SET status = 'completed', end_time_ns = ? WHERE id = ?"
          : "UPDATE run SET status = 'completed', end_time_ns = coalesce(end_time_ns, ?) WHERE "
            "id = ?");
  done.bind(1, nonzero(run.end_time_ns)).bind(2, result.run_id).run();
  t->commit();
  return result;
}

StoreInfo Store::info() const {
  StoreInfo info;
  info.path = path_;
  info.schema_version = schema_version(*conn_);
  info.sqlite_version = Connection::library_version();
  Statement runs = conn_->prepare(std::string(kRunSelect) + " ORDER BY id");
  while (runs.step()) info.runs.push_back(read_run(runs));
  Statement devices = conn_->prepare(std::string(kDeviceSelect) + " ORDER BY id");
  while (devices.step()) info.devices.push_back(read_device(devices));
  for (const char* table : {"run", "device", "string", "gemm", "memory", "collective", "embedding",
                            "kernel_event", "launch_config", "step", "fitted_model", "job_schedule",
                            "scheduled_job", "measured_step"}) {
    // Table names come from the list above, never from input.
    Statement count = conn_->prepare(std::string("SELECT count(*) FROM ") + table);
    count.step();
    info.counts.push_back({table, count.int64(0)});
  }
  return info;
}

std::pair<int64_t, int64_t> Store::rows_present(const std::string& uuid,
                                                const Measurements& m) const {
  int64_t present = 0, brought = 0;
  const std::pair<const char*, bool> tables[] = {{"gemm", !m.gemms.empty()},
                                                 {"memory", !m.memory.empty()},
                                                 {"collective", !m.collectives.empty()},
                                                 {"embedding", !m.embeddings.empty()},
                                                 {"kernels", !m.kernels.empty()}};
  // The rows m brings as export lays them out: m stored once, in memory, and read per table
  // (row_texts leaves out the run id, the one cell where the two stores differ).
  std::optional<Store> brought_rows;
  for (const auto& [name, brings] : tables) {
    if (!brings) continue;
    if (!brought_rows) {
      brought_rows = Store::in_memory();
      brought_rows->write(m);
    }
    std::unordered_map<std::string, int64_t> here;
    for (auto& r : row_texts(table(name), uuid)) ++here[std::move(r)];
    for (const std::string& r : row_texts(brought_rows->table(name), "")) {
      ++brought;
      auto it = here.find(r);
      if (it != here.end() && it->second > 0) --it->second, ++present;
    }
  }
  return {present, brought};
}

CheckResult Store::check() const {
  CheckResult r;
  Statement integrity = conn_->prepare("PRAGMA integrity_check");
  while (integrity.step()) {
    const std::string line = integrity.text(0);
    if (line != "ok") r.problems.push_back("integrity: " + line);
  }
  Statement fk = conn_->prepare("PRAGMA foreign_key_check");
  while (fk.step())
    r.problems.push_back("foreign key: row " + fk.text(1) + " of " + fk.text(0) +
                         " refers to a missing " + fk.text(2));
  const std::vector<std::string> expected = {
      "meta",      "run",          "device",          "run_device",   "string",
      "gemm",      "memory",       "collective",      "kernel_event", "launch_config",
      "step",      "fitted_model", "collective_rate", "job_schedule", "scheduled_job",
      "embedding", "measured_step"};
  Statement has = conn_->prepare("SELECT count(*) FROM sqlite_schema WHERE name = ?");
  for (const auto& name : expected) {
    has.bind(1, name);
    has.step();
    if (has.int64(0) == 0) r.problems.push_back("schema: table or view '" + name + "' is missing");
    has.reset();
  }
  Statement running = conn_->prepare("SELECT count(*) FROM run WHERE status = 'running'");
  running.step();
  r.incomplete_runs = running.int64(0);
  r.ok = r.problems.empty();
  return r;
}

}  // namespace shardcost::db
