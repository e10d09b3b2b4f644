#pragma once
// CUPTI activity records -> trace file batches. Uses the record layouts of the headers being
// built against (typedefs below) and only fields every recent version of a record shares;
// never calls into libcupti: walking a buffer is the RecordWalker's job, so tests and the
// benchmark run the real parser over buffers they build in memory (as Kineto's tests do).
#include <cupti_activity.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace_file.h"

namespace shardcost::trace {

// The record versions of the installed headers (CUDA 13: Kernel10, Memcpy6, ...). When CUPTI
// bumps a version, change it here; the parser reads start/end/device/context/stream/
// correlation/name/grid/block, which every version since CUDA 11 keeps.
using KernelRecord = CUpti_ActivityKernel10;
using MemcpyRecord = CUpti_ActivityMemcpy6;
using PeerMemcpyRecord = CUpti_ActivityMemcpyPtoP4;
using MemsetRecord = CUpti_ActivityMemset4;
using SyncRecord = CUpti_ActivitySynchronization2;
using ApiRecord = CUpti_ActivityAPI;
using DeviceRecord = CUpti_ActivityDevice5;
using ContextRecord = CUpti_ActivityContext3;
using MarkerRecord = CUpti_ActivityMarker2;  // NVTX: a range's start and end share an id

class RecordWalker {
 public:
  virtual ~RecordWalker() = default;
  // The record after `current` (nullptr: the first), or nullptr at the end of the buffer.
  virtual CUpti_Activity* next(uint8_t* buffer, size_t valid_bytes,
                               CUpti_Activity* current) const = 0;
};

// Walks buffers built by PackedBuffer: records back to back, each at an 8-byte boundary, the
// size given by its kind. Not CUPTI's own layout (that one is CUPTI's business).
class PackedWalker final : public RecordWalker {
 public:
  CUpti_Activity* next(uint8_t* buffer, size_t valid_bytes, CUpti_Activity* current) const override;
};

// sizeof the record of a kind this parser reads; 0 for others.
size_t record_size(CUpti_ActivityKind kind);

class PackedBuffer {
 public:
  template <class Record>
  void add(const Record& r) {
    const size_t at = bytes_.size();
    bytes_.resize(at + ((sizeof r + 7) / 8) * 8, 0);
    std::memcpy(bytes_.data() + at, &r, sizeof r);
  }
  uint8_t* data() { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }
  void clear() { bytes_.clear(); }

 private:
  std::vector<uint8_t> bytes_;
};

// Runtime API callback ids -> names ("cudaLaunchKernel"); libcupti knows them, tests do not.
using CallbackNamer = std::string (*)(uint32_t cbid);

class ActivityParser {
 public:
  explicit ActivityParser(CallbackNamer namer = nullptr) : namer_(namer) {}
  // Appends the records of one buffer to batch; returns how many records it read.
  size_t parse(const RecordWalker&, uint8_t* buffer, size_t valid_bytes, file::Batch& batch);
  // Records of kinds the parser does not read (counted, not an error).
  uint64_t skipped() const { return skipped_; }
  // NVTX ranges started and not (yet) ended: an end may come in a later buffer.
  size_t open_ranges() const { return open_.size(); }

 private:
  uint32_t intern(const char* name, file::Batch& batch);
  uint32_t intern(const std::string& name, file::Batch& batch);
  void on_kernel(const KernelRecord&, file::Batch&);
  void on_memcpy(const MemcpyRecord&, file::Batch&);
  void on_peer_memcpy(const PeerMemcpyRecord&, file::Batch&);
  void on_memset(const MemsetRecord&, file::Batch&);
  void on_sync(const SyncRecord&, file::Batch&);
  void on_api(const ApiRecord&, file::Batch&);
  void on_device(const DeviceRecord&, file::Batch&);
  void on_marker(const MarkerRecord&, file::Batch&);

  CallbackNamer namer_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> ids_;
  // CUPTI shares one name pointer among all records of a kernel: a pointer hit (checked
  // against the text) skips hashing the string, which dominates at millions of records.
  std::unordered_map<const char*, uint32_t> by_pointer_;
  std::unordered_map<uint32_t, uint32_t> api_names_;
  uint64_t skipped_ = 0;
  struct OpenRange {
    uint64_t start_ns;
    uint32_t name, thread;
  };
  std::unordered_map<uint32_t, OpenRange> open_;  // marker id -> its start
};

}  // namespace shardcost::trace
