#pragma once
// How a graph's body units (layers, for most models) fall into pipeline stages, and the
// distinct kinds of stage a schedule has to price.
#include <algorithm>
#include <functional>
#include <vector>

#include "shardcost/strategy.h"
#include "shardcost/workload.h"

namespace shardcost {

// Body units [first_unit, first_unit + units) of one stage, and whether it is the first
// (input embedding) or last (head) stage.
struct StageSpan {
  int first_unit = 0, units = 0;
  bool first = false, last = false;
  // Local updates (PipeSchedule::local): a stage before the last holds an auxiliary loss, a
  // copy of the last stage's blocks (the head and the loss) with its own weights.
  bool aux_head = false;
  // The device also holds the first stage (DualPipe's pair of the first and last): the last
  // stage's tied copies of the first stage's tables are the first stage's, held once.
  bool shares_first = false;
};
// The span as the schedule runs it: with an auxiliary head under local updates.
inline StageSpan scheduled(StageSpan span, PipeSchedule schedule) {
  span.aux_head = schedule == PipeSchedule::local && !span.last;
  return span;
}

class StageLayout {
 public:
  // explicit_layers: per stage (a plan's); null or empty: the default split.
  StageLayout(int layers, int pp, const std::vector<int>* explicit_layers = nullptr);
  int pp() const { return pp_; }
  bool is_explicit() const { return explicit_ != nullptr; }
  // Default split: how many middle stages (1, 2, ...) hold one layer more than the rest.
  int middles_with_extra() const { return std::min(layers_ % pp_, std::max(0, pp_ - 2)); }
  int units(int stage) const;
  StageSpan span(int stage) const;

 private:
  int layers_, pp_;
  const std::vector<int>* explicit_ = nullptr;
  std::vector<int> prefix_;  // explicit layouts: first unit of each stage
};

// The layers per stage that make the slowest stage least, given each stage's seconds per
// micro-batch for any span (`seconds`: its body units, and the first and last stages' own
// blocks; more units never cost less). A stage between the ends holds at least one layer,
// vpp with interleaving; an end stage may hold none, or with interleaving at least vpp - 1
// (its embedding or head counting as one, as check_strategy counts them). The greedy fill
// from the last stage, each taking what fits under a bound, is optimal for contiguous
// min-max splits of costs monotone in their span, and leaves the first stages (which hold
// the most activations under 1F1B) what is over; the bound is bisected between the even
// split's slowest stage and zero, then bisected again for the stages not held at their
// least (so a heavy end stage at its fewest layers does not leave the others uneven under
// its pace); then neighbouring stages are evened out (each boundary
// where the slower of its two stages is least), so that stages the bound does not pin share
// the layers as evenly as their costs allow. Empty when no split holds the layers.
std::vector<int> min_max_stage_layers(int layers, int pp, int vpp,
                                      const std::function<double(const StageSpan&)>& seconds);

// Stages that price alike, with how many there are. Order: the first stage, the last, then
// the middle ones in rank order; with one body block, stages of equal size and position
// share a kind.
struct StageKind {
  StageSpan span;
  int count = 1;
};
void stage_kinds(const StageLayout&, bool uniform_body, std::vector<StageKind>& out);

// Calls f(block, copies) for each body block overlapping the span, in order.
template <class F>
void for_each_body(const Graph& g, const StageSpan& span, F&& f) {
  int unit = 0;
  const int lo = span.first_unit, hi = span.first_unit + span.units;
  for (const Block& b : g.blocks) {
    if (b.pin != Block::Pin::body) continue;
    const int from = std::max(unit, lo), to = std::min(unit + b.count, hi);
    if (to > from) f(b, to - from);
    unit += b.count;
  }
}

// Calls f(block, copies) for the span's first `units` body units (Strategy::offload's layers),
// in order, each block with the copies of it among them.
template <class F>
void for_each_leading_body(const Graph& g, const StageSpan& span, int units, F&& f) {
  for_each_body(g, span, [&](const Block& b, int copies) {
    const int n = std::min(units, copies);
    units -= n;
    if (n > 0) f(b, n);
  });
}

// Calls f(block) for the first- and last-stage blocks the span's stage holds, in order (the
// last stage's as an auxiliary head too).
template <class F>
void for_each_pinned(const Graph& g, const StageSpan& span, F&& f) {
  for (const Block& b : g.blocks)
    if ((b.pin == Block::Pin::first_stage && span.first) ||
        (b.pin == Block::Pin::last_stage && (span.last || span.aux_head)))
      f(b);
}

// One body block, repeated: every stage's body is that block times its units.
bool uniform_body(const Graph&);

}  // namespace shardcost
