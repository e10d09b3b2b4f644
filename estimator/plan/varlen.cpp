// Variable-length pricing: global batches drawn from a length distribution, spread over the
// data-parallel ranks and packed, each micro-batch priced from its tokens and its squared
// lengths; the step waits for the slowest rank (docs/variable-length.md has the formulas).
#include "shardcost/varlen.h"

#include <fmt/format.h>

#include <algorithm>

#include "estimate_internal.h"
#include "shardcost/error.h"
#include "shardcost/plan.h"
#include "varlen_internal.h"

namespace shardcost {

using namespace varlen;

namespace {

// Every batch spread over the ranks and packed: a micro-batch holds up to max_tokens per GPU
// of its context-parallel group.
std::vector<PackedBatch> pack_all(const Batches& b, const Strategy& s, Balance balance,
                                  const SequenceCost& cost) {
  std::vector<PackedBatch> out(b.lengths.size());
  std::vector<int64_t> lengths;
  for (size_t i = 0; i < b.lengths.size(); ++i) {
    lengths.clear();
    for (int64_t len : b.lengths[i]) lengths.push_back(padded(len, s.cp, s.cp_kind));
    pack_batch(lengths, s.dp, s.mbs, s.max_tokens * s.cp, balance, cost, out[i], {s.cp, s.cp_kind});
  }
  return out;
}

BatchTimes price(const std::vector<PackedBatch>& packed, const MicroBatchPrice& p,
                 double fixed_pipeline) {
  BatchTimes out;
  std::vector<double> seconds;
  for (const PackedBatch& batch : packed) {
    double slowest = 0, sum = 0;
    const std::vector<MicroBatch>* slowest_rank = nullptr;
    for (const auto& rank : batch.ranks) {
      const double t = rank_seconds(rank, p);
      if (!slowest_rank || t > slowest) slowest_rank = &rank;
      slowest = std::max(slowest, t);
      sum += t;
      out.max_micro_batches = std::max(out.max_micro_batches, static_cast<int>(rank.size()));
      for (const MicroBatch& mb : rank)
        if (mb.tokens > out.largest.tokens ||
            (mb.tokens == out.largest.tokens && mb.squared > out.largest.squared))
          out.largest = mb;
    }
    out.delta.push_back(slowest - fixed_pipeline);
    // The data-parallel collectives behind the slowest rank's micro-batches: the others wait
    // for it at each of them.
    seconds.clear();
    if (slowest_rank)
      for (const MicroBatch& mb : *slowest_rank) seconds.push_back(p.seconds(mb));
    out.dp_delta.push_back(p.data_parallel_delta(seconds));
    out.imbalance.push_back(sum > 0 ? slowest / (sum / static_cast<double>(batch.ranks.size()))
                                    : 1);
  }
  return out;
}

}  // namespace

VarlenEstimate estimate_varlen(const Workload& w, const Cluster& c, const Strategy& given,
                               const VarlenOptions& o, const EstimateOptions& opt) {
  check_varlen(w, o, opt);
  if (c.groups.size() > 1 && given.cp_per_sequence())
    throw InputError(
        "cp=dynamic and cp=flex on a mixed cluster (several node groups) are not priced yet; "
        "give a fixed cp there, or use one node group");
  if (!given.stage_tp.empty())
    throw InputError(
        "variable-length data with a TP degree per stage (stage_tp) is not priced yet; give one "
        "tp, or fixed-length sequences");
  if (given.schedule != PipeSchedule::one_f_one_b)
    throw InputError(fmt::format(
        "variable-length data under schedule={} is not priced yet (its pipeline is played out "
        "for 1F1B); use schedule=1f1b, or fixed-length sequences",
        to_string(given.schedule)));
  const Strategy s = with_precision(given, opt.software, c);
  if (o.batch_tokens < 0) throw InputError("--batch-tokens must be positive");
  if (auto why = unsupported(opt.software, s))
    throw InputError(fmt::format("strategy {} cannot run: {}", to_string(s), *why));
  if (s.cp_per_sequence()) return estimate_dynamic_cp(w, c, s, o, opt);
  Strategy fixed_strategy = s;
  fixed_strategy.balance = Balance::none;
  fixed_strategy.max_tokens = 0;
  const Estimate e0 = estimate(w, c, plan_of(fixed_strategy), opt);  // checks the strategy too

  MicroBatchPrice p(w, c, s, opt);
  const SequenceCost cost = p.weights();
  const Batches batches = draw_batches(w, s.gbs, o);
  if (s.max_tokens > 0 &&
      padded(batches.longest_padded, s.cp, s.cp_kind) > int64_t{s.max_tokens} * s.cp)
    throw InputError(fmt::format(
        "max_tokens={} per GPU is below the longest kept sequence ({} tokens{}); raise it to "
        "at least {}, or lower the model's seq_len",
        s.max_tokens, batches.longest, s.cp > 1 ? fmt::format(" over cp={}", s.cp) : "",
        (padded(batches.longest_padded, s.cp, s.cp_kind) + s.cp - 1) / s.cp));
  const std::vector<PackedBatch> packed = pack_all(batches, s, s.balance, cost);
  double lo = p.reference().tokens, hi = lo;
  for (const auto& batch : packed)
    for (const auto& rank : batch.ranks)
      for (const auto& mb : rank) lo = std::min(lo, mb.tokens), hi = std::max(hi, mb.tokens);
  p.cover(lo, hi);

  // The fixed-length pipeline (m reference micro-batches) the fixed estimate holds.
  const std::vector<MicroBatch> reference(static_cast<size_t>(s.micro_batches()), p.reference());
  const double fixed_pipeline = rank_seconds(reference, p);
  const BatchTimes priced = price(packed, p, fixed_pipeline);
  const bool reference_sized = priced.largest.tokens == p.reference().tokens &&
                               priced.largest.squared == p.reference().squared;
  VarlenEstimate out =
      summarise(w, c, s, e0, batches, priced, fixed_pipeline,
                reference_sized ? MicroBatchPrice::Peak{} : p.peak_memory(priced.largest));
  out.baseline = "balance=none";
  if (s.balance == Balance::none) {
    out.baseline_step_time_s = out.estimate.step_time_s;
  } else {
    const BatchTimes none = price(pack_all(batches, s, Balance::none, cost), p, fixed_pipeline);
    out.baseline_step_time_s = e0.step_time_s + mean(none.delta) + mean(none.dp_delta);
  }
  return out;
}

}  // namespace shardcost
