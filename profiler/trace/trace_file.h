#pragma once
// The per-process files the injection library writes and `shardcost trace` reads back.
// Append-only chunks, each complete on its own, so a process killed mid-run leaves a file whose
// every finished chunk is readable:
//   header: "SCTRACE1", u32 format version, u32 pid, u32 host length, host bytes
//   chunk:  u32 type, u32 payload bytes, payload
// Integers are little-endian in the writer's native layout (the file never leaves the host
// that wrote it before `shardcost trace` folds it into the store).
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace shardcost::trace::file {

inline constexpr std::string_view kMagic = "SCTRACE1";
inline constexpr uint32_t kVersion = 2;  // 2: host ranges (NVTX)
inline constexpr uint32_t kNoDevice = 0xffffffffu;

enum class RawKind : uint8_t {
  kernel = 0,
  memcpy = 1,
  memset = 2,
  sync = 3,
  runtime = 4,
  range = 5
};

// One activity, CUPTI-free. runtime and range (an NVTX range the program opened and closed):
// stream holds the CPU thread id and device is kNoDevice.
struct RawEvent {
  RawKind kind = RawKind::kernel;
  uint8_t pad[3] = {};
  uint32_t device = kNoDevice;  // sync records name a context only: resolved via contexts
  uint32_t context = 0;
  uint32_t stream = 0;
  uint32_t correlation = 0;
  uint32_t name = 0;  // per-process name id
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t bytes = 0;
  int32_t grid[3] = {}, block[3] = {};
};
static_assert(std::is_trivially_copyable_v<RawEvent> && sizeof(RawEvent) == 72);

struct RawDevice {
  uint32_t id = 0;
  uint32_t cc_major = 0, cc_minor = 0;
  uint32_t sms = 0;
  uint32_t core_clock_khz = 0;
  uint64_t memory_bytes = 0;
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-..."
  std::string name;
};

// What one parse of CUPTI buffers adds to a file.
struct Batch {
  uint32_t first_new_name = 0;         // id of new_names[0]
  std::vector<std::string> new_names;  // interned since the previous batch
  std::vector<RawEvent> events;
  std::vector<RawDevice> devices;
  std::vector<std::pair<uint32_t, uint32_t>> contexts;  // context id -> device id
  uint64_t dropped = 0;
  std::vector<std::string> warnings;
  bool empty() const {
    return new_names.empty() && events.empty() && devices.empty() && contexts.empty() &&
           dropped == 0 && warnings.empty();
  }
};

std::string encode_header(uint32_t pid, std::string_view host);
// Appends the chunks of a batch to out.
void encode(const Batch&, std::string& out);

struct Contents {
  uint32_t pid = 0;
  std::string host;
  std::vector<std::string> names;
  std::vector<RawEvent> events;
  std::vector<RawDevice> devices;
  std::vector<std::pair<uint32_t, uint32_t>> contexts;
  uint64_t dropped = 0;
  std::vector<std::string> warnings;
  bool truncated = false;  // the last chunk was cut short (process killed while writing)
};

// Throws InputError naming `source` when the bytes are not a trace file.
Contents decode(std::string_view bytes, std::string_view source);

}  // namespace shardcost::trace::file
