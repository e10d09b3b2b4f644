#pragma once
// shardcost profiler: measures the machine it runs on.
#include <string>

namespace shardcost {

struct HostInfo {
  std::string hostname;
  std::string cpu_model;
  int logical_cpus = 0;
  double memory_bytes = 0;
  std::string cuda_build;  // "CUDA 13.0" or "built without CUDA"
};

HostInfo host_info();

}  // namespace shardcost
