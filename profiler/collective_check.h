#pragma once
// Buffer layout and expected results of collectives, shared by the MPI and NCCL backends.
// Inputs are small integers, so sums, products and extremes are exact in every data type.
#include <cstdint>
#include <optional>
#include <string_view>

namespace shardcost::bench {

struct CollectiveLayout {
  int64_t send_count = 0;  // elements in each rank's send buffer
  int64_t recv_count = 0;  // elements in each rank's receive buffer
  int64_t bytes = 0;       // nccl-tests' size column
  int64_t elements = 0;    // nccl-tests' count column
};
// nccl-tests' sizes: all_gather's size is the gathered output, reduce_scatter's and
// alltoall's the whole input; the per-rank share rounds down to whole elements (at least 1).
CollectiveLayout collective_layout(std::string_view op, int64_t bytes, int64_t type_size,
                                   int ranks);

// In place, one buffer holds both sides; where in it (bytes) each rank's send and receive
// pointers go, as NCCL documents: all_gather sends from recvbuff + rank * sendcount (its slot of
// the gathered output), reduce_scatter receives at sendbuff + rank * recvcount; the others
// (all_reduce, broadcast, reduce, alltoall) pass the same pointer for both.
struct InPlaceOffsets {
  int64_t send = 0, recv = 0;
};
InPlaceOffsets in_place_offsets(std::string_view op, int rank, const CollectiveLayout&,
                                int64_t type_size);

// What rank puts at index i of its send buffer.
double input_value(std::string_view redop, int rank, int64_t i);
// What rank must find at index i of its receive buffer, or nullopt where nothing is defined
// (reduce on a rank that is not the root).
std::optional<double> expected_value(std::string_view op, std::string_view redop, int ranks,
                                     int rank, int root, int64_t i, const CollectiveLayout&);

// The GPU a rank of a multi-process run drives: its local rank among the ranks of its node.
// One visible GPU means the launcher gave each rank its own (CUDA_VISIBLE_DEVICES per task):
// GPU 0. More ranks on a node than GPUs is an InputError (NCCL needs a GPU per rank).
int rank_device(int local_rank, int local_size, int visible_gpus);

}  // namespace shardcost::bench
