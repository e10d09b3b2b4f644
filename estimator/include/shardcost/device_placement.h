#pragma once
#include "shardcost/progress.h"
// Optimal placement of an operator graph's operators onto a cluster's devices for pipelined
// training (Tarnawski et al., "Efficient Algorithms for Device Placement of DNN Graph
// Operators", NeurIPS'20): every device runs one stage, a set of operators closed under
// their producers once the earlier stages' are added (an ideal of the graph, less the one
// before); the slowest stage sets the pace. A dynamic program over the graph's ideals and the
// devices of each kind used so far finds the placement that minimises the slowest stage,
// exactly; a graph with too many ideals is placed by an integer program (GLPK) and over
// prefixes of its file order, the better kept (said so). docs/seed-planners.md.
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
  // More ideals than this: the integer program (GLPK) places the graph, within
  // program_time_s, beside the dynamic program over prefixes of the file's order; the better
  // stands. solver = program: the integer program alone, whatever the ideals.
  int64_t max_ideals = 20000;
  enum class Solver { automatic, program } solver = Solver::automatic;
  double program_time_s = 10;
  Progress progress;  // stage counts placed, said as the program goes
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
  bool exact = true;   // false: not proven optimal (the note says why)
  std::string note;    // how it was placed where not by the program over every ideal
  int64_t ideals = 0;  // the graph's ideals (or prefixes) the program ran over (0: none)
  int programs = 0;    // integer programs solved (one per stage count not bounded out)
  double stage_s = 0;  // the slowest stage's time per micro-batch
  double step_s = 0;   // (micro-batches + stages - 1) x stage_s (1F1B's pace)
  int micro_batches = 0;
  std::vector<PlacedStage> stages;
  double elapsed_s = 0;
};

// Throws InputError for an empty graph or cluster, or more than 64 devices.
DevicePlacement place_graph(const OpGraph&, const Cluster&, const PlacementOptions&);

}  // namespace shardcost
