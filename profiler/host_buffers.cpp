#include "host_buffers.h"

#include <fmt/format.h>
#include <sys/resource.h>
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

namespace {

// A number from the first line of a file, or -1 ("max", missing, unreadable).
int64_t read_number(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word)) return -1;
  try {
    size_t used = 0;
    const long long v = std::stoll(word, &used);
    return used == word.size() && v >= 0 ? v : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

// What this process may still map under its own limits: ulimit -v (RLIMIT_AS) less what it
// has mapped, and its cgroup's memory limit less what the cgroup uses (v2, then v1).
int64_t process_room_bytes() {
  int64_t room = INT64_MAX / 2;
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    int64_t mapped = 0;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmSize:", 0) == 0) mapped = std::atoll(line.c_str() + 7) * 1024;
    room = std::min(room, std::max<int64_t>(0, static_cast<int64_t>(as.rlim_cur) - mapped));
  }
  const std::pair<const char*, const char*> cgroups[] = {
      {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
      {"/sys/fs/cgroup/memory/memory.limit_in_bytes",
       "/sys/fs/cgroup/memory/memory.usage_in_bytes"}};
  for (const auto& [limit_path, usage_path] : cgroups) {
    const int64_t limit = read_number(limit_path), usage = read_number(usage_path);
    if (limit < 0 || limit >= (int64_t{1} << 60)) continue;  // "max" or v1's "unlimited"
    room = std::min(room, std::max<int64_t>(0, limit - std::max<int64_t>(usage, 0)));
    break;
  }
  return room;
}

}  // namespace

int64_t host_available_bytes() {
  int64_t available = INT64_MAX / 2;
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") {
      available = kib * 1024;
      break;
    }
  return std::min(available, process_room_bytes());
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
