#pragma once
// The backends behind profiler.h's bench_* functions. The cuda/nccl ones exist in every build:
// without CUDA they throw one line saying so.
#include "shardcost/profiler.h"

namespace shardcost::bench {

GemmReport host_bench_gemm(const GemmOptions&, const Progress&);
MemoryReport host_bench_memory(const MemoryOptions&, const Progress&);
EmbeddingReport host_bench_embedding(const EmbeddingOptions&, const Progress&);
CollectiveReport mpi_bench_collective(const CollectiveOptions&, const Progress&);
P2pReport mpi_bench_p2p(const CollectiveOptions&, const Progress&);

GemmReport cuda_bench_gemm(const GemmOptions&, const Progress&);
MemoryReport cuda_bench_memory(const MemoryOptions&, const Progress&);
EmbeddingReport cuda_bench_embedding(const EmbeddingOptions&, const Progress&);
CollectiveReport nccl_bench_collective(const CollectiveOptions&, const Progress&);
// Fills gpus and versions, or gpu_status with why there are none.
void cuda_list_devices(DeviceList&);
// The GPU as a store device record; throws when there is none.
db::DeviceRecord cuda_device_record(int gpu);
std::string cuda_library_versions();  // "cuda=13.0 nccl=2.27.7", or empty

}  // namespace shardcost::bench
