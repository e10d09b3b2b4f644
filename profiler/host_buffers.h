#pragma once
// Host memory for benchmarks: page-aligned, owned, and sized against the last-level cache.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace shardcost::bench {

struct FreeDeleter {
  void operator()(void* p) const;
};
using HostBuffer = std::unique_ptr<std::byte[], FreeDeleter>;
HostBuffer allocate_host(int64_t bytes);  // 4 KiB aligned; throws with the size on failure

int64_t last_level_cache_bytes();  // 32 MiB when the system does not say
// How many copies of a working set of set_bytes to rotate through so that each iteration
// finds its operands out of cache: enough to cover twice the last-level cache, at most 16,
// and never more than 2 GiB in all.
int rotation_sets(int64_t set_bytes);

// The host memory available now to this process: MemAvailable of /proc/meminfo, less where
// the process's own limits leave less (ulimit -v less what it maps, its cgroup's memory.max
// less its usage); a very large number when nothing says.
int64_t host_available_bytes();
// A benchmark's buffers checked before they are allocated: an InputError with the numbers when
// `needed` bytes exceed `available` ("GEMM 65536x65536x65536 needs 48.0 GiB of device memory;
// 79.1 GiB are free").
void check_room(int64_t needed, int64_t available, const std::string& what, const char* where);

}  // namespace shardcost::bench
