#pragma once
// The only door to NCCL: communicators are RAII (destroyed, or aborted when a collective hangs).
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <string>
#include <vector>

namespace shardcost::bench::cuda {

void check_nccl(ncclResult_t rc, const char* call, int line);
#define SC_NCCL(call) ::shardcost::bench::cuda::check_nccl((call), #call, __LINE__)

class Comm {
 public:
  Comm() = default;
  explicit Comm(ncclComm_t c) : c_(c) {}
  Comm(Comm&& o) noexcept : c_(o.c_) { o.c_ = nullptr; }
  Comm& operator=(Comm&&) = delete;
  ~Comm();
  ncclComm_t get() const { return c_; }
  void abort();  // for a hung collective: ncclCommAbort, then nothing left to destroy

 private:
  ncclComm_t c_ = nullptr;
};

std::vector<Comm> init_all(const std::vector<int>& devices);  // one process, many GPUs
ncclUniqueId unique_id();
Comm init_rank(const ncclUniqueId& id, int ranks, int rank);
std::string nccl_version();
ncclDataType_t nccl_type(const std::string& dtype);  // float half bfloat16 double int32
size_t nccl_type_size(const std::string& dtype);
ncclRedOp_t nccl_op(const std::string& redop);

void group_start();
void group_end();
// One rank's part of a collective named as nccl-tests names it.
void enqueue(const std::string& op, const void* send, void* recv, int64_t send_count,
             int64_t recv_count, const std::string& dtype, const std::string& redop, int root,
             int rank, int ranks, ncclComm_t, cudaStream_t);

}  // namespace shardcost::bench::cuda
