#include "placement.h"

#include <fmt/format.h>

#include <algorithm>

#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/plan.h"

namespace shardcost {

Placement placement(const Strategy& s) {
  Placement p;
  p.tp = {s.tp, 1};
  p.cp = {s.cp, s.tp};
  p.dp_cp = {s.dp * s.cp, s.tp};
  const int etp = s.expert_tp();
  p.etp = {etp, 1};
  p.ep = {s.ep, etp};
  p.expert_dp = {s.expert_dp(), etp * s.ep};
  p.pp_stride = s.tp * s.cp * s.dp;
  return p;
}

std::vector<ReplicaPlacement> place(const Plan& plan, const Cluster& c) {
  const Strategy& s = plan.strategy;
  // First global rank of each group, in the order the cluster lists them.
  std::vector<int> group_start;
  int total = 0;
  for (const auto& g : c.groups) {
    group_start.push_back(total);
    total += g.gpus();
  }
  // A replica's tensor-parallel degree: the plan file's, or the strategy's.
  auto tp_of = [&](int stage, int r) {
    return plan.stages.empty()
               ? s.tp_of_stage(stage)
               : plan.stages[static_cast<size_t>(stage)].replicas[static_cast<size_t>(r)].tp;
  };
  int64_t needed = 0;
  for (int stage = 0; stage < s.pp; ++stage)
    for (int r = 0; r < s.dp; ++r) needed += static_cast<int64_t>(tp_of(stage, r)) * s.cp;
  if (needed > total)
    throw InputError(fmt::format("the plan needs {} GPUs ({}) but the cluster has {}", needed,
                                 plan.stages.empty() ? "tp*cp*dp*pp" : "its replicas' tp*cp",
                                 total));
  auto group_of = [&](int rank) {
    int g = 0;
    while (g + 1 < static_cast<int>(group_start.size()) && group_start[g + 1] <= rank) ++g;
    return g;
  };
  std::vector<ReplicaPlacement> out;
  int next = 0;
  for (int stage = 0; stage < s.pp; ++stage) {
    for (int r = 0; r < s.dp; ++r) {
      ReplicaPlacement p;
      p.stage = stage;
      p.replica = r;
      p.tp = tp_of(stage, r);
      p.first_rank = next;
      p.ranks = p.tp * s.cp;
      next += p.ranks;
      p.group = group_of(p.first_rank);
      const int last_group = group_of(p.first_rank + p.ranks - 1);
      const auto& name = c.groups[static_cast<size_t>(p.group)].name;
      if (last_group != p.group)
        throw InputError(
            fmt::format("stage {} replica {}: ranks {}-{} span groups {} and {}; a "
                        "replica's tensor- and context-parallel ranks must sit in "
                        "one group",
                        stage, r, p.first_rank, p.first_rank + p.ranks - 1, name,
                        c.groups[static_cast<size_t>(last_group)].name));
      if (!plan.stages.empty()) {
        const auto& want =
            plan.stages[static_cast<size_t>(stage)].replicas[static_cast<size_t>(r)].group;
        if (want != name)
          throw InputError(
              fmt::format("stage {} replica {} names group '{}' but its ranks {}-{} "
                          "are in group '{}' (ranks are placed in order: tp, cp, "
                          "dp, then pp); list the replicas in rank order",
                          stage, r, want, p.first_rank, p.first_rank + p.ranks - 1, name));
      }
      out.push_back(p);
    }
  }
  return out;
}

Cluster plan_cluster(const Cluster& c, const Plan& plan) {
  if (plan.stages.empty()) return c;
  std::vector<std::pair<size_t, int>> take;  // (group, GPUs) in the order replicas name them
  for (const StagePlan& stage : plan.stages)
    for (const Replica& r : stage.replicas) {
      size_t g = 0;
      while (g < c.groups.size() && c.groups[g].name != r.group) ++g;
      if (g == c.groups.size()) return c;  // parse_plan_json has said so already
      auto it = std::find_if(take.begin(), take.end(), [&](const auto& t) { return t.first == g; });
      if (it == take.end()) it = take.insert(take.end(), {g, 0});
      it->second += r.tp * plan.strategy.cp;
    }
  bool whole = take.size() == c.groups.size();
  for (size_t i = 0; whole && i < take.size(); ++i)
    whole = take[i].first == i && take[i].second == c.groups[i].gpus();
  for (const auto& [g, gpus] : take)
    if (gpus > c.groups[g].gpus()) return c;  // place says how many it needs
  if (whole) return c;
  try {
    return cluster_part(c, take, "plan");
  } catch (const InputError&) {
    return c;  // not whole nodes of a group: estimate's own checks say what does not add up
  }
}

}  // namespace shardcost
