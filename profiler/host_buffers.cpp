#include "host_buffers.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <string>

#include "shardcost/error.h"

namespace shardcost::bench {

void FreeDeleter::operator()(void* p) const {
  std::free(p);
}

HostBuffer allocate_host(int64_t bytes) {
  const auto rounded = static_cast<size_t>((std::max<int64_t>(bytes, 1) + 4095) / 4096 * 4096);
  void* p = std::aligned_alloc(4096, rounded);
  if (!p)
    throw Error(
        fmt::format("cannot allocate {} bytes of host memory for the benchmark; use "
                    "smaller sizes (-e)",
                    bytes));
  return HostBuffer(static_cast<std::byte*>(p));
}

int64_t last_level_cache_bytes() {
#ifdef _SC_LEVEL3_CACHE_SIZE
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return l3;
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0) return l2;
#endif
  return 32LL << 20;
}

int rotation_sets(int64_t set_bytes) {
  const int64_t cover = 2 * last_level_cache_bytes();
  const int64_t cap = 2LL << 30;
  int64_t sets = (cover + set_bytes - 1) / std::max<int64_t>(set_bytes, 1);
  sets = std::min<int64_t>(sets, std::max<int64_t>(1, cap / std::max<int64_t>(set_bytes, 1)));
  return static_cast<int>(std::clamp<int64_t>(sets, 1, 16));
}

int64_t host_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return INT64_MAX / 2;
}

void check_room(int64_t needed, int64_t available, const std::string& what, const char* where) {
  if (needed <= available) return;
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  throw InputError(fmt::format(
      "{} needs {:.1f} GiB of {} memory; {:.1f} GiB are free; use "
      "smaller sizes",
      what, static_cast<double>(needed) / kGiB, where, static_cast<double>(available) / kGiB));
}

}  // namespace shardcost::bench
