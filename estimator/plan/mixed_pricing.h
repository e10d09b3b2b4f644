#pragma once
// A mixed cluster's pricing (or a plan's whose replicas differ in TP degree): each group's
// pricer, the links between groups, each degree's graph, and the StagePricing the schedule
// reads, built from a plan's placement. estimate and variable-length pricing share it.
#include <deque>
#include <string>
#include <vector>

#include "costs/pricing.h"
#include "placement.h"
#include "schedule.h"
#include "shardcost/estimator.h"

namespace shardcost {

// Pricers of a mixed cluster (each group's; a message between groups over the link between
// them), the graph, strategy and placement of each TP degree the plan's replicas have, and
// the StagePricing a plan's placement gives, with what the breakdown reports.
struct MixedPricing {
  MixedPricing(const Workload&, const Graph& base_graph, const Cluster&, const Strategy&,
               const Placement& base_place, const std::vector<ReplicaPlacement>& placed,
               bool tied_embeddings, const EstimateOptions&);
  MixedPricing(const MixedPricing&) = delete;
  MixedPricing& operator=(const MixedPricing&) = delete;

  struct Way {
    size_t group = 0;
    int tp = 1;
    bool operator==(const Way& o) const { return group == o.group && tp == o.tp; }
  };
  std::vector<Pricer> groups;
  std::deque<Fabric> fabrics;
  std::deque<Pricer> crossings;
  struct Degree {
    Strategy strategy;
    Graph graph;
    Placement place;
  };
  std::deque<Degree> degrees;  // beyond the strategy's own
  const Graph& graph;
  const Strategy& s;
  const Placement& place;
  StagePricing stages;
  std::vector<std::vector<Way>> ways;             // per stage, parallel to stages.replicas
  std::vector<std::vector<size_t>> stage_groups;  // per stage, its replicas' groups
  std::vector<std::string> links;

  // The strategy, graph and placement of replicas with `tp` ranks (built once per degree).
  ReplicaPricing unit(const Way&, const Workload&, AttentionKernel);
};

}  // namespace shardcost
