#pragma once
// Where a benchmark's figures go: its run described, and each measurement stored in --db as
// soon as it is finished.
#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "shardcost/db.h"
#include "shardcost/profiler.h"

namespace shardcost::cli {

// The store this rank writes: --db with {rank} replaced (one file per rank), or --db itself on
// rank 0; empty for the other ranks and without --db.
std::string store_path(const std::string& db, int rank);

// Names the run (a new uuid) and says where it came from.
void describe_run(db::Run&, int rank, int ranks, int64_t start_ns, const std::string& version,
                  const std::string& revision);

// Stores a benchmark's measurements as each finishes (its checkpoint()), one transaction each,
// so a process its launcher stops (mpirun's SIGTERM to every rank, then SIGKILL a second later;
// srun's after KillWait) or a lost node keeps all it finished. A write that fails stops the
// benchmark (all ranks at the next measurement) and is thrown by finish().
class BenchStore {
 public:
  BenchStore(std::string db, int64_t start_ns, std::string version, std::string revision);
  BenchStore(const BenchStore&) = delete;
  BenchStore& operator=(const BenchStore&) = delete;

  // For the benchmark's options; it refers to this object, which must outlive the benchmark.
  bench::Checkpoint checkpoint();
  // After the benchmark: the failed write, if one failed; otherwise the run's id in this
  // rank's store (nothing when it wrote none).
  std::optional<int64_t> finish() const;
  // The uuid of the run stored; empty when none was.
  const std::string& uuid() const { return run_.uuid; }

 private:
  void add(const bench::Finished&);

  std::string db_, version_, revision_;
  int64_t start_ns_ = 0;
  bool started_ = false;
  std::optional<db::Store> store_;
  db::Run run_;
  std::optional<int64_t> run_id_;
  std::exception_ptr error_;
};

}  // namespace shardcost::cli
