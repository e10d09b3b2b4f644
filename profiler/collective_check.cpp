#include "collective_check.h"

#include <fmt/format.h>

#include <algorithm>

#include "shardcost/error.h"

namespace shardcost::bench {
namespace {

double reduced(std::string_view redop, int ranks, int64_t i) {
  double acc = input_value(redop, 0, i);
  for (int r = 1; r < ranks; ++r) {
    const double v = input_value(redop, r, i);
    if (redop == "sum")
      acc += v;
    else if (redop == "prod")
      acc *= v;
    else if (redop == "max")
      acc = std::max(acc, v);
    else
      acc = std::min(acc, v);
  }
  return acc;
}

}  // namespace

CollectiveLayout collective_layout(std::string_view op, int64_t bytes, int64_t type_size,
                                   int ranks) {
  if (bytes < type_size)
    throw InputError(fmt::format("size {} bytes is smaller than one element ({} bytes); raise -b",
                                 bytes, type_size));
  CollectiveLayout l;
  const int64_t count = bytes / type_size;
  if (op == "all_gather") {
    l.send_count = std::max<int64_t>(1, count / ranks);
    l.recv_count = l.send_count * ranks;
    l.elements = l.recv_count;
  } else if (op == "reduce_scatter") {
    l.recv_count = std::max<int64_t>(1, count / ranks);
    l.send_count = l.recv_count * ranks;
    l.elements = l.send_count;
  } else if (op == "all_to_all") {
    l.send_count = l.recv_count = std::max<int64_t>(1, count / ranks) * ranks;
    l.elements = l.send_count;
  } else {
    l.send_count = l.recv_count = l.elements = count;
  }
  l.bytes = l.elements * type_size;
  return l;
}

double input_value(std::string_view redop, int rank, int64_t i) {
  if (redop == "prod") return (rank < 4 && (rank + i) % 2 == 0) ? 2 : 1;  // products stay <= 16
  if (redop == "sum") return static_cast<double>((rank + i) % 4 + 1);     // sums stay <= 4*ranks
  return static_cast<double>((rank * 3 + i) % 7);
}

std::optional<double> expected_value(std::string_view op, std::string_view redop, int ranks,
                                     int rank, int root, int64_t i, const CollectiveLayout& l) {
  if (op == "all_reduce") return reduced(redop, ranks, i);
  if (op == "reduce") {
    if (rank != root) return std::nullopt;
    return reduced(redop, ranks, i);
  }
  if (op == "broadcast") return input_value(redop, root, i);
  if (op == "all_gather") {
    const int64_t per = l.send_count;
    return input_value(redop, static_cast<int>(i / per), i % per);
  }
  if (op == "reduce_scatter") return reduced(redop, ranks, rank * l.recv_count + i);
  if (op == "all_to_all") {
    const int64_t per = l.send_count / ranks;
    const int from = static_cast<int>(i / per);
    return input_value(redop, from, rank * per + i % per);
  }
  if (op == "send_recv") return input_value(redop, (rank - 1 + ranks) % ranks, i);
  throw InputError(fmt::format("unknown collective '{}'", op));
}

InPlaceOffsets in_place_offsets(std::string_view op, int rank, const CollectiveLayout& l,
                                int64_t type_size) {
  if (op == "all_gather") return {rank * l.send_count * type_size, 0};
  if (op == "reduce_scatter") return {0, rank * l.recv_count * type_size};
  return {0, 0};
}

int rank_device(int local_rank, int local_size, int visible_gpus) {
  if (visible_gpus < 1) throw InputError("no CUDA device visible to this rank");
  if (visible_gpus == 1) return 0;
  if (local_size > visible_gpus)
    throw InputError(fmt::format(
        "{} ranks on this node but {} visible GPUs: NCCL needs a GPU per rank; launch at most {} "
        "ranks per node (mpirun --npernode {}, srun --ntasks-per-node {})",
        local_size, visible_gpus, visible_gpus, visible_gpus, visible_gpus));
  return local_rank;
}

}  // namespace shardcost::bench
