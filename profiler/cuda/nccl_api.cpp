#include "cuda/nccl_api.h"

#include <fmt/format.h>

#include "shardcost/error.h"

namespace shardcost::bench::cuda {

void check_nccl(ncclResult_t rc, const char* call, int line) {
  // Communicators here are blocking: ncclInProgress (a non-blocking communicator's "not yet")
  // is not success.
  if (rc == ncclSuccess) return;
  throw Error(fmt::format("{} failed at profiler/cuda/nccl_api.cpp:{}: {}", call, line,
                          ncclGetErrorString(rc)));
}

Comm::~Comm() {
  if (c_) ncclCommDestroy(c_);
}

void Comm::abort() {
  if (c_) ncclCommAbort(c_);
  c_ = nullptr;
}

std::vector<Comm> init_all(const std::vector<int>& devices) {
  std::vector<ncclComm_t> raw(devices.size());
  SC_NCCL(ncclCommInitAll(raw.data(), static_cast<int>(devices.size()), devices.data()));
  std::vector<Comm> out;
  for (auto c : raw) out.emplace_back(c);
  return out;
}

ncclUniqueId unique_id() {
  ncclUniqueId id;
  SC_NCCL(ncclGetUniqueId(&id));
  return id;
}

Comm init_rank(const ncclUniqueId& id, int ranks, int rank) {
  ncclComm_t c = nullptr;
  SC_NCCL(ncclCommInitRank(&c, ranks, id, rank));
  return Comm(c);
}

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  return fmt::format("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

ncclDataType_t nccl_type(const std::string& d) {
  if (d == "float") return ncclFloat32;
  if (d == "half") return ncclFloat16;
  if (d == "bfloat16") return ncclBfloat16;
  if (d == "double") return ncclFloat64;
  if (d == "int32") return ncclInt32;
  throw InputError(fmt::format(
      "--dtype {} is not available with --backend nccl; use float, half, bfloat16, double or int32",
      d));
}

size_t nccl_type_size(const std::string& d) {
  if (d == "half" || d == "bfloat16") return 2;
  return d == "double" ? 8 : 4;
}

ncclRedOp_t nccl_op(const std::string& r) {
  if (r == "sum") return ncclSum;
  if (r == "prod") return ncclProd;
  if (r == "max") return ncclMax;
  if (r == "min") return ncclMin;
  throw InputError(fmt::format("--redop {} is unknown; use sum, prod, max or min", r));
}

void group_start() {
  SC_NCCL(ncclGroupStart());
}
void group_end() {
  SC_NCCL(ncclGroupEnd());
}

void enqueue(const std::string& op, const void* send, void* recv, int64_t send_count,
             int64_t recv_count, const std::string& dtype, const std::string& redop, int root,
             int rank, int ranks, ncclComm_t comm, cudaStream_t s) {
  const ncclDataType_t t = nccl_type(dtype);
  const auto sc = static_cast<size_t>(send_count), rc = static_cast<size_t>(recv_count);
  if (op == "all_reduce")
    SC_NCCL(ncclAllReduce(send, recv, sc, t, nccl_op(redop), comm, s));
  else if (op == "all_gather")
    SC_NCCL(ncclAllGather(send, recv, sc, t, comm, s));
  else if (op == "reduce_scatter")
    SC_NCCL(ncclReduceScatter(send, recv, rc, t, nccl_op(redop), comm, s));
  else if (op == "broadcast")
    SC_NCCL(ncclBroadcast(send, recv, sc, t, root, comm, s));
  else if (op == "reduce")
    SC_NCCL(ncclReduce(send, recv, sc, t, nccl_op(redop), root, comm, s));
  else if (op == "all_to_all") {
    // nccl-tests' alltoall: grouped sends and receives of one share per peer.
    const size_t per = sc / static_cast<size_t>(ranks), bytes = per * nccl_type_size(dtype);
    SC_NCCL(ncclGroupStart());
    for (int p = 0; p < ranks; ++p) {
      SC_NCCL(ncclSend(static_cast<const char*>(send) + p * bytes, per, t, p, comm, s));
      SC_NCCL(ncclRecv(static_cast<char*>(recv) + p * bytes, per, t, p, comm, s));
    }
    SC_NCCL(ncclGroupEnd());
  } else {
    SC_NCCL(ncclGroupStart());
    SC_NCCL(ncclSend(send, sc, t, (rank + 1) % ranks, comm, s));
    SC_NCCL(ncclRecv(recv, rc, t, (rank - 1 + ranks) % ranks, comm, s));
    SC_NCCL(ncclGroupEnd());
  }
}

}  // namespace shardcost::bench::cuda
