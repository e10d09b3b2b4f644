#pragma once
// Optimal placement of an operator graph's operators onto a cluster's devices for pipelined
// training (Tarnawski et al., "Efficient Algorithms for Device Placement of DNN Graph
// Operators", NeurIPS'20): every device runs one stage, a set of operators closed under
// their producers once the earlier stages' are added (an ideal of the graph, less the one
// before); the slowest stage sets the pace. A dynamic program over the graph's ideals and the
// devices of each kind used so far finds the placement that minimises the slowest stage,
// exactly; a graph with too many ideals is placed over prefixes of its file order instead
// (said so). docs/operator-graphs.md, "Device placement".
#include <cstdint>
#include <string>
#include <vector>

#include "shardcost/costs.h"
#include "shardcost/hardware.h"
#include "shardcost/opgraph.h"

namespace shardcost {

struct PlacementOptions {
  int micro_batch = 1;    // samples per micro-batch
  int micro_batches = 0;  // per step, whatever the stage count; 0: 4 x the devices
  DType precision = DType::fp32;
  std::string optimizer = "sgd";
  const CostSource* costs = nullptr;
  // More ideals than this: the placement runs over prefixes of the file's order.
  int64_t max_ideals = 20000;
};

struct PlacedStage {
  std::string group, device;  // the cluster group whose device runs it
  std::vector<std::string> operators;
  double compute_s = 0;  // forward and backward of one micro-batch
  double comm_s = 0;     // its activations in and out, and their gradients
  double memory_bytes = 0, capacity_bytes = 0;
  double seconds() const { return compute_s + comm_s; }
};

struct DevicePlacement {
  bool feasible = false;
  std::string reason;  // why nothing fits
  bool exact = true;   // false: placed over prefixes of the file's order
  std::string note;    // why not exact
  int64_t ideals = 0;  // the graph's ideals (or prefixes) the program ran over
  double stage_s = 0;  // the slowest stage's time per micro-batch
  double step_s = 0;   // (micro-batches + stages - 1) x stage_s (1F1B's pace)
  int micro_batches = 0;
  std::vector<PlacedStage> stages;
  double elapsed_s = 0;
};

// Throws InputError for an empty graph or cluster, or more than 64 devices.
DevicePlacement place_graph(const OpGraph&, const Cluster&, const PlacementOptions&);

}  // namespace shardcost
