// The embedding shard's cost: bytes moved through HBM by the lookup (pooled gather), the
// backward (gradient scatter) and the sparse optimizer step, at the device's streaming rate;
// rows read in 32-byte sectors.
#include "cost.h"

#include <algorithm>
#include <cmath>

namespace shardcost::embeddings {
namespace {

double sectors(double bytes) {
  return std::ceil(bytes / 32) * 32;
}

}  // namespace

CostModel::CostModel(const Cluster& c, const ShardingOptions& o, const EstimateOptions& e)
    : pricer_(c.groups.front().device, c.groups.front().intra_node, c.network_of(0),
              c.groups.front().gpus_per_node, e.costs),
      gpus_(c.total_gpus()),
      per_node_(std::min(c.groups.front().gpus_per_node, c.total_gpus())),
      batch_(o.batch),
      optimizer_(o.optimizer),
      budget_(c.groups.front().device.memory_bytes * o.memory_fraction) {
  if (gpus_ > 1) {
    const double big = 1 << 30;
    a2a_s_per_byte_ = (all_to_all_s(2 * big, 0) - all_to_all_s(big, 0)) / big;
  }
}

double CostModel::unique_rows(const EmbeddingTable& t, double lookups) {
  const double R = static_cast<double>(t.rows);
  if (lookups <= 0) return 0;
  if (t.zipf <= 0) return R * -std::expm1(-lookups / R);
  // Ranks in log-spaced buckets: each of a bucket's n rows drawn with probability p, seen at
  // least once with probability 1 - exp(-lookups p).
  constexpr int kBuckets = 96;
  double norm = 0;
  std::vector<std::pair<double, double>> buckets;  // (rows, weight of one)
  double lo = 1;
  for (int b = 0; b < kBuckets && lo <= R; ++b) {
    const double hi =
        std::min(R + 1, std::max(lo + 1, std::floor(std::pow(R + 1, (b + 1.0) / kBuckets))));
    const double n = hi - lo, mid = std::sqrt(lo * (hi - 1 > lo ? hi - 1 : lo));
    const double w = std::pow(mid, -t.zipf);
    buckets.emplace_back(n, w);
    norm += n * w;
    lo = hi;
  }
  double unique = 0;
  for (const auto& [n, w] : buckets) unique += n * -std::expm1(-lookups * w / norm);
  return std::min(unique, R);
}

double CostModel::compute_s(const EmbeddingTable& t, double row_share, int dim, double lookups,
                            double outputs) const {
  const double row = dim * static_cast<double>(t.dtype_bytes);
  const double unique = unique_rows(t, lookups / row_share) * row_share;
  // Each touched row's optimizer state is read and written.
  const double state = 2 * state_bytes(dim);
  const double forward = lookups * sectors(row) + outputs * row;
  const double backward =
      outputs * row + lookups * sectors(dim * 4.0) + unique * (2 * sectors(row) + state);
  // At the streaming read rate (the store's measured one where it has it). The catalog's
  // price holds a kernel's launch gap; TorchRec's fused kernel serves every table of a GPU in
  // one forward and one backward launch, so the plan adds those once per GPU (launch_s).
  const Priced p = pricer_.memory("read", forward + backward);
  return p.origin == CostOrigin::catalog ? std::max(0.0, p.seconds - GemmModel::kKernelGap_s)
                                         : p.seconds;
}

double CostModel::launch_s() {
  return 2 * GemmModel::kKernelGap_s;
}

double CostModel::state_bytes(int dim) const {
  // Row-wise Adagrad one fp32 per row, Adam two fp32 moments per column, SGD none.
  return optimizer_ == EmbeddingOptimizer::rowwise_adagrad ? 4.0
         : optimizer_ == EmbeddingOptimizer::adam          ? 2 * 4.0 * dim
                                                           : 0.0;
}

double CostModel::memory_bytes(const EmbeddingTable& t, double rows, int dim) const {
  return rows * (dim * static_cast<double>(t.dtype_bytes) + state_bytes(dim));
}

double CostModel::all_to_all_s(double bytes, double index_bytes) const {
  if (gpus_ < 2) return 0;
  const GroupPlacement all{gpus_, 1};
  double s = 0;
  if (bytes > 0) s += 2 * pricer_.collective(CollectiveOp::all_to_all, bytes, all).seconds;
  if (index_bytes > 0) s += pricer_.collective(CollectiveOp::all_to_all, index_bytes, all).seconds;
  return s;
}

double CostModel::row_wise_s(double bytes, int ranks) const {
  if (ranks < 2 || bytes <= 0) return 0;
  const GroupPlacement group{ranks, 1};
  return pricer_.collective(CollectiveOp::reduce_scatter, bytes, group).seconds +
         pricer_.collective(CollectiveOp::all_gather, bytes, group).seconds;
}

double CostModel::data_parallel_s(double bytes) const {
  if (gpus_ < 2 || bytes <= 0) return 0;
  return pricer_.collective(CollectiveOp::all_reduce, bytes, {gpus_, 1}).seconds;
}

}  // namespace shardcost::embeddings
