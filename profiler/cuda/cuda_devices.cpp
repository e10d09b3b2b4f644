// shardcost devices, CUDA part: every visible GPU, or why there is none.
#include <fmt/format.h>

#include "backends.h"
#include "cuda/cublaslt_api.h"
#include "cuda/cuda_api.h"
#include "cuda/nccl_api.h"

namespace shardcost::bench {

void cuda_list_devices(DeviceList& list) {
  list.runtime_version = cuda::runtime_version();
  list.driver_version = cuda::driver_version();
  list.nccl_version = cuda::nccl_version();
  list.gpu_status = cuda::why_no_device();
  if (!list.gpu_status.empty()) return;
  for (int i = 0; i < cuda::device_count(); ++i) {
    const cuda::DeviceProps p = cuda::props(i);
    list.gpus.push_back({i, p.name, p.uuid, p.pci_bus, p.compute_capability, p.memory_bytes, p.sms,
                         p.sm_clock_khz, p.memory_clock_khz});
  }
}

std::string cuda_library_versions() {
  return fmt::format("cuda={}; driver={}; nccl={}; {}", cuda::runtime_version(),
                     cuda::driver_version(), cuda::nccl_version(), cuda::LtMatmul::version());
}

}  // namespace shardcost::bench
