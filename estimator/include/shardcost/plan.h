#pragma once
// Plans: a strategy (the keys that hold for every stage) with each pipeline stage's layers and
// replicas. A strategy string is the plan whose stages split the layers by the default rule
// and whose replicas all have the strategy's tp. Plan file format (docs/architecture.md):
//   {"strategy": "mbs=1,gbs=64,recompute=selective,sp=true",
//    "stages": [{"layers": 12, "replicas": [{"group": "g0", "tp": 8}, ...]}, ...]}
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/hardware.h"
#include "shardcost/strategy.h"

namespace shardcost {

struct Replica {
  std::string group;  // the cluster group its ranks sit in
  int tp = 1;
};

struct StagePlan {
  int layers = 0;  // body units (transformer layers) of this stage
  std::vector<Replica> replicas;
};

struct Plan {
  Strategy strategy;              // pp = stages, dp = replicas per stage, tp = theirs
  std::vector<int> stage_layers;  // per stage; empty: the default split of the layers
  std::vector<StagePlan> stages;  // as a plan file gives them; empty for a strategy string
};

// The plan of a uniform strategy string: default layer split, every replica in rank order.
Plan plan_of(const Strategy&);

// Parses a plan file's text for a cluster of `gpus` GPUs and a model of `layers` body units;
// throws InputError naming the field and the fix.
Plan parse_plan_json(std::string_view json_text, std::string_view origin, const Cluster&,
                     int layers);
Plan load_plan(std::string_view path, const Cluster&, int layers);

// Layers of every pipeline stage under the default rule: equal shares, the middle stages
// taking the remainder first (the first and last also hold the embedding and the head).
std::vector<int> default_stage_layers(int layers, int pp);

// Where each replica of each stage sits: ranks in Megatron's order (tp innermost, then cp,
// dp, pp), so stage s, replica r holds the tp*cp ranks after those of every replica before
// it ([(s*dp + r) * tp*cp, +tp*cp) when every replica has the strategy's tp).
struct ReplicaPlacement {
  int stage = 0, replica = 0;
  int first_rank = 0, ranks = 0;
  int group = 0;  // index into Cluster::groups
  int tp = 1;     // its tensor-parallel degree
};
// Throws InputError when a replica's ranks do not lie in the group the plan names, or the
// plan needs more GPUs than the cluster has.
std::vector<ReplicaPlacement> place(const Plan&, const Cluster&);

// The part of the cluster a plan file's replicas run on: each group it names, in the order its
// replicas first name them, cut to the GPUs they take there (whole nodes, or part of one node);
// the groups it does not name left out. A plan that takes every GPU in the file's order gets
// the cluster as it is; one that takes more is refused by place.
Cluster plan_cluster(const Cluster&, const Plan&);

}  // namespace shardcost
