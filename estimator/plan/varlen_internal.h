#pragma once
// What variable-length pricing shares between its static and dynamic context parallelism:
// the price of one micro-batch, a rank's pipeline time, the drawn batches, the summaries.
#include <map>
#include <memory>
#include <vector>

#include "costs/pricing.h"
#include "pipeline_sim.h"
#include "placement.h"
#include "schedule.h"
#include "shardcost/varlen.h"
#include "stages.h"

namespace shardcost::varlen {

// A micro-batch's pace-stage seconds as a function of its tokens T and attention work A (its
// sequences' tiles, MicroBatch::attention; squared lengths where not counted): L(T) + alpha A.
// L is priced from the workload's graph at token counts a factor 2 apart (linear between
// them), alpha from the graph at the fixed-length reference over the reference's own tiles;
// the reference itself is its own priced time, so fixed-length batches price exactly as
// estimate() does.
class MicroBatchPrice {
 public:
  MicroBatchPrice(const Workload& w, const Cluster& c, const Strategy& s,
                  const EstimateOptions& opt)
      : w_(w),
        c_(c),
        s_(s),
        opt_(opt),
        layout_(w.layers(), s.pp, &s_.stage_layers),
        place_(placement(s)),
        pricer_(c.groups.front().device, c.groups.front().intra_node, c.network_of(0),
                c.groups.front().domain_gpus(), opt.costs),
        ref_(w.fixed_micro_batch(s)) {
    // A mixed cluster: each stage on its own groups, where rank order places it.
    if (c.groups.size() > 1) placed_ = place(plan_of(s), c);
    const auto [pace, bubble] = pace_of(ref_, &shape_, &dp_, &windows_);
    ref_s_ = pace;
    bubble_s_ = bubble;
    // The closed form's fill and drain against the schedule played out, for the reference's
    // micro-batches: what keeps fixed-length batches at estimate()'s step exactly.
    const std::vector<double> reference(static_cast<size_t>(s.micro_batches()), ref_s_);
    fill_correction_ = ref_s_ * static_cast<double>(reference.size()) + bubble_s_ -
                       pipeline_seconds(shape_, reference);
    reference_dp_s_ = data_parallel_seconds(reference);
    const double l0 = pace_of({1, ref_.tokens, 0}).first;
    grid_[ref_.tokens] = l0;
    // Attention at the reference's tiles: what a micro-batch's own tiles scale.
    ref_.attention = ref_.sequences *
                     attention_work(static_cast<int64_t>(w.tokens_per_sample()), {s.cp, s.cp_kind});
    alpha_ = ref_.attention > 0 ? (ref_s_ - l0) / ref_.attention : 0;
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
    return linear(mb.tokens) +
           alpha_ * (mb.attention > 0 ? mb.attention : mb.squared * squared_share());
  }
  double reference_seconds() const { return ref_s_; }
  // The pipeline's stages and its schedule's fill correction (rank_seconds).
  const PipelineShape& shape() const { return shape_; }
  double fill_correction() const { return fill_correction_; }
  // The data-parallel collectives' exposed seconds behind these micro-batches' windows (each
  // the fixed micro-batch's, scaled by its seconds), against the fixed plan's.
  double data_parallel_delta(const std::vector<double>& micro_batch_s) const {
    return data_parallel_seconds(micro_batch_s) - reference_dp_s_;
  }
  const MicroBatch& reference() const { return ref_; }
  // Per token and per squared token at the reference: what Balance::cost weighs.
  SequenceCost weights() {
    if (grid_.size() < 2) cover(ref_.tokens, 2 * ref_.tokens);
    const double t0 = ref_.tokens;
    return {(linear(2 * t0) - linear(t0)) / t0, alpha_ * squared_share()};
  }

  // The memory of the largest micro-batch, as if every one in flight were that large: the
  // most loaded stage's, and (on a mixed cluster) the capacity of the device it is checked
  // against, the one with the least headroom.
  struct Peak {
    double bytes = 0, capacity = 0;
  };
  Peak peak_memory(const MicroBatch& largest) const;

 private:
  // The pace-setting stage's seconds per micro-batch and the fill and drain; with `shape`,
  // the pipeline's stage shares and forward share too.
  std::pair<double, double> pace_of(const MicroBatch& mb, PipelineShape* shape = nullptr,
                                    DataParallelComm* dp = nullptr,
                                    PaceWindows* windows = nullptr) const;
  double data_parallel_seconds(const std::vector<double>& micro_batch_s) const;
  // The reference's attention work over its squared tokens.
  double squared_share() const { return ref_.squared > 0 ? ref_.attention / ref_.squared : 1; }
  double linear(double t) const {
    if (grid_.size() == 1) return grid_.begin()->second * t / grid_.begin()->first;
    auto hi = grid_.lower_bound(t);
    if (hi == grid_.begin()) ++hi;
    if (hi == grid_.end()) --hi;
    const auto lo = std::prev(hi);
    const double v =
        lo->second + (hi->second - lo->second) * (t - lo->first) / (hi->first - lo->first);
    return std::max(v, 0.0);
  }

  const Workload& w_;
  const Cluster& c_;
  Strategy s_;
  const EstimateOptions& opt_;
  StageLayout layout_;
  Placement place_;
  Pricer pricer_;
  MicroBatch ref_;
  double ref_s_ = 0, bubble_s_ = 0, alpha_ = 0, fill_correction_ = 0, reference_dp_s_ = 0;
  PipelineShape shape_;
  DataParallelComm dp_;
  PaceWindows windows_;
  std::map<double, double> grid_;         // tokens -> L(tokens)
  std::vector<ReplicaPlacement> placed_;  // a mixed cluster's; empty on one group
};

// A rank's pipeline time: its micro-batches through the pipeline's 1F1B schedule played out
// op by op (pipeline_seconds), plus the price's fill correction.
double rank_seconds(const std::vector<MicroBatch>& mbs, const MicroBatchPrice& price);
// The same for micro-batches already priced (seconds on the pace-setting stage each), through
// `price`'s pipeline.
double pipeline_time(const std::vector<double>& seconds, const MicroBatchPrice& price);

// The drawn global batches: the same for every strategy and balance, from the seed.
struct Batches {
  // Kept (after dropping or truncating, and padded to VarlenOptions::pad_to), per batch.
  std::vector<std::vector<int64_t>> lengths;
  std::vector<double> tokens, squared;  // per batch
  int64_t drawn = 0, dropped = 0, truncated = 0, longest = 0;
  int64_t longest_padded = 0;  // the longest as packed (after pad_to)
};
// gbs sequences per batch, or VarlenOptions::batch_tokens tokens.
Batches draw_batches(const Workload&, int gbs, const VarlenOptions&);

// Lengths padded for context parallelism: ring attention splits each sequence in 2 cp chunks,
// Ulysses in cp.
int64_t padded(int64_t length, int cp, CpKind kind = CpKind::ring);

struct BatchTimes {
  // Per batch: the slowest rank's pipeline time less the fixed plan's (0 for batches like the
  // fixed one, so that their step is the fixed step exactly), its data-parallel collectives'
  // exposed seconds less the fixed plan's, and the imbalance.
  std::vector<double> delta, dp_delta, imbalance;
  int max_micro_batches = 0;
  MicroBatch largest;
};

// The estimate from the fixed-length one (e0, its pipeline fixed_pipeline) and the priced
// batches: the mean step and its spread, throughput and FLOPs from the kept tokens, memory
// from the largest micro-batch (peak_memory: 0 bytes to keep e0's), the breakdown's pipeline parts
// scaled to the mean slowest rank.
VarlenEstimate summarise(const Workload&, const Cluster&, const Strategy&, const Estimate& e0,
                         const Batches&, const BatchTimes&, double fixed_pipeline,
                         const MicroBatchPrice::Peak& peak_memory);
// Context parallelism sized per sequence (Strategy::cp_mode dynamic or flex).
VarlenEstimate estimate_dynamic_cp(const Workload&, const Cluster&, const Strategy&,
                                   const VarlenOptions&, const EstimateOptions&);
// The checks every variable-length estimate makes first.
void check_varlen(const Workload&, const VarlenOptions&, const EstimateOptions&);

double mean(const std::vector<double>&);

}  // namespace shardcost::varlen
