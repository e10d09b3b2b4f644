// The public API's overloads for the built-in transformer: a Model becomes its workload here
// and takes the one path every workload takes. Nothing below this layer knows Model.
#include "shardcost/estimator.h"
#include "shardcost/varlen.h"

namespace shardcost {

Estimate estimate(const Model& m, const Cluster& c, const Strategy& s, const EstimateOptions& opt) {
  return estimate(*transformer_workload(m), c, plan_of(s), opt);
}

std::optional<std::string> check_strategy(const Model& m, const Cluster& c, const Strategy& s) {
  return check_strategy(*transformer_workload(m), c, s);
}

RankResult rank(const Model& m, const Cluster& c, const RankOptions& opt) {
  return rank(*transformer_workload(m), c, opt);
}

VarlenRank rank_varlen(const Model& m, const Cluster& c, const RankOptions& opt,
                       const VarlenOptions& o) {
  return rank_varlen(*transformer_workload(m), c, opt, o);
}

VarlenEstimate estimate_varlen(const Model& m, const Cluster& c, const Strategy& s,
                               const VarlenOptions& o, const EstimateOptions& opt) {
  return estimate_varlen(*transformer_workload(m), c, s, o, opt);
}

}  // namespace shardcost
