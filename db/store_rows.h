#pragma once
// Row-level helpers shared by the Store's files: the prepared inserts of one run's rows, and
// reading runs and devices back.
#include <string_view>
#include <unordered_map>

#include "shardcost/db.h"
#include "sqlite.h"

namespace shardcost::db {

inline constexpr std::string_view kRunSelect =
    "SELECT id, uuid, tool, tool_version, git_revision, host, command_line, "
    "coalesce(start_time_ns, 0), coalesce(end_time_ns, 0), status, source, recorded_by, "
    "library_versions FROM run";
Run read_run(const Statement&);

inline constexpr std::string_view kDeviceSelect =
    "SELECT id, name, uuid, host, coalesce(device_index, -1), pci_bus, compute_capability, "
    "coalesce(memory_bytes, 0), coalesce(sm_clock_khz, 0), coalesce(memory_clock_khz, 0), "
    "coalesce(sms, 0), driver_version, cuda_version FROM device";
DeviceRecord read_device(const Statement&);

// The same physical device gets the same row in every file: by UUID, else host/index/name.
std::string device_fingerprint(const DeviceRecord&);
int64_t upsert_device(const Connection&, const DeviceRecord&);

// A measured run's row (schema 8), in the caller's transaction.
void write_measured_step(const Connection&, int64_t run_id, const MeasuredStepRecord&);

class RowWriter {
 public:
  RowWriter(const Connection&, int64_t run_id);
  void gemm(const GemmRecord&, int64_t device_id);
  void memory(const MemoryRecord&, int64_t device_id);
  void collective(const CollectiveRecord&, int64_t device_id);
  void embedding(const EmbeddingRecord&, int64_t device_id);
  // Up to kKernelChunk events in one multi-row INSERT: a 1,000,000-event trace is a second of
  // store time only when the per-statement overhead is shared. launch_ids: 0 = NULL.
  static constexpr size_t kKernelChunk = 64;
  void kernels(const KernelEvent* events, size_t n, const int64_t* device_ids,
               const int64_t* name_ids, const int64_t* launch_ids);
  // The id of name in the strings table, adding it when new.
  int64_t intern(std::string_view name);
  // The id of a known launch configuration in launch_config, adding it when new.
  int64_t launch(const LaunchConfig&);

 private:
  const Connection& c_;
  int64_t run_id_;
  Statement gemm_, memory_, collective_, embedding_, add_string_, find_string_, add_launch_,
      find_launch_;
  std::unordered_map<size_t, Statement> kernel_chunks_;  // rows per statement -> statement
  std::unordered_map<std::string, int64_t> strings_;
  struct LaunchHash {
    size_t operator()(const LaunchConfig& l) const;
  };
  std::unordered_map<LaunchConfig, int64_t, LaunchHash> launches_;
};

}  // namespace shardcost::db
