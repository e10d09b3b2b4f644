// The embedding shard's cost: bytes moved through HBM by the lookup (pooled gather), the
// backward (gradient scatter) and the sparse optimizer step, at the device's streaming rate;
// rows read in 32-byte sectors.
#include "cost.h"

#include <algorithm>
#include <cmath>

#include "costs/embedding_bytes.h"

namespace shardcost::embeddings {

CostModel::CostModel(const Cluster& c, const ShardingOptions& o, const EstimateOptions& e)
    : pricer_(c.groups.front().device, c.groups.front().intra_node, c.network_of(0),
              c.groups.front().domain_gpus(), e.costs),
      gpus_(c.total_gpus()),
      per_node_(gpus_per_node(c)),
      batch_(o.batch),
      budget_(c.groups.front().device.memory_bytes * o.memory_fraction),
      source_(e.costs),
      device_(c.groups.front().device),
      optimizer_name_(o.optimizer == EmbeddingOptimizer::rowwise_adagrad ? "rowwise_adagrad"
                      : o.optimizer == EmbeddingOptimizer::adam          ? "adam"
                                                                         : "sgd"),
      launch_s_(2 * GemmModel::kKernelGap_s) {
  // A learned lookup model's fixed parts stand for the fused kernels' launches.
  if (source_) {
    EmbeddingPass probe{false, 4, optimizer_name_, 1024, 64, 1, 1024, 0, {}};
    const auto forward = source_->embedding(device_, probe);
    probe.backward = true;
    const auto backward = source_->embedding(device_, probe);
    if (forward && backward) launch_s_ = forward->fixed_s + backward->fixed_s;
  }
  if (gpus_ > 1) {
    const double big = 1 << 30;
    a2a_s_per_byte_ = (all_to_all_s(2 * big, 0) - all_to_all_s(big, 0)) / big;
  }
}

double CostModel::unique_rows(const EmbeddingTable& t, double lookups) {
  return embedding_bytes::unique_rows(static_cast<double>(t.rows), t.zipf, lookups, t.histogram);
}

std::optional<double> CostModel::learned_s(const EmbeddingTable& t, double rows, int dim,
                                           double lookups, double outputs) const {
  if (!source_ || outputs <= 0) return std::nullopt;
  EmbeddingPass pass{
      false,   t.dtype_bytes, optimizer_name_, rows, static_cast<double>(dim), lookups / outputs,
      outputs, t.zipf,        t.histogram};
  const auto forward = source_->embedding(device_, pass);
  pass.backward = true;
  const auto backward = source_->embedding(device_, pass);
  if (!forward || !backward) return std::nullopt;
  lookup_source_ = std::string(to_string(forward->priced.origin));
  return std::max(0.0, forward->priced.seconds - forward->fixed_s) +
         std::max(0.0, backward->priced.seconds - backward->fixed_s);
}

double CostModel::compute_s(const EmbeddingTable& t, double row_share, int dim, double lookups,
                            double outputs) const {
  // A model fitted on bench embedding's measurements prices the shard's passes first.
  if (auto s = learned_s(t, static_cast<double>(t.rows) * row_share, dim, lookups, outputs))
    return *s;
  const double row = dim * static_cast<double>(t.dtype_bytes);
  const double unique = unique_rows(t, lookups / row_share) * row_share;
  // Each touched row's optimizer state is read and written.
  const double state = 2 * state_bytes(dim);
  using embedding_bytes::sectors;
  const double forward = lookups * sectors(row) + outputs * row;
  const double backward =
      outputs * row + lookups * sectors(dim * 4.0) + unique * (2 * sectors(row) + state);
  // At the streaming read rate (the store's measured one where it has it). The catalog's
  // price holds a kernel's launch gap; TorchRec's fused kernel serves every table of a GPU in
  // one forward and one backward launch, so the plan adds those once per GPU (launch_s).
  const Priced p = pricer_.memory("read", forward + backward);
  if (p.origin != CostOrigin::catalog) lookup_source_ = "store read bandwidth";
  return p.origin == CostOrigin::catalog ? std::max(0.0, p.seconds - GemmModel::kKernelGap_s)
                                         : p.seconds;
}

double CostModel::state_bytes(int dim) const {
  return embedding_bytes::state_bytes(optimizer_name_, dim);
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
