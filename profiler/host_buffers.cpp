#include "host_buffers.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

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

}  // namespace shardcost::bench
