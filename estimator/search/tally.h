#pragma once
// What every search shares: counting candidates and why they were rejected, pruning by memory
// before pricing, and keeping the best K in an order that never depends on enumeration.
// rank uses it; the later planners (layer-wise, table sharding, job scheduling) are meant to.
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "plan/estimate_internal.h"
#include "plan/memory.h"

namespace shardcost {

class SearchTally {
 public:
  // memory_slack: a need up to capacity x (1 + slack) fits (RankOptions::near_limit_fits).
  SearchTally(int top, Objective objective, double memory_slack = 0)
      : top_(top), objective_(objective), slack_(memory_slack) {}

  // What a device of this capacity can take under the slack.
  double usable(double capacity_bytes) const { return capacity_bytes * (1 + slack_); }
  bool fits(double need_bytes, double capacity_bytes) const {
    return need_bytes <= usable(capacity_bytes);
  }
  bool fits(const Estimate& e) const {
    return fits(e.memory_per_gpu_bytes, e.memory_capacity_bytes);
  }

  void reject(const std::string& reason, int64_t count = 1) {
    result_.evaluated += count;
    result_.rejected[reason] += count;
  }

  // Prices one strategy that passed check_strategy: memory first (it needs no pricing, and
  // most of a large space fails it), then the estimate, kept when it is among the best.
  // Whether it fits; where it does and `balance` is given, the layers per stage that balance
  // its stages too (StageBalance), found while it is priced.
  bool consider(const Workload& w, const Graph& graph, const Cluster& c, const Strategy& s,
                const StageLayout& layout, const EstimateOptions& opt,
                StageBalance* balance = nullptr) {
    if (!fits(peak_stage_memory(graph, s, opt.software, layout).total(),
              c.groups.front().device.memory_bytes)) {
      reject("exceeds device memory");
      return false;
    }
    ++result_.evaluated;
    ++result_.feasible;
    Estimate e = estimate_graph(w, graph, c, s, layout, opt, nullptr, balance);
    keep(std::move(e));
    return true;
  }

  void keep(Estimate e) {
    if (static_cast<int>(best_.size()) < top_ || better(e, best_.back())) {
      auto pos =
          std::upper_bound(best_.begin(), best_.end(), e,
                           [&](const Estimate& a, const Estimate& b) { return better(a, b); });
      best_.insert(pos, std::move(e));
      if (static_cast<int>(best_.size()) > top_) best_.pop_back();
    }
  }

  // Whether a plan of this step time could be among the best (objective time).
  bool could_keep(double step_s) const {
    return static_cast<int>(best_.size()) < top_ || step_s < best_.back().step_time_s;
  }

  // Time (or memory) first; ties go to less memory (or time), then to the smaller strategy.
  bool better(const Estimate& a, const Estimate& b) const {
    const double ta = a.step_time_s, tb = b.step_time_s;
    const double ma = a.memory_per_gpu_bytes, mb = b.memory_per_gpu_bytes;
    const auto key = [](const Strategy& s) {
      return std::make_tuple(s.tp, s.pp, s.dp, s.cp, s.ep, s.mbs, s.vpp,
                             static_cast<int>(s.recompute), s.sp, s.zero, s.zero_layers);
    };
    if (objective_ == Objective::memory) {
      if (ma != mb) return ma < mb;
      if (ta != tb) return ta < tb;
    } else {
      if (ta != tb) return ta < tb;
      if (ma != mb) return ma < mb;
    }
    return key(a.strategy) < key(b.strategy);
  }

  // The best, sorted (totals only, as the search priced them), and the counts.
  const std::vector<Estimate>& best() const { return best_; }
  RankResult& result() { return result_; }

 private:
  int top_;
  Objective objective_;
  double slack_;
  RankResult result_;
  std::vector<Estimate> best_;
};

}  // namespace shardcost
