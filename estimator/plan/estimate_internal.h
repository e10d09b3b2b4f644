#pragma once
// The pricing path's entry for searches: estimate a strategy from a graph already built, so a
// search that visits thousands of strategies with the same splits builds each graph once.
#include <array>
#include <functional>
#include <optional>
#include <string>

#include "shardcost/estimator.h"
#include "stages.h"

namespace shardcost {

// Graphs by the keys a producer's graph may depend on (tp, cp, ep, sp, mbs and the attention
// kernel; never pp, dp, the schedule, recomputation or ZeRO): a few recent ones.
class GraphCache {
 public:
  const Graph& get(const Workload&, const Strategy&, AttentionKernel);

 private:
  struct Key {
    int tp = 0, cp = 0, ep = 0, etp = 0, mbs = 0;
    unsigned modules = 0;
    bool sp = false;
    AttentionKernel kernel = AttentionKernel::flash;
    CpKind cp_kind = CpKind::ring;
    std::optional<DType> precision;
    bool operator==(const Key&) const;
  };
  struct Entry {
    Key key;
    Graph graph;
    bool filled = false;
  };
  std::array<Entry, 4> entries_;
  size_t next_ = 0;
};

// On one node group under 1F1B with a pipeline: the layers per stage that make the slowest
// stage's seconds per micro-batch least (ScheduleInputs::balanced_layers), as Megatron's
// pipeline layouts and account_for_embedding/loss_in_pipeline_split place them, found while
// the plan is priced (no block priced twice). `layers` is left empty otherwise, where that is
// the default split, or where `worth` (given the plan's mean and slowest stage seconds per
// micro-batch and its step) says no.
struct StageBalance {
  std::function<bool(double mean_s, double pace_s, double step_s)> worth;
  std::vector<int> layers;
};

// A plan priced stage by stage (a mixed cluster's), judged on memory before its time: each
// stage's need and capacity (its most loaded replica's, against that replica's device).
// False stops the estimate there, unpriced: not feasible, its step time infinite.
using MemoryGate =
    std::function<bool(const std::vector<double>& need, const std::vector<double>& capacity)>;

// A strategy that passed check_strategy, with its graph and stage layout.
// placed: where each replica sits (needed on a mixed cluster; one group needs none).
// balance: where set, the balanced layers per stage as well (StageBalance).
// gate: where set, a plan priced stage by stage is priced only if it lets it (MemoryGate).
Estimate estimate_graph(const Workload&, const Graph&, const Cluster&, const Strategy&,
                        const StageLayout&, const EstimateOptions&,
                        const std::vector<ReplicaPlacement>* placed = nullptr,
                        StageBalance* balance = nullptr, const MemoryGate* gate = nullptr);

// The strategy with its precision resolved for the cluster's device (the preset's default
// where it names none), and under recompute=selective without recompute_modules the preset's
// modules; throws InputError when the device has no peak for the precision.
Strategy with_precision(const Strategy&, const Software&, const Cluster&);

// The strategy with every stage at one tensor-parallel degree: a replica of degree tp (no
// stage_tp; sequence parallelism where it has ranks to split over).
Strategy at_degree(const Strategy&, int tp);

// check_strategy without the GPU count: the rules of one tensor-parallel degree of a plan
// whose replicas differ in it.
std::optional<std::string> check_strategy_shape(const Workload&, const Cluster&, const Strategy&);

// Why per-stage layers do not fit the workload and strategy, or nullopt.
std::optional<std::string> check_stage_layers(const Workload&, const Strategy&,
                                              const std::vector<int>& layers);

}  // namespace shardcost
