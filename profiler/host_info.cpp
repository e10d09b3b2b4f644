#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "shardcost/profiler.h"

namespace shardcost {

HostInfo host_info() {
  HostInfo h;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0) h.hostname = name;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) h.cpu_model = line.substr(colon + 2);
      break;
    }
  }
  h.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) h.memory_bytes = static_cast<double>(pages) * page_size;
#ifdef SHARDCOST_HAVE_CUDA
  h.cuda_build = "built with CUDA " SHARDCOST_CUDA_VERSION;
#else
  h.cuda_build = "built without CUDA";
#endif
  return h;
}

}  // namespace shardcost
