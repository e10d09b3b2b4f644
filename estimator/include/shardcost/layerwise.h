#pragma once
// Layer-wise parallelism of operator graphs (Jia et al., ICML'18; Kahira et al., HPDC'21;
// Oyama et al., TPDS'21): every operator gets its own split of the batch (sample), of its
// first spatial dimension (spatial, with halo exchange between neighbours), of its output
// channels (filter) and of its input channels (channel); tensors are redistributed between
// operators whose splits differ. A dynamic program over the graph (node and edge
// elimination) finds the fastest split per operator under the memory limit; the uniform
// strategies (one split for every operator, and pipelines of data-parallel stages) are priced
// by the same model. Formulas: docs/operator-graphs.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shardcost/costs.h"
#include "shardcost/data_loading.h"
#include "shardcost/hardware.h"
#include "shardcost/opgraph.h"

namespace shardcost {

// How one operator runs on a group of devices: the product of the splits times `replicas`
// (copies computing the same shard) is the group's size.
struct LayerSplit {
  int sample = 1, spatial = 1, filter = 1, channel = 1, replicas = 1;
  int devices() const { return sample * spatial * filter * channel * replicas; }
  auto operator<=>(const LayerSplit&) const = default;
};
std::string to_string(const LayerSplit&);  // "s4 h2", "f8", "replicated" ...

struct LayerwiseOptions {
  int global_batch = 0;  // samples per step
  DType precision = DType::fp32;
  // precision fp32: matmuls and convolutions on TF32 tensor cores where the device has them
  // (the stack's defaults: Software::tf32_matmul, tf32_conv).
  bool tf32_matmul = false, tf32_conv = false;
  // fp32 3x3 convolutions of stride 1 may run as Winograd F(2x2, 3x3) where cuDNN chooses the
  // algorithm (Software::conv_winograd).
  bool conv_winograd = true;
  // The host's seconds per kernel it launches, forward and backward (Software's; 0 under CUDA
  // graphs): a pass whose kernels run shorter than their launches waits for the host.
  double host_forward_launch_s = 8e-6, host_backward_launch_s = 4e-6;
  // The optimizer's state per parameter besides the weight and its gradient: momentum SGD (4
  // bytes, the CNN papers') or Adam (8).
  std::string optimizer = "sgd";
  double epoch_samples = 0;  // 0: no epoch time (ImageNet-1k: 1,281,167)
  // Gradient all-reduces behind the backward in buckets of this many bytes (PyTorch DDP's
  // 25 MB), or one all-reduce of every gradient after it (ChainerMN's pure_nccl).
  bool overlap_grad_reduce = true;
  double grad_bucket_bytes = 25.0 * 1024 * 1024;
  const CostSource* costs = nullptr;
  // Which uniform strategies to price besides the layer-wise search ("data", "spatial",
  // "filter", "channel", "pipeline", "data+spatial", "data+filter", "data+channel",
  // "data+pipeline"); empty: all.
  std::vector<std::string> uniform;
  bool search = true;  // false: the uniform strategies only
  // What a device holds beyond the modelled tensors (Software::memory_fixed_bytes and
  // memory_fragmentation for the stack's preset; none by default).
  double memory_fixed_bytes = 0, memory_fragmentation = 0;
  // Each device's data loader: a plan waits for loading beyond its compute (empty: free).
  std::optional<DataLoading> loading;
};

// One operator's split in a plan and what it costs per step.
struct LayerCost {
  std::string node, op;
  LayerSplit split;
  double compute_s = 0;  // forward and backward kernels
  double comm_s = 0;     // its own communication: halos, filter all-reduces, statistics
  double sync_s = 0;     // its weight gradients' all-reduce (before overlap)
  double reshard_s = 0;  // redistributing its inputs from their producers' splits
  double memory_bytes = 0;
};

struct GraphPlan {
  std::string strategy;  // "layer-wise", "data", "data+filter", "pipeline", ...
  bool feasible = false;
  std::string reason;  // why not feasible
  double step_s = 0;
  double compute_s = 0, comm_s = 0, reshard_s = 0;
  double sync_exposed_s = 0;  // gradient all-reduce left after overlapping the backward
  double host_launch_s = 0;   // the GPU waiting for the host to launch its kernels
  double bubble_s = 0;        // pipelines: fill and drain
  double memory_bytes = 0;    // the most loaded device
  double capacity_bytes = 0;
  int stages = 1, micro_batches = 1;
  double samples_per_s = 0;
  double epoch_s = 0;
  std::vector<LayerCost> layers;
  // With LayerwiseOptions::loading: the input pipeline against the step (step_s includes the
  // wait); the loaders are the first operator's sample split.
  std::optional<InputBudget> input;
};

struct LayerwiseResult {
  std::string model;
  int devices = 0;
  GraphPlan best;                  // the layer-wise search's plan (never slower than a uniform one)
  std::vector<GraphPlan> uniform;  // fastest first; infeasible ones last
  int64_t configurations = 0;      // operator splits priced
  double elapsed_s = 0;
};

// Throws InputError for a mixed cluster, a batch that no split divides, or an unknown uniform
// strategy name.
LayerwiseResult plan_layerwise(const OpGraph&, const Cluster&, const LayerwiseOptions&);

// One uniform strategy by name (as LayerwiseOptions::uniform lists them).
GraphPlan price_uniform(const OpGraph&, const Cluster&, const LayerwiseOptions&,
                        std::string_view strategy);

// Prices a given split per node (views included, ignored): the search's evaluator, for tests.
GraphPlan price_splits(const OpGraph&, const Cluster&, const LayerwiseOptions&,
                       const std::vector<LayerSplit>& per_node, std::string strategy);

}  // namespace shardcost
