#include "bench_store.h"

#include <fmt/format.h>

#include <utility>

#include "run_info.h"

namespace shardcost::cli {

std::string store_path(const std::string& db, int rank) {
  if (db.empty()) return {};
  std::string path = db;
  const auto at = path.find("{rank}");
  if (at != std::string::npos) return path.replace(at, 6, std::to_string(rank));
  return rank == 0 ? path : std::string();
}

void describe_run(db::Run& run, int rank, int ranks, int64_t start_ns, const std::string& version,
                  const std::string& revision) {
  const HostInfo h = host_info();
  run.uuid = db::new_run_uuid();
  run.tool = "shardcost";
  run.tool_version = version;
  run.git_revision = revision;
  run.host = h.hostname;
  run.command_line =
      command_line() + (ranks > 1 ? fmt::format(" (rank {} of {})", rank, ranks) : "");
  run.start_time_ns = start_ns;
  run.end_time_ns = now_ns();
  run.recorded_by = fmt::format("shardcost {} ({})", version, revision);
  run.library_versions = bench::library_versions();
}

BenchStore::BenchStore(std::string db, int64_t start_ns, std::string version, std::string revision)
    : db_(std::move(db)),
      version_(std::move(version)),
      revision_(std::move(revision)),
      start_ns_(start_ns) {}

bench::Checkpoint BenchStore::checkpoint() {
  if (db_.empty()) return {};
  return [this](const bench::Finished& f) { add(f); };
}

void BenchStore::add(const bench::Finished& f) {
  if (error_) return;
  try {
    if (!started_) {
      started_ = true;
      const std::string path = store_path(db_, f.rank);
      if (path.empty()) return;
      store_.emplace(db::Store::open(path, db::Store::Mode::read_write));
      describe_run(run_, f.rank, f.ranks, start_ns_, version_, revision_);
    }
    if (!store_) return;
    db::Measurements m = f.rows;
    m.run = run_;
    m.run.end_time_ns = now_ns();
    m.appends = true;
    run_id_ = store_->write(m).run_id;
  } catch (...) {
    // Thrown here, a collective's other ranks would wait for this one until --timeout: all stop
    // at the next measurement instead, and finish() says why.
    error_ = std::current_exception();
    bench::request_stop();
  }
}

std::optional<int64_t> BenchStore::finish() const {
  if (error_) std::rethrow_exception(error_);
  return run_id_;
}

}  // namespace shardcost::cli
