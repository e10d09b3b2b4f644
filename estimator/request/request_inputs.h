#pragma once
// What a request names, read: the preset with its overrides, the model at its sequence length,
// the cluster with its network trace, and the stores' costs.
#include "shardcost/request.h"

namespace shardcost::requests {

// The preset a request runs under when it names none; options that do not apply refused.
PlanRequest resolved(const PlanRequest&);
Software software_of(const PlanRequest&);
Model model_of(const PlanRequest&);
Cluster cluster_of(const PlanRequest&);

// An operator graph's estimate and rank (.onnx): keys "NAME,gbs=N[,precision=T]" or, for rank,
// "[precision=T]" with the request's gbs; the report's cluster and warnings set.
GraphReport estimate_graph(const PlanRequest&, Cluster*, std::vector<std::string>* warnings);
GraphReport rank_graph(const PlanRequest&, Cluster*, std::vector<std::string>* warnings);

}  // namespace shardcost::requests
