// Variable-length pricing: global batches drawn from a length distribution, spread over the
// data-parallel ranks and packed, each micro-batch priced from its tokens and its squared
// lengths; the step waits for the slowest rank (docs/variable-length.md has the formulas).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "estimate_internal.h"
#include "memory.h"
#include "mixed_pricing.h"
#include "schedule.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/plan.h"
#include "shardcost/quantiles.h"
#include "shardcost/units.h"
#include "shardcost/varlen.h"
#include "varlen_internal.h"

namespace shardcost::varlen {

std::pair<double, double> MicroBatchPrice::pace_of(const MicroBatch& mb, PipelineShape* shape,
                                                   DataParallelComm* dp,
                                                   PaceWindows* windows) const {
  Graph g;
  w_.graph_of(s_, opt_.software.attention, mb, g);
  std::vector<double> stages;
  ScheduleInputs in{g,      s_,      layout_, opt_.software,
                    place_, pricer_, false,   shape ? &stages : nullptr,
                    dp,     windows};
  std::optional<MixedPricing> mixed;
  if (!placed_.empty()) {
    const bool tied = std::any_of(g.blocks.begin(), g.blocks.end(),
                                  [](const Block& b) { return b.tied_params > 0; });
    mixed.emplace(w_, g, c_, s_, place_, placed_, tied && s_.pp > 1, opt_);
    in.stages = &mixed->stages;
  }
  const Times t = step_times(in);
  if (shape) {
    shape->pp = s_.pp;
    shape->vpp = s_.vpp;
    shape->stage_share.clear();
    for (double x : stages) shape->stage_share.push_back(x / t.micro_batch_s);
    const double compute = t.s[kComputeForward] + t.s[kComputeBackward] + t.s[kComputeRecompute];
    if (compute > 0) shape->forward_share = t.s[kComputeForward] / compute;
  }
  return {t.micro_batch_s, t.s[kBubble]};
}

double MicroBatchPrice::data_parallel_seconds(const std::vector<double>& micro_batch_s) const {
  thread_local std::vector<double> forward, backward;
  forward.clear();
  backward.clear();
  for (double t : micro_batch_s) {
    const double f = ref_s_ > 0 ? t / ref_s_ : 1;
    forward.push_back(windows_.forward * f);
    backward.push_back(windows_.backward * f);
  }
  return dp_.seconds(forward, backward);
}

MicroBatchPrice::Peak MicroBatchPrice::peak_memory(const MicroBatch& largest) const {
  Graph g;
  w_.graph_of(s_, opt_.software.attention, largest, g);
  if (placed_.empty()) return {peak_stage_memory(g, s_, opt_.software, layout_).total(), 0};
  // Each stage against the devices it runs on; the least headroom is reported.
  Peak worst;
  double ratio = -1;
  for (const ReplicaPlacement& r : placed_) {
    const double bytes = stage_memory(g, s_, opt_.software, layout_.span(r.stage), r.stage).total();
    const double capacity = c_.groups[static_cast<size_t>(r.group)].device.memory_bytes;
    if (bytes / capacity > ratio) ratio = bytes / capacity, worst = {bytes, capacity};
  }
  return worst;
}

double rank_seconds(const std::vector<MicroBatch>& mbs, const MicroBatchPrice& price) {
  thread_local std::vector<double> seconds;
  seconds.clear();
  for (const MicroBatch& mb : mbs) seconds.push_back(price.seconds(mb));
  return pipeline_time(seconds, price);
}

double pipeline_time(const std::vector<double>& seconds, const MicroBatchPrice& price) {
  if (seconds.empty()) return 0;
  return pipeline_seconds(price.shape(), seconds) + price.fill_correction();
}

int64_t padded(int64_t length, int cp, CpKind kind) {
  const int64_t pad = cp > 1 ? (kind == CpKind::ring ? 2 * cp : cp) : 1;
  return (length + pad - 1) / pad * pad;
}

Batches draw_batches(const Workload& w, int gbs, const VarlenOptions& o) {
  const auto max_len = static_cast<int64_t>(w.tokens_per_sample());
  std::mt19937_64 rng(o.seed);
  Batches b;
  for (int i = 0; i < o.batches; ++i) {
    auto& lengths = b.lengths.emplace_back();
    double tokens = 0, squared = 0;
    while (o.batch_tokens > 0 ? tokens < static_cast<double>(o.batch_tokens)
                              : static_cast<int>(lengths.size()) < gbs) {
      int64_t len = o.lengths.draw(rng);
      ++b.drawn;
      if (len > max_len) {
        if (o.long_sequences == LongSequences::drop) {
          ++b.dropped;
          if (b.dropped > 1000 * (b.drawn - b.dropped) + 100000)
            throw InputError(fmt::format(
                "fewer than 1 in 1000 drawn sequences fit the model's seq_len ({}); raise "
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
      lengths.push_back(o.pad_to > 1 ? (len + o.pad_to - 1) / o.pad_to * o.pad_to : len);
      b.longest_padded = std::max(b.longest_padded, lengths.back());
    }
    b.tokens.push_back(tokens);
    b.squared.push_back(squared);
  }
  return b;
}

VarlenEstimate summarise(const Workload& w, const Cluster& c, const Strategy& s, const Estimate& e0,
                         const Batches& batches, const BatchTimes& priced, double fixed_pipeline,
                         const MicroBatchPrice::Peak& peak) {
  std::vector<double> steps;
  for (size_t i = 0; i < priced.delta.size(); ++i)
    steps.push_back(e0.step_time_s + priced.delta[i] + priced.dp_delta[i]);
  const double mean_delta = mean(priced.delta), mean_dp_delta = mean(priced.dp_delta);

  VarlenEstimate out;
  out.estimate = e0;
  Estimate& e = out.estimate;
  e.strategy = s;
  e.step_time_s = e0.step_time_s + mean_delta + mean_dp_delta;
  out.step_times_s = steps;
  out.step_time_p10_s = percentile(steps, 0.1);
  out.step_time_p90_s = percentile(steps, 0.9);
  out.imbalance = mean(priced.imbalance);
  out.tokens_per_step = mean(batches.tokens);
  out.drawn = batches.drawn;
  out.dropped = batches.dropped;
  out.truncated = batches.truncated;
  out.longest = batches.longest;
  out.max_micro_batches = priced.max_micro_batches;
  // Throughput and FLOPs from the kept tokens: the fixed estimate's FLOPs scaled by the
  // workload's count of the drawn batches against the fixed batch's (1 when they are alike).
  const double fixed_flops = w.model_flops_of(
      s.gbs * w.tokens_per_sample(), s.gbs * w.tokens_per_sample() * w.tokens_per_sample());
  std::vector<double> flops;
  for (size_t i = 0; i < batches.tokens.size(); ++i)
    flops.push_back(w.model_flops_of(batches.tokens[i], batches.squared[i]) / fixed_flops);
  e.model_flops = e0.model_flops * mean(flops);
  const double gpus = c.total_gpus();
  e.tokens_per_s = out.tokens_per_step / e.step_time_s;
  e.tflops_per_gpu = e.model_flops / e.step_time_s / gpus / 1e12;
  // MFU against the fixed estimate's peak (every group's devices' dense 16-bit peak).
  e.mfu = e0.mfu * (e.model_flops / e0.model_flops) * (e0.step_time_s / e.step_time_s);
  // Memory: the largest micro-batch drawn, as if every one in flight were that large.
  if (peak.bytes > 0) {
    e.memory_per_gpu_bytes = peak.bytes;
    if (peak.capacity > 0) e.memory_capacity_bytes = peak.capacity;
    if (!e.memory.empty()) {
      const double fixed_total = e0.memory_per_gpu_bytes;
      for (auto& m : e.memory)
        if (m.name == "activations") m.bytes += e.memory_per_gpu_bytes - fixed_total;
    }
  }
  e.feasible = e.memory_per_gpu_bytes <= e.memory_capacity_bytes;
  e.reason = e.feasible ? ""
                        : fmt::format("needs {:.1f} GiB of {:.1f} GiB",
                                      e.memory_per_gpu_bytes / units::kGiB,
                                      e.memory_capacity_bytes / units::kGiB);
  // The breakdown: the pipeline's parts scaled to the mean slowest rank; data-parallel
  // communication the fixed plan's moved by its mean change, the optimizer the fixed plan's.
  if (fixed_pipeline > 0) {
    const double f = (fixed_pipeline + mean_delta) / fixed_pipeline;
    for (auto& part : e.time) {
      if (part.name == std::string("optimizer")) continue;
      double g = f;
      if (part.name == std::string("dp_comm"))
        g = part.seconds > 0 ? (part.seconds + mean_dp_delta) / part.seconds : 1;
      part.seconds *= g;
      for (auto& [origin, seconds] : part.sources) seconds *= g;
    }
  }
  return out;
}

void check_varlen(const Workload& w, const VarlenOptions& o, const EstimateOptions& opt) {
  if (o.batches < 1) throw InputError("--batches must be at least 1");
  // A step-time spread settles within a few thousand batches; past these a run only grows.
  if (o.batches > 100000)
    throw InputError(
        fmt::format("--batches {} is above 100000; the spread settles long before", o.batches));
  if (o.batch_tokens > (int64_t{1} << 26))
    throw InputError(fmt::format(
        "--batch-tokens {} is above {} tokens, four times the largest global batches trained "
        "(16M tokens, Llama 3)",
        o.batch_tokens, int64_t{1} << 26));
  const auto max_len = static_cast<int64_t>(w.tokens_per_sample());
  const bool at_seq_len = o.lengths.is_fixed() && o.lengths.min_length() == max_len;
  if (!at_seq_len && opt.software.attention != AttentionKernel::flash)
    throw InputError(fmt::format(
        "packed variable-length sequences need fused (varlen flash) attention; software "
        "preset '{}' has the unfused kernel",
        opt.software.name));
  if (o.lengths.min_length() > max_len && o.long_sequences == LongSequences::drop)
    throw InputError(
        fmt::format("every length of {} is above the model's seq_len ({}); raise seq_len or use "
                    "--long-seqs truncate",
                    o.lengths.describe(), max_len));
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

}  // namespace shardcost::varlen
