// rank on variable-length data: the fixed-length search shortlists, sampled batches decide
// (docs/variable-length.md).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "group_order.h"
#include "shardcost/error.h"
#include "shardcost/varlen.h"

namespace shardcost {

VarlenRank rank_varlen(const Workload& w, const Cluster& c, const RankOptions& opt,
                       const VarlenOptions& o) {
  // Every shortlisted plan is priced on every batch: a bound keeps rank to seconds.
  if (o.batches > 1000)
    throw InputError(fmt::format(
        "rank samples at most 1000 batches per plan (--batches {}); estimate the plans it "
        "ranks with more",
        o.batches));
  const auto start = std::chrono::steady_clock::now();
  // Shortlist: the fixed-length search's best plans (memory checked at seq_len, which is what
  // a micro-batch of the same tokens per GPU needs).
  RankOptions fixed = opt;
  fixed.top = std::max(64, 8 * opt.top);
  fixed.estimate.breakdown = false;
  const RankResult shortlist = rank(w, c, fixed);
  VarlenRank out;
  out.fixed_evaluated = shortlist.evaluated;
  EstimateOptions eo = opt.estimate;
  eo.breakdown = true;
  for (const Estimate& e : shortlist.best) {
    if (!e.feasible) continue;
    // On a mixed cluster, in the order of groups the fixed-length search found it in.
    const Cluster ordered = reorder(c, e.group_order);
    Strategy s = e.strategy;
    s.max_tokens = static_cast<int>(s.mbs * w.tokens_per_sample() / s.cp);
    std::vector<Strategy> choices;
    for (Balance b : {Balance::none, Balance::tokens, Balance::cost}) {
      Strategy x = s;
      x.balance = b;
      choices.push_back(x);
      if (s.cp > 1) {
        Strategy u = x;
        u.cp_kind = CpKind::ulysses;
        choices.push_back(u);
        for (CpMode mode : {CpMode::dynamic, CpMode::flex}) {
          x.cp_mode = u.cp_mode = mode;
          choices.push_back(x);
          choices.push_back(u);
        }
      }
    }
    for (const Strategy& x : choices) {
      try {
        VarlenEstimate v = estimate_varlen(w, ordered, x, o, eo);
        v.estimate.group_order = e.group_order;
        ++out.evaluated;
        if (v.estimate.feasible) out.best.push_back(std::move(v));
      } catch (const InputError&) {
        // A choice this plan cannot take (a batch that does not divide, a sequence no CP size
        // holds): the others stand.
      }
    }
  }
  // Ordered as asked: by the mean step, or by memory (the step breaking ties).
  const bool by_memory = opt.objective == Objective::memory;
  std::stable_sort(
      out.best.begin(), out.best.end(),
      [by_memory](const VarlenEstimate& a, const VarlenEstimate& b) {
        if (by_memory && a.estimate.memory_per_gpu_bytes != b.estimate.memory_per_gpu_bytes)
          return a.estimate.memory_per_gpu_bytes < b.estimate.memory_per_gpu_bytes;
        return a.estimate.step_time_s < b.estimate.step_time_s;
      });
  if (out.best.size() > static_cast<size_t>(opt.top)) out.best.resize(static_cast<size_t>(opt.top));
  out.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace shardcost
