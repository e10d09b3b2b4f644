#pragma once
// Step time from priced operators: each block priced once per micro-batch, stages summed from
// their blocks, the pipeline schedule (1F1B, interleaved) over the slowest stage, the
// data-parallel collectives in the compute windows that hide them, the optimizer step.
// Independent of the model family: it reads graphs.
#include <array>

#include "costs/pricing.h"
#include "placement.h"
#include "stages.h"

namespace shardcost {

enum Part {
  kComputeForward,
  kComputeBackward,
  kComputeRecompute,
  kTpComm,
  kCpComm,
  kEpComm,
  kPpComm,
  kBubble,
  kDpComm,
  kOptimizer,
  kPartCount
};
extern const char* const kPartNames[kPartCount];

// Seconds per part, with the weakest cost origin that contributed a non-zero time.
struct Times {
  std::array<double, kPartCount> s{};
  std::array<int, kPartCount> origin{};  // CostOrigin as int; kNone when nothing contributed
  // Of the communication parts, what runs during the backward pass (its own collectives and
  // a full recomputation's): with the backward and recompute compute, the window that
  // overlapped data-parallel reductions hide behind.
  double backward_comm = 0;
  static constexpr int kNone = 99;
  Times() { origin.fill(kNone); }
  void add_backward_comm(Part p, Priced x) {
    add(p, x);
    backward_comm += std::max(0.0, x.seconds);
  }
  void add(Part p, Priced x, double times = 1) {
    if (x.seconds <= 0) return;
    s[p] += x.seconds * times;
    origin[p] = std::min(origin[p], static_cast<int>(x.origin));
  }
  void add(const Times& o, double times) {
    backward_comm += o.backward_comm * times;
    for (int i = 0; i < kPartCount; ++i) {
      if (o.s[i] <= 0) continue;
      s[i] += o.s[i] * times;
      origin[i] = std::min(origin[i], o.origin[i]);
    }
  }
  double total() const {
    double t = 0;
    for (double x : s) t += x;
    return t;
  }
};

// Everything the schedule needs about one priced plan.
struct ScheduleInputs {
  const Graph& graph;
  const Strategy& strategy;
  const StageLayout& layout;
  const Software& software;
  const Placement& place;
  const Pricer& pricer;
};
// The step's seconds per part.
Times step_times(const ScheduleInputs&);

}  // namespace shardcost
