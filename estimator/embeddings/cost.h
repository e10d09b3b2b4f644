#pragma once
// What one embedding shard costs on one GPU, and the communication a plan needs, from the
// cluster's devices and links (docs/embeddings.md has every formula).
#include <algorithm>
#include <optional>
#include <string>

#include "costs/pricing.h"
#include "shardcost/embeddings.h"

namespace shardcost::embeddings {

// The GPUs a node group of the cluster gives one sharding (a table-row-wise shard's width).
inline int gpus_per_node(const Cluster& c) {
  return std::min(c.groups.front().gpus_per_node, c.total_gpus());
}

class CostModel {
 public:
  CostModel(const Cluster&, const ShardingOptions&, const EstimateOptions&);

  int gpus() const { return gpus_; }
  int per_node() const { return per_node_; }
  double budget_bytes() const { return budget_; }

  // Expected distinct rows among `lookups` draws from the table's rows (uniform, or Zipf).
  static double unique_rows(const EmbeddingTable&, double lookups);
  // Forward lookup, backward and sparse update of a shard: `row_share` of the table's rows,
  // `dim` of its columns, serving `samples` samples' lookups into those rows and writing
  // `outputs` pooled rows.
  double compute_s(const EmbeddingTable&, double row_share, int dim, double lookups,
                   double outputs) const;
  // A GPU's fused lookup kernels' launches, forward and backward, once whatever it holds: the
  // learned lookup model's fixed parts where the store has one, else two launch gaps.
  double launch_s() const { return launch_s_; }
  // What priced the shards' lookups: "learned" or "extrapolated" (a model fitted on bench
  // embedding's rows), "measured read bandwidth" (the store's), or "catalog".
  const std::string& lookup_source() const { return lookup_source_; }
  // The optimizer's state per row of `dim` columns.
  double state_bytes(int dim) const;
  // Weights and optimizer state of `rows` rows of `dim` columns.
  double memory_bytes(const EmbeddingTable&, double rows, int dim) const;
  // A forward all-to-all whose busiest GPU sends `bytes` and the backward's of its
  // gradients; the index all-to-all whose busiest GPU receives `index_bytes`.
  double all_to_all_s(double bytes, double index_bytes) const;
  // Row-wise partial sums reduce-scattered (forward) and their gradients all-gathered
  // (backward) among `ranks` GPUs `stride` apart; data-parallel gradients all-reduced.
  double row_wise_s(double bytes, int ranks) const;
  double data_parallel_s(double bytes) const;
  // One GEMM on a GPU of the cluster (the dense part's layers).
  double gemm_s(const GemmShape& s, DType t) const { return pricer_.gemm(s, t).seconds; }
  // The forward and backward all-to-alls' seconds per byte the busiest GPU sends, at sizes
  // where bandwidth rules (for weighing placements).
  double a2a_s_per_byte() const { return a2a_s_per_byte_; }
  int batch() const { return batch_; }

 private:
  // The learned price of a shard's forward and backward less their fixed parts, or nothing.
  std::optional<double> learned_s(const EmbeddingTable&, double rows, int dim, double lookups,
                                  double outputs) const;
  Pricer pricer_;
  int gpus_, per_node_, batch_;
  double budget_;
  const CostSource* source_ = nullptr;
  Device device_;
  std::string optimizer_name_;
  double launch_s_ = 0;
  mutable std::string lookup_source_ = "catalog";
  double a2a_s_per_byte_ = 0;
};

// The dense MLPs data-parallel over the cluster's GPUs: each layer i -> o on batch/W rows is a
// forward GEMM (rows x o x i), a data-gradient GEMM (rows x i x o) and a weight-gradient GEMM
// (i x o x rows), plus its bias and activation passes' bytes at the streaming rate; the
// gradients (weights and biases, fp32) are all-reduced over all GPUs once a step.
DenseCost dense_cost(const CostModel&, const ShardingOptions&);

}  // namespace shardcost::embeddings
