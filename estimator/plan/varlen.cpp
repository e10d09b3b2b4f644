// Variable-length pricing: global batches drawn from a length distribution, spread over the
// data-parallel ranks and packed, each micro-batch priced from its tokens and its squared
// lengths; the step waits for the slowest rank (docs/variable-length.md has the formulas).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "estimate_internal.h"
#include "memory.h"
#include "schedule.h"
#include "shardcost/error.h"
#include "shardcost/plan.h"
#include "shardcost/quantiles.h"
#include "shardcost/units.h"
#include "shardcost/varlen.h"

namespace shardcost {
namespace {

// A micro-batch's pace-stage seconds as a function of its tokens T and squared lengths A:
// L(T) + alpha A. L is priced from the workload's graph at token counts a factor 2 apart
// (linear between them), alpha from the graph at the fixed-length reference; the reference
// itself is its own priced time, so fixed-length batches price exactly as estimate() does.
class MicroBatchPrice {
 public:
  MicroBatchPrice(const Workload& w, const Cluster& c, const Strategy& s, const EstimateOptions& opt)
      : w_(w), s_(s), opt_(opt), layout_(w.layers(), s.pp), place_(placement(s)),
        pricer_(c.groups.front().device, c.groups.front().intra_node, c.inter_node,
                c.groups.front().gpus_per_node, opt.costs),
        ref_(w.fixed_micro_batch(s)) {
    const auto [pace, bubble] = pace_of(ref_);
    ref_s_ = pace;
    bubble_s_ = bubble;
    const double l0 = pace_of({1, ref_.tokens, 0}).first;
    grid_[ref_.tokens] = l0;
    alpha_ = ref_.squared > 0 ? (ref_s_ - l0) / ref_.squared : 0;
  }

  // Prices L over [lo, hi] tokens (the grid around the reference, a factor 2 apart).
  void cover(double lo, double hi) {
    const double t0 = ref_.tokens;
    for (double t = t0 / 2; t >= 1 && t * 2 > lo; t /= 2)
      if (!grid_.count(t)) grid_[t] = pace_of({1, t, 0}).first;
    for (double t = t0 * 2; t / 2 < hi; t *= 2)
      if (!grid_.count(t)) grid_[t] = pace_of({1, t, 0}).first;
  }

  double seconds(const MicroBatch& mb) const {
    if (mb.tokens == ref_.tokens && mb.squared == ref_.squared) return ref_s_;
    return linear(mb.tokens) + alpha_ * mb.squared;
  }
  double reference_seconds() const { return ref_s_; }
  double bubble_seconds() const { return bubble_s_; }
  const MicroBatch& reference() const { return ref_; }
  // Per token and per squared token at the reference: what Balance::cost weighs.
  SequenceCost weights() {
    if (grid_.size() < 2) cover(ref_.tokens, 2 * ref_.tokens);
    const double t0 = ref_.tokens;
    return {(linear(2 * t0) - linear(t0)) / t0, alpha_};
  }

  double peak_memory(const MicroBatch& largest) const {
    Graph g;
    w_.graph_of(s_, opt_.software.attention, largest, g);
    return peak_stage_memory(g, s_, opt_.software, layout_).total();
  }

 private:
  std::pair<double, double> pace_of(const MicroBatch& mb) const {
    Graph g;
    w_.graph_of(s_, opt_.software.attention, mb, g);
    const Times t = step_times({g, s_, layout_, opt_.software, place_, pricer_, false});
    return {t.micro_batch_s, t.s[kBubble]};
  }
  double linear(double t) const {
    if (grid_.size() == 1) return grid_.begin()->second * t / grid_.begin()->first;
    auto hi = grid_.lower_bound(t);
    if (hi == grid_.begin()) ++hi;
    if (hi == grid_.end()) --hi;
    const auto lo = std::prev(hi);
    const double v = lo->second + (hi->second - lo->second) * (t - lo->first) / (hi->first - lo->first);
    return std::max(v, 0.0);
  }

  const Workload& w_;
  const Strategy& s_;
  const EstimateOptions& opt_;
  StageLayout layout_;
  Placement place_;
  Pricer pricer_;
  MicroBatch ref_;
  double ref_s_ = 0, bubble_s_ = 0, alpha_ = 0;
  std::map<double, double> grid_;  // tokens -> L(tokens)
};

// A rank's pipeline time: its micro-batches one after another, and the fill and drain of the
// pipeline scaled by its mean micro-batch against the reference.
double rank_seconds(const std::vector<MicroBatch>& mbs, const MicroBatchPrice& price) {
  double sum = 0, ref_sum = 0;
  for (const MicroBatch& mb : mbs) {
    sum += price.seconds(mb);
    ref_sum += price.reference_seconds();
  }
  return sum + (ref_sum > 0 ? price.bubble_seconds() * (sum / ref_sum) : 0);
}

struct Batches {
  std::vector<PackedBatch> packed;
  std::vector<double> tokens, squared;  // kept, unpadded, per batch
  int64_t drawn = 0, dropped = 0, truncated = 0, longest = 0;
};

// Draws the global batches (the same for every balance, from the seed) and packs them.
Batches draw(const Workload& w, const Strategy& s, const VarlenOptions& o, Balance balance, const SequenceCost& cost) {
  const auto max_len = static_cast<int64_t>(w.tokens_per_sample());
  const int64_t pad = s.cp > 1 ? 2 * s.cp : 1;  // ring attention splits each sequence in 2 cp chunks
  std::mt19937_64 rng(o.seed);
  Batches b;
  std::vector<int64_t> lengths;
  for (int i = 0; i < o.batches; ++i) {
    lengths.clear();
    double tokens = 0, squared = 0;
    while (static_cast<int>(lengths.size()) < s.gbs) {
      int64_t len = o.lengths.draw(rng);
      ++b.drawn;
      if (len > max_len) {
        if (o.long_sequences == LongSequences::drop) {
          ++b.dropped;
          if (b.dropped > 1000 * (b.drawn - b.dropped) + 100000)
            throw InputError(fmt::format("fewer than 1 in 1000 drawn sequences fit the model's seq_len ({}); raise "
                                         "seq_len or use --long-seqs truncate",
                                         max_len));
          continue;
        }
        ++b.truncated;
        len = max_len;
      }
      b.longest = std::max(b.longest, len);
      tokens += static_cast<double>(len);
      squared += static_cast<double>(len) * static_cast<double>(len);
      lengths.push_back((len + pad - 1) / pad * pad);
    }
    b.tokens.push_back(tokens);
    b.squared.push_back(squared);
    pack_batch(lengths, s.dp, s.mbs, s.max_tokens, balance, cost, b.packed.emplace_back());
  }
  return b;
}

struct BatchTimes {
  // Per batch: the slowest rank's pipeline time less the fixed plan's (0 for batches like the
  // fixed one, so that their step is the fixed step exactly), and the imbalance.
  std::vector<double> delta, imbalance;
  int max_micro_batches = 0;
  MicroBatch largest;
};

BatchTimes price(const Batches& b, const MicroBatchPrice& p, double fixed_pipeline) {
  BatchTimes out;
  for (const PackedBatch& batch : b.packed) {
    double slowest = 0, sum = 0;
    for (const auto& rank : batch.ranks) {
      const double t = rank_seconds(rank, p);
      slowest = std::max(slowest, t);
      sum += t;
      out.max_micro_batches = std::max(out.max_micro_batches, static_cast<int>(rank.size()));
      for (const MicroBatch& mb : rank)
        if (mb.tokens > out.largest.tokens || (mb.tokens == out.largest.tokens && mb.squared > out.largest.squared))
          out.largest = mb;
    }
    out.delta.push_back(slowest - fixed_pipeline);
    out.imbalance.push_back(sum > 0 ? slowest / (sum / static_cast<double>(batch.ranks.size())) : 1);
  }
  return out;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  const double at = q * static_cast<double>(v.size() - 1);
  const size_t i = static_cast<size_t>(at);
  return i + 1 < v.size() ? v[i] + (v[i + 1] - v[i]) * (at - static_cast<double>(i)) : v[i];
}

}  // namespace

VarlenEstimate estimate_varlen(const Workload& w, const Cluster& c, const Strategy& s, const VarlenOptions& o,
                               const EstimateOptions& opt) {
  if (o.batches < 1) throw InputError("--batches must be at least 1");
  const bool at_seq_len = o.lengths.is_fixed() && o.lengths.min_length() == static_cast<int64_t>(w.tokens_per_sample());
  if (!at_seq_len && opt.software.attention != AttentionKernel::flash)
    throw InputError(fmt::format("packed variable-length sequences need fused (varlen flash) attention; software "
                                 "preset '{}' has the unfused kernel",
                                 opt.software.name));
  const auto max_len = static_cast<int64_t>(w.tokens_per_sample());
  if (o.lengths.min_length() > max_len && o.long_sequences == LongSequences::drop)
    throw InputError(fmt::format("every length of {} is above the model's seq_len ({}); raise seq_len or use "
                                 "--long-seqs truncate",
                                 o.lengths.describe(), max_len));
  Strategy fixed_strategy = s;
  fixed_strategy.balance = Balance::none;
  fixed_strategy.max_tokens = 0;
  const Estimate e0 = estimate(w, c, plan_of(fixed_strategy), opt);  // checks the strategy too

  MicroBatchPrice p(w, c, s, opt);
  const SequenceCost cost = p.weights();
  const Batches batches = draw(w, s, o, s.balance, cost);
  if (s.max_tokens > 0 && batches.longest > s.max_tokens)
    throw InputError(fmt::format("max_tokens={} is below the longest kept sequence ({} tokens); raise it to at least "
                                 "{}, or lower the model's seq_len",
                                 s.max_tokens, batches.longest, batches.longest));
  double lo = p.reference().tokens, hi = lo;
  for (const auto& batch : batches.packed)
    for (const auto& rank : batch.ranks)
      for (const auto& mb : rank) lo = std::min(lo, mb.tokens), hi = std::max(hi, mb.tokens);
  p.cover(lo, hi);

  // The fixed-length pipeline (m reference micro-batches) the fixed estimate holds.
  const std::vector<MicroBatch> reference(static_cast<size_t>(s.micro_batches()), p.reference());
  const double fixed_pipeline = rank_seconds(reference, p);
  const BatchTimes priced = price(batches, p, fixed_pipeline);
  std::vector<double> steps;
  for (double d : priced.delta) steps.push_back(e0.step_time_s + d);
  const double mean_delta = mean(priced.delta);

  VarlenEstimate out;
  out.estimate = e0;
  Estimate& e = out.estimate;
  e.strategy = s;
  e.step_time_s = e0.step_time_s + mean_delta;
  out.step_time_p10_s = quantile(steps, 0.1);
  out.step_time_p90_s = quantile(steps, 0.9);
  out.imbalance = mean(priced.imbalance);
  out.tokens_per_step = mean(batches.tokens);
  out.drawn = batches.drawn;
  out.dropped = batches.dropped;
  out.truncated = batches.truncated;
  out.longest = batches.longest;
  out.max_micro_batches = priced.max_micro_batches;
  // Throughput and FLOPs from the kept tokens: the fixed estimate's FLOPs scaled by the
  // workload's count of the drawn batches against the fixed batch's (1 when they are alike).
  const double fixed_flops = w.model_flops_of(s.gbs * w.tokens_per_sample(),
                                              s.gbs * w.tokens_per_sample() * w.tokens_per_sample());
  std::vector<double> flops;
  for (size_t i = 0; i < batches.tokens.size(); ++i)
    flops.push_back(w.model_flops_of(batches.tokens[i], batches.squared[i]) / fixed_flops);
  e.model_flops = e0.model_flops * mean(flops);
  const double gpus = c.total_gpus();
  e.tokens_per_s = out.tokens_per_step / e.step_time_s;
  e.tflops_per_gpu = e.model_flops / e.step_time_s / gpus / 1e12;
  e.mfu = e.model_flops / e.step_time_s / gpus / c.groups.front().device.peak_flops[static_cast<int>(DType::bf16)];
  // Memory: the largest micro-batch drawn, as if every one in flight were that large.
  if (!(priced.largest.tokens == p.reference().tokens && priced.largest.squared == p.reference().squared)) {
    e.memory_per_gpu_bytes = p.peak_memory(priced.largest);
    if (!e.memory.empty()) {
      const double fixed_total = e0.memory_per_gpu_bytes;
      for (auto& m : e.memory)
        if (m.name == "activations") m.bytes += e.memory_per_gpu_bytes - fixed_total;
    }
  }
  e.feasible = e.memory_per_gpu_bytes <= e.memory_capacity_bytes;
  e.reason = e.feasible ? "" : fmt::format("needs {:.1f} GiB of {:.1f} GiB", e.memory_per_gpu_bytes / units::kGiB,
                                           e.memory_capacity_bytes / units::kGiB);
  // The breakdown: the pipeline's parts scaled to the mean slowest rank; data-parallel
  // communication and the optimizer as the fixed plan has them.
  if (fixed_pipeline > 0) {
    const double f = (fixed_pipeline + mean_delta) / fixed_pipeline;
    for (auto& part : e.time) {
      if (part.name == std::string("dp_comm") || part.name == std::string("optimizer")) continue;
      part.seconds *= f;
      for (auto& [origin, seconds] : part.sources) seconds *= f;
    }
  }
  if (s.balance == Balance::none) {
    out.baseline_step_time_s = e.step_time_s;
  } else {
    const Batches base = draw(w, s, o, Balance::none, cost);
    out.baseline_step_time_s = e0.step_time_s + mean(price(base, p, fixed_pipeline).delta);
  }
  return out;
}

}  // namespace shardcost
