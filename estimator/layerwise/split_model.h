#pragma once
// The cost of one operator under one split, and of redistributing a tensor between two
// splits, on a group of devices of one kind (docs/operator-graphs.md).
#include <vector>

#include "costs/pricing.h"
#include "shardcost/layerwise.h"

namespace shardcost {

// What an operator's split costs per step (batch of the group), before overlap.
struct NodePrice {
  double forward_s = 0, backward_s = 0;  // kernels
  double comm_s = 0;                     // halos, filter all-reduces, norm statistics
  double sync_s = 0;                     // the weight gradients' all-reduce
  double grad_bytes = 0;                 // what that all-reduce moves per device
  double memory_bytes = 0;               // weights, gradients, optimizer state, what it keeps
  double kept_bytes = 0;                 // of memory_bytes, what it keeps for its backward
  // Its backward's gradients in flight, of its output and its input (plans add the largest
  // to what is still kept when it runs).
  double working_bytes = 0;
  int kernels_fwd = 0, kernels_bwd = 0;  // what the host launches for it, collectives too
  double total() const { return forward_s + backward_s + comm_s + sync_s; }
};

class SplitModel {
 public:
  // `devices` ranks with consecutive ranks on one node first; `batch` samples per step over
  // them.
  SplitModel(const OpGraph&, const NodeGroup&, const Fabric& network, const LayerwiseOptions&,
             int devices, int batch);

  int devices() const { return devices_; }
  int batch() const { return batch_; }
  const OpGraph& graph() const { return g_; }
  // The priced nodes (views left out) in graph order, and each one's producers among them
  // (through views).
  const std::vector<int>& priced() const { return priced_; }
  const std::vector<std::vector<int>>& producers() const { return producers_; }
  // The same by position in priced(): each priced node's producers' positions, once each.
  const std::vector<std::vector<size_t>>& producer_positions() const { return positions_; }
  // Whether a node reads the model's input (itself or through views).
  bool reads_input(int node) const { return reads_input_[static_cast<size_t>(node)]; }

  // Splits the search considers for a node: every sample x spatial x filter x channel
  // factorisation of the devices the node admits, and data splits with replicas.
  std::vector<LayerSplit> search_splits(int node) const;
  // Whether the node can run under the split (sizes divide and fit).
  bool admits(int node, const LayerSplit&) const;
  // The uniform strategies' split for a node: `want` where the node admits it, else the
  // nearest split it does admit (fewer spatial, filter or channel ways, the rest replicas).
  LayerSplit fit(int node, LayerSplit want) const;

  NodePrice node(int node, const LayerSplit&) const;
  // Forward and backward seconds to redistribute the tensor `producer` writes, split as `a`,
  // into the layout `consumer` reads it in under `b`.
  double edge(int producer, const LayerSplit& a, int consumer, const LayerSplit& b) const;

  double element_bytes() const { return e_; }
  const Pricer& pricer() const { return pricer_; }

 private:
  double split_k(const GemmShape&, DType) const;

  const OpGraph& g_;
  const NodeGroup& group_;
  Pricer pricer_;
  DType dtype_;
  DType conv_dtype_, matmul_dtype_;  // what the GEMMs of each run as (TF32 for fp32, or not)
  bool winograd_ = true;             // LayerwiseOptions::conv_winograd
  double e_ = 4;                     // bytes of one activation element
  double state_bytes_ = 12;          // per parameter: weight, gradient, optimizer state
  int devices_ = 1, batch_ = 1;
  std::vector<int> priced_;
  std::vector<std::vector<int>> producers_;     // by node index
  std::vector<bool> reads_input_;               // by node index
  std::vector<std::vector<size_t>> positions_;  // by position in priced_
};

}  // namespace shardcost
