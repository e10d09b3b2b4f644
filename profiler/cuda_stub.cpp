// The CUDA backend of a build without the CUDA toolkit: every entry says so in one line.
#include "backends.h"
#include "shardcost/error.h"

namespace shardcost::bench {
namespace {
[[noreturn]] void no_cuda() {
  throw Error(
      "no CUDA device: this shardcost was built without CUDA (the toolkit was not found at "
      "configure time); install the CUDA toolkit and rebuild, or use --device cpu / --backend mpi");
}
}  // namespace

GemmReport cuda_bench_gemm(const GemmOptions&, const Progress&) {
  no_cuda();
}
MemoryReport cuda_bench_memory(const MemoryOptions&, const Progress&) {
  no_cuda();
}
EmbeddingReport cuda_bench_embedding(const EmbeddingOptions&, const Progress&) {
  no_cuda();
}
CollectiveReport nccl_bench_collective(const CollectiveOptions&, const Progress&) {
  no_cuda();
}
db::DeviceRecord cuda_device_record(int) {
  no_cuda();
}
void cuda_list_devices(DeviceList& list) {
  list.gpu_status = "built without CUDA";
}
std::string cuda_library_versions() {
  return "";
}

}  // namespace shardcost::bench
