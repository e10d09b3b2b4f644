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

class RowWriter {
 public:
  RowWriter(const Connection&, int64_t run_id);
  void gemm(const GemmRecord&, int64_t device_id);
  void memory(const MemoryRecord&, int64_t device_id);
  void collective(const CollectiveRecord&, int64_t device_id);
  void kernel(const KernelEvent&, int64_t device_id, int64_t name_id);
  // Up to kKernelChunk events in one multi-row INSERT: a 1,000,000-event trace is a second of
  // store time only when the per-statement overhead is shared.
  static constexpr size_t kKernelChunk = 64;
  void kernels(const KernelEvent* events, size_t n, const int64_t* device_ids, const int64_t* name_ids);
  // The id of name in the strings table, adding it when new.
  int64_t intern(std::string_view name);

 private:
  const Connection& c_;
  int64_t run_id_;
  Statement gemm_, memory_, collective_, kernel_, add_string_, find_string_;
  std::unordered_map<size_t, Statement> kernel_chunks_;  // rows per statement -> statement
  std::unordered_map<std::string, int64_t> strings_;
};

}  // namespace shardcost::db
