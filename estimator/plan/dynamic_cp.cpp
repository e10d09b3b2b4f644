// Dynamic context parallelism (Megatron's): in each CP domain of cp_max GPUs, every sequence
// runs on the smallest power-of-two CP group whose GPUs hold at most max_tokens of it; the
// domain's GPUs split into cp_max/k groups for the sequences of size k, and the sizes run one
// after another (docs/variable-length.md).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "estimate_internal.h"
#include "shardcost/error.h"
#include "shardcost/plan.h"
#include "varlen_internal.h"

namespace shardcost::varlen {
namespace {

// The CP size a sequence needs: the smallest power of two k whose GPUs hold it in max_tokens
// each (padded to 2k chunks); 0 when none up to cp_max does.
int cp_size(int64_t length, int max_tokens, int cp_max, CpKind kind) {
  for (int k = 1; k <= cp_max; k *= 2)
    if (padded(length, k, kind) <= int64_t{max_tokens} * k) return k;
  return 0;
}

Strategy static_cp(const Strategy& s, int k) {
  Strategy x = s;
  x.cp_mode = CpMode::fixed;
  x.dp = s.dp * s.cp / k;
  x.cp = k;
  return x;
}

// FlexSP-style groups of different sizes side by side, chosen per batch by a small search:
// phases run one after another, the groups of a phase side by side; in a phase the sequences,
// longest first, each go to the group that would finish it earliest among those big enough
// for it. A sequence of s tokens costs per_token s + per_square s^2 at its group's size.
struct FlexPlan {
  double makespan = 0;
  // Per phase: each group's size and its sequences (padded for that size).
  std::vector<std::vector<std::pair<int, std::vector<int64_t>>>> phases;
};

struct FlexSearch {
  int cp_max, max_tokens;
  CpKind kind;
  const std::map<int, SequenceCost>& weights;

  double cost(int64_t len, int k) const {
    const double x = static_cast<double>(padded(len, k, kind));
    return weights.at(k).per_token * x + weights.at(k).per_square * x * x;
  }
  // One phase over these group sizes (sequences longest first).
  std::pair<double, std::vector<std::pair<int, std::vector<int64_t>>>> phase(
      const std::vector<int64_t>& seqs, const std::vector<int>& groups) const {
    std::vector<double> load(groups.size(), 0);
    std::vector<std::pair<int, std::vector<int64_t>>> out;
    for (int k : groups) out.push_back({k, {}});
    for (const int64_t len : seqs) {
      size_t best = groups.size();
      double end = 1e300;
      for (size_t g = 0; g < groups.size(); ++g) {
        if (cp_size(len, max_tokens, groups[g], kind) == 0) continue;
        const double e = load[g] + cost(len, groups[g]);
        if (e < end) best = g, end = e;
      }
      if (best == groups.size()) return {1e300, {}};  // a sequence no group here holds
      load[best] = end;
      out[best].second.push_back(padded(len, groups[best], kind));
    }
    return {*std::max_element(load.begin(), load.end()), std::move(out)};
  }
  // The best plan for these sequences (longest first).
  FlexPlan best(const std::vector<int64_t>& seqs) const {
    FlexPlan plan;
    if (seqs.empty()) return plan;
    const int need = cp_size(seqs.front(), max_tokens, cp_max, kind);  // the longest's size
    plan.makespan = 1e300;
    // One phase: a group of the size the longest needs, the other GPUs in groups of one size.
    for (int j = 1; j <= cp_max; j *= 2) {
      std::vector<int> groups{need};
      for (int used = need; used + j <= cp_max; used += j) groups.push_back(j);
      auto [t, groups_out] = phase(seqs, groups);
      if (t < plan.makespan) plan = {t, {std::move(groups_out)}};
    }
    // Or two: the sequences that need that size on groups of it, then the rest (searched).
    std::vector<int64_t> big, rest;
    for (int64_t len : seqs)
      (cp_size(len, max_tokens, cp_max, kind) == need ? big : rest).push_back(len);
    if (!rest.empty() && need > 1) {
      auto [t, first] = phase(big, std::vector<int>(static_cast<size_t>(cp_max / need), need));
      const FlexPlan after = best(rest);
      if (t + after.makespan < plan.makespan) {
        FlexPlan two{t + after.makespan, {std::move(first)}};
        two.phases.insert(two.phases.end(), after.phases.begin(), after.phases.end());
        plan = std::move(two);
      }
    }
    return plan;
  }
};

}  // namespace

VarlenEstimate estimate_dynamic_cp(const Workload& w, const Cluster& c, const Strategy& s,
                                   const VarlenOptions& o, const EstimateOptions& opt) {
  const int cp_max = s.cp;
  if ((cp_max & (cp_max - 1)) != 0)
    throw InputError(fmt::format("cp=dynamic needs cp_max a power of two (got {})", cp_max));
  if (s.max_tokens <= 0)
    throw InputError(
        "cp=dynamic needs max_tokens=N: the tokens one GPU holds per micro-batch, which sizes each "
        "sequence's CP group");
  Strategy at_max = static_cp(s, cp_max);
  at_max.balance = Balance::none;
  at_max.max_tokens = 0;
  if (auto why = check_strategy(w, c, at_max))
    throw InputError(fmt::format("strategy {} cannot run: {}", to_string(s), *why));
  // The step's data-parallel reduction and optimizer: as the static plan at the smallest CP
  // size that divides the batch (cp=1 where it can: the domain's GPUs then run as the data-
  // parallel ranks the short sequences make them), its pipeline the reference.
  Strategy fixed = at_max;
  for (int k = 1; k < cp_max; k *= 2) {
    const Strategy x = static_cp(at_max, k);
    if (!check_strategy(w, c, x)) {
      fixed = x;
      break;
    }
  }
  const Estimate e0 = estimate(w, c, plan_of(fixed), opt);

  // One price per CP size (each its own graph: tokens and attention split k ways, the ring).
  std::map<int, std::unique_ptr<MicroBatchPrice>> prices;
  std::map<int, SequenceCost> weights;
  for (int k = 1; k <= cp_max; k *= 2) {
    prices[k] = std::make_unique<MicroBatchPrice>(w, c, static_cp(s, k), opt);
    weights[k] = prices[k]->weights();
  }
  const Batches batches = draw_batches(w, s.gbs, o);
  if (cp_size(batches.longest_padded, s.max_tokens, cp_max, s.cp_kind) == 0)
    throw InputError(fmt::format(
        "the longest kept sequence ({} tokens) needs more than cp_max={} GPUs at max_tokens={} "
        "per GPU; raise cp_max or max_tokens, or lower the model's seq_len",
        batches.longest, cp_max, s.max_tokens));

  // Every batch: its sequences spread over the dp domains, then per CP size over the domain's
  // groups of that size, packed k * max_tokens per micro-batch. A domain runs phases one after
  // another, the groups of a phase side by side: dynamic, one phase per size with cp_max/k
  // groups; flex, the sizes together where their groups fit (flex_phases).
  struct Phase {
    std::map<int, PackedBatch> by_size;
  };
  struct Domain {
    std::vector<Phase> phases;
  };
  std::vector<std::vector<Domain>> all(batches.lengths.size());
  std::map<int, int64_t> counts;
  std::map<int, std::pair<double, double>> range;  // k -> lowest and highest micro-batch tokens
  PackedBatch domains;
  for (size_t b = 0; b < batches.lengths.size(); ++b) {
    // Whole sequences to domains first (micro-batch of one, no budget: each domain's share).
    pack_batch(batches.lengths[b], s.dp, 1, 0, s.balance, weights[1], domains);
    auto& out = all[b];
    out.resize(static_cast<size_t>(s.dp));
    for (size_t d = 0; d < domains.ranks.size(); ++d) {
      std::map<int, std::vector<int64_t>> sizes;
      for (const MicroBatch& one : domains.ranks[d]) {
        const auto len = static_cast<int64_t>(one.tokens);
        const int k = cp_size(len, s.max_tokens, cp_max, s.cp_kind);
        sizes[k].push_back(padded(len, k, s.cp_kind));
        ++counts[k];
      }
      if (s.cp_mode == CpMode::flex) {
        std::vector<int64_t> seqs;
        for (const MicroBatch& one : domains.ranks[d])
          seqs.push_back(static_cast<int64_t>(one.tokens));
        std::sort(seqs.begin(), seqs.end(), std::greater<>());
        const FlexPlan plan = FlexSearch{cp_max, s.max_tokens, s.cp_kind, weights}.best(seqs);
        PackedBatch one;
        for (const auto& phase : plan.phases) {
          Phase& ph = out[d].phases.emplace_back();
          for (const auto& [k, lengths] : phase) {
            pack_batch(lengths, 1, 1, s.max_tokens * k, Balance::cost, weights[k], one,
                       {k, s.cp_kind});
            ph.by_size[k].ranks.push_back(std::move(one.ranks[0]));
          }
        }
      } else {
        for (auto& [k, lengths] : sizes) {
          Phase& ph = out[d].phases.emplace_back();
          pack_batch(lengths, cp_max / k, 1, s.max_tokens * k, s.balance, weights[k], ph.by_size[k],
                     {k, s.cp_kind});
        }
      }
      for (const Phase& ph : out[d].phases)
        for (const auto& [k, packed] : ph.by_size) {
          auto& [lo, hi] = range.try_emplace(k, 1e300, 0.0).first->second;
          for (const auto& group : packed.ranks)
            for (const auto& mb : group) lo = std::min(lo, mb.tokens), hi = std::max(hi, mb.tokens);
        }
    }
  }
  for (auto& [k, p] : prices)
    if (range.count(k)) p->cover(range[k].first, range[k].second);

  // A domain's time: per CP size, the slowest of its groups; the sizes one after another.
  const MicroBatchPrice& ref = *prices[fixed.cp];
  const std::vector<MicroBatch> reference(static_cast<size_t>(fixed.micro_batches()),
                                          ref.reference());
  const double fixed_pipeline = rank_seconds(reference, ref);
  BatchTimes priced;
  // A domain's micro-batches through its pipeline (pp > 1), and as they would be with its
  // groups equally loaded.
  std::vector<double> stream, even, windows, slowest_stream;
  std::map<int, MicroBatch> largest_by_size;  // per CP size: memory per GPU differs with it
  for (const auto& batch : all) {
    // Imbalance: the slowest domain against the domains' mean time had every CP size's
    // groups been equally loaded.
    double slowest = 0, ideal = 0;
    slowest_stream.clear();
    for (const Domain& d : batch) {
      double t = 0;
      int micro_batches = 0;
      // With a pipeline, the domain's micro-batches flow through one schedule: the j-th of a
      // phase takes its slowest group's j-th (each GPU of a stage runs every micro-batch's
      // share in 1F1B order, so groups cannot run ahead of each other); without one, a
      // phase's groups run independently and the phase takes its slowest group. The stream
      // (with a pipeline) or the phases' slowest groups (without) give the windows the
      // data-parallel collectives hide behind.
      stream.clear();
      even.clear();
      windows.clear();
      for (const Phase& ph : d.phases) {
        double phase_max = 0;
        std::pair<const std::vector<MicroBatch>*, const MicroBatchPrice*> phase_slowest{};
        const size_t first = stream.size();
        for (const auto& [k, packed] : ph.by_size) {
          for (const auto& group : packed.ranks) {
            if (s.pp > 1) {
              if (stream.size() < first + group.size()) stream.resize(first + group.size(), 0);
              if (even.size() < stream.size()) even.resize(stream.size(), 0);
              for (size_t j = 0; j < group.size(); ++j) {
                const double x = prices[k]->seconds(group[j]);
                stream[first + j] = std::max(stream[first + j], x);
                even[first + j] += x * k / cp_max;
              }
            }
            const double g = rank_seconds(group, *prices[k]);
            if (g > phase_max || !phase_slowest.first) phase_slowest = {&group, prices[k].get()};
            phase_max = std::max(phase_max, g);
            if (s.pp == 1) ideal += g * k / cp_max;  // its GPU-seconds over the domain's GPUs
            micro_batches = std::max(micro_batches, static_cast<int>(group.size()));
            MicroBatch& largest = largest_by_size[k];
            for (const MicroBatch& mb : group)
              if (mb.tokens > largest.tokens ||
                  (mb.tokens == largest.tokens && mb.squared > largest.squared))
                largest = mb;
          }
        }
        t += phase_max;
        // Without a pipeline, the windows are the phase's slowest group's micro-batches.
        if (s.pp == 1 && phase_slowest.first)
          for (const MicroBatch& mb : *phase_slowest.first)
            windows.push_back(phase_slowest.second->seconds(mb));
      }
      if (s.pp > 1) {
        t = pipeline_time(stream, ref);
        ideal += pipeline_time(even, ref);
      }
      priced.max_micro_batches = std::max(priced.max_micro_batches, micro_batches);
      if (t > slowest || slowest_stream.empty()) slowest_stream = s.pp > 1 ? stream : windows;
      slowest = std::max(slowest, t);
    }
    priced.delta.push_back(slowest - fixed_pipeline);
    // The data-parallel collectives behind the slowest domain's micro-batches.
    priced.dp_delta.push_back(ref.data_parallel_delta(slowest_stream));
    priced.imbalance.push_back(ideal > 0 ? slowest / (ideal / static_cast<double>(batch.size()))
                                         : 1);
  }
  MicroBatchPrice::Peak peak;  // one group: the capacity is e0's
  for (const auto& [k, mb] : largest_by_size)
    peak.bytes = std::max(peak.bytes, prices[k]->peak_memory(mb).bytes);
  VarlenEstimate out = summarise(w, c, s, e0, batches, priced, fixed_pipeline, peak);
  for (const auto& [k, n] : counts) out.cp_sequences.push_back({k, n});

  // The static baseline: every sequence at the CP size of the longest, spread as drawn.
  Strategy base = static_cp(s, cp_size(batches.longest_padded, s.max_tokens, cp_max, s.cp_kind));
  base.balance = Balance::none;
  out.baseline = to_string(base);
  if (auto why = check_strategy(w, c, base)) {
    out.baseline = fmt::format("none: {} cannot run ({})", out.baseline, *why);
  } else {
    VarlenOptions same = o;
    out.baseline_step_time_s = estimate_varlen(w, c, base, same, opt).estimate.step_time_s;
  }
  return out;
}

}  // namespace shardcost::varlen
