#pragma once
// What a request names, read: the preset with its overrides, the model at its sequence length,
// the cluster with its network trace, and the stores' costs.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shardcost/request.h"

namespace shardcost::requests {

// The preset a request runs under when it names none; options that do not apply refused.
PlanRequest resolved(const PlanRequest&);
Software software_of(const PlanRequest&);
// The request's data loader; refused where it is not priced (variable-length data).
std::optional<DataLoading> loading_of(const PlanRequest&);
Model model_of(const PlanRequest&);
Cluster cluster_of(const PlanRequest&);

// The request's cost sources: `given` where the caller read them (not owned), else read from
// the request's store, their warnings into `warnings`.
std::shared_ptr<const CostSources> costs_for(const PlanRequest&, const CostSources* given,
                                             std::vector<std::string>* warnings);

// An operator graph's estimate and rank (.onnx): keys "NAME,gbs=N[,precision=T]" or, for rank,
// "[precision=T]" with the request's gbs.
GraphReport estimate_graph(const PlanRequest&, const Cluster&, const CostSource*);
GraphReport rank_graph(const PlanRequest&, const Cluster&, const CostSource*);

}  // namespace shardcost::requests
