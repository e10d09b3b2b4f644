#include "activity_parser.h"

#include <cstdio>
#include <cstring>

namespace shardcost::trace {
namespace {

const char* copy_kind_name(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return "memcpy HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return "memcpy AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return "memcpy AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
      return "memcpy AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "memcpy DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "memcpy PtoP";
    default:
      return "memcpy";
  }
}

const char* sync_name(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return "event synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return "stream wait event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return "stream synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return "context synchronize";
    default:
      return "synchronize";
  }
}

std::string uuid_text(const CUuuid& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", b[i]);
    s += hex;
  }
  return s;
}

file::RawEvent event(file::RawKind kind, uint64_t start, uint64_t end, uint32_t correlation) {
  file::RawEvent e;
  e.kind = kind;
  e.start_ns = start;
  e.end_ns = end;
  e.correlation = correlation;
  return e;
}

}  // namespace

size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(KernelRecord);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(MemcpyRecord);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return sizeof(PeerMemcpyRecord);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(MemsetRecord);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return sizeof(SyncRecord);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return sizeof(ApiRecord);
    case CUPTI_ACTIVITY_KIND_DEVICE:
      return sizeof(DeviceRecord);
    case CUPTI_ACTIVITY_KIND_CONTEXT:
      return sizeof(ContextRecord);
    case CUPTI_ACTIVITY_KIND_MARKER:
      return sizeof(MarkerRecord);
    default:
      return 0;
  }
}

CUpti_Activity* PackedWalker::next(uint8_t* buffer, size_t valid_bytes,
                                   CUpti_Activity* current) const {
  size_t at = 0;
  if (current) {
    const size_t size = record_size(current->kind);
    if (size == 0) return nullptr;
    at = static_cast<size_t>(reinterpret_cast<uint8_t*>(current) - buffer) + (size + 7) / 8 * 8;
  }
  if (at + sizeof(CUpti_Activity) > valid_bytes) return nullptr;
  auto* r = reinterpret_cast<CUpti_Activity*>(buffer + at);
  const size_t size = record_size(r->kind);
  if (size == 0 || at + size > valid_bytes) return nullptr;
  return r;
}

uint32_t ActivityParser::intern(const std::string& name, file::Batch& batch) {
  auto [it, inserted] = ids_.try_emplace(name, static_cast<uint32_t>(names_.size()));
  if (inserted) {
    if (batch.new_names.empty()) batch.first_new_name = it->second;
    names_.push_back(name);
    batch.new_names.push_back(name);
  }
  return it->second;
}

uint32_t ActivityParser::intern(const char* name, file::Batch& batch) {
  if (!name) name = "(unnamed kernel)";
  auto hit = by_pointer_.find(name);
  if (hit != by_pointer_.end() && names_[hit->second] == name) return hit->second;
  const uint32_t id = intern(std::string(name), batch);
  by_pointer_[name] = id;
  return id;
}

void ActivityParser::on_kernel(const KernelRecord& r, file::Batch& b) {
  auto e = event(file::RawKind::kernel, r.start, r.end, r.correlationId);
  e.device = r.deviceId, e.context = r.contextId, e.stream = r.streamId;
  e.name = intern(r.name, b);
  e.grid[0] = r.gridX, e.grid[1] = r.gridY, e.grid[2] = r.gridZ;
  e.block[0] = r.blockX, e.block[1] = r.blockY, e.block[2] = r.blockZ;
  b.events.push_back(e);
}

void ActivityParser::on_memcpy(const MemcpyRecord& r, file::Batch& b) {
  auto e = event(file::RawKind::memcpy, r.start, r.end, r.correlationId);
  e.device = r.deviceId, e.context = r.contextId, e.stream = r.streamId, e.bytes = r.bytes;
  e.name = intern(copy_kind_name(r.copyKind), b);
  b.events.push_back(e);
}

void ActivityParser::on_peer_memcpy(const PeerMemcpyRecord& r, file::Batch& b) {
  auto e = event(file::RawKind::memcpy, r.start, r.end, r.correlationId);
  e.device = r.deviceId, e.context = r.contextId, e.stream = r.streamId, e.bytes = r.bytes;
  e.name = intern(copy_kind_name(r.copyKind), b);
  b.events.push_back(e);
}

void ActivityParser::on_memset(const MemsetRecord& r, file::Batch& b) {
  auto e = event(file::RawKind::memset, r.start, r.end, r.correlationId);
  e.device = r.deviceId, e.context = r.contextId, e.stream = r.streamId, e.bytes = r.bytes;
  e.name = intern("memset", b);
  b.events.push_back(e);
}

void ActivityParser::on_sync(const SyncRecord& r, file::Batch& b) {
  auto e = event(file::RawKind::sync, r.start, r.end, r.correlationId);
  e.context = r.contextId, e.stream = r.streamId;  // no device id: resolved via the context
  e.name = intern(sync_name(r.type), b);
  b.events.push_back(e);
}

void ActivityParser::on_api(const ApiRecord& r, file::Batch& b) {
  auto e = event(file::RawKind::runtime, r.start, r.end, r.correlationId);
  e.stream = r.threadId;
  const auto cbid = static_cast<uint32_t>(r.cbid);
  auto it = api_names_.find(cbid);
  if (it == api_names_.end()) {
    const std::string name = namer_ ? namer_(cbid) : "runtime api " + std::to_string(cbid);
    it = api_names_.emplace(cbid, intern(name, b)).first;
  }
  e.name = it->second;
  b.events.push_back(e);
}

void ActivityParser::on_device(const DeviceRecord& r, file::Batch& b) {
  file::RawDevice d;
  d.id = r.id;
  d.cc_major = r.computeCapabilityMajor;
  d.cc_minor = r.computeCapabilityMinor;
  d.sms = r.numMultiprocessors;
  d.core_clock_khz = r.coreClockRate;
  d.memory_bytes = r.globalMemorySize;
  d.uuid = uuid_text(r.uuid);
  d.name = r.name ? r.name : "";
  b.devices.push_back(std::move(d));
}

// A range's start names it; its end (same id, no name) closes it into one event. Instantaneous
// marks and ranges that never end are not events.
void ActivityParser::on_marker(const MarkerRecord& r, file::Batch& b) {
  // A program that opens ranges and never closes them must not grow this without bound.
  constexpr size_t kMaxOpen = 1 << 16;
  const uint32_t thread =
      r.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || r.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS
          ? r.objectId.pt.threadId
          : 0;
  if (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    if (r.timestamp == 0 || (open_.size() >= kMaxOpen && !open_.count(r.id))) return;
    open_[r.id] = {r.timestamp, intern(std::string(r.name ? r.name : "(unnamed range)"), b),
                   thread};
  } else if (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    const auto it = open_.find(r.id);
    if (it == open_.end()) return;  // its start came before tracing began
    if (r.timestamp >= it->second.start_ns) {
      auto e = event(file::RawKind::range, it->second.start_ns, r.timestamp, 0);
      e.stream = it->second.thread;
      e.name = it->second.name;
      b.events.push_back(e);
    }
    open_.erase(it);
  }
}

size_t ActivityParser::parse(const RecordWalker& walker, uint8_t* buffer, size_t valid_bytes,
                             file::Batch& b) {
  size_t n = 0;
  b.events.reserve(b.events.size() + valid_bytes / sizeof(KernelRecord) + 1);
  for (CUpti_Activity* r = walker.next(buffer, valid_bytes, nullptr); r;
       r = walker.next(buffer, valid_bytes, r), ++n) {
    switch (r->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        on_kernel(*reinterpret_cast<const KernelRecord*>(r), b);
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        on_memcpy(*reinterpret_cast<const MemcpyRecord*>(r), b);
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY2:
        on_peer_memcpy(*reinterpret_cast<const PeerMemcpyRecord*>(r), b);
        break;
      case CUPTI_ACTIVITY_KIND_MEMSET:
        on_memset(*reinterpret_cast<const MemsetRecord*>(r), b);
        break;
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        on_sync(*reinterpret_cast<const SyncRecord*>(r), b);
        break;
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER:
        on_api(*reinterpret_cast<const ApiRecord*>(r), b);
        break;
      case CUPTI_ACTIVITY_KIND_DEVICE:
        on_device(*reinterpret_cast<const DeviceRecord*>(r), b);
        break;
      case CUPTI_ACTIVITY_KIND_MARKER:
        on_marker(*reinterpret_cast<const MarkerRecord*>(r), b);
        break;
      case CUPTI_ACTIVITY_KIND_CONTEXT: {
        const auto& c = *reinterpret_cast<const ContextRecord*>(r);
        b.contexts.emplace_back(c.contextId, c.deviceId);
        break;
      }
      default:
        ++skipped_;
        break;
    }
  }
  return n;
}

}  // namespace shardcost::trace
