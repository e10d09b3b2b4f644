#pragma once
// Seconds per part of a step, with the weakest cost origin that contributed to each: what
// block pricing and the schedule add up.
#include <algorithm>
#include <array>
#include <vector>

#include "shardcost/hardware.h"

namespace shardcost {

enum Part {
  kComputeForward,
  kComputeBackward,
  kComputeRecompute,
  kHostLaunch,
  kTpComm,
  kCpComm,
  kEpComm,
  kPpComm,
  kReshard,
  kBubble,
  kDpComm,
  kOptimizer,
  kPartCount
};
extern const char* const kPartNames[kPartCount];

// CostOrigin's values a kernel or collective can be priced from (calibrated applies to whole
// parts of a finished estimate, never inside pricing).
inline constexpr size_t kOriginCount = 5;

// Seconds with the share each cost origin priced: what combining prices keeps, so that a
// part priced half from measurements says so instead of taking its weakest origin's name.
struct Cost {
  double seconds = 0;
  std::array<double, kOriginCount> by{};  // seconds per CostOrigin, summing to seconds
  Cost() = default;
  Cost(Priced p) : seconds(p.seconds) { by[static_cast<size_t>(p.origin)] = p.seconds; }  // NOLINT
  // This cost's origins, rescaled to `total` seconds.
  Cost as(double total) const {
    Cost c;
    c.seconds = total;
    if (seconds > 0)
      for (size_t i = 0; i < kOriginCount; ++i) c.by[i] = by[i] * (total / seconds);
    return c;
  }
  // The origin that priced most of it; catalog when nothing did.
  CostOrigin main_origin() const;
};

inline Cost scaled(const Cost& c, double f) {
  Cost out = c;
  out.seconds *= f;
  for (double& x : out.by) x *= f;
  return out;
}
// Both costs together.
inline Cost combined(const Cost& a, const Cost& b) {
  Cost out;
  out.seconds = a.seconds + b.seconds;
  for (size_t i = 0; i < kOriginCount; ++i) out.by[i] = a.by[i] + b.by[i];
  return out;
}
// Communication hidden behind `window` seconds of compute costs what outlasts the window,
// plus the compute the NCCL kernels' SMs would have done meanwhile; for one source's answer
// and for a sum of several.
inline Priced behind(Priced comm, double window, double sm_share) {
  const double hidden = std::min(comm.seconds, window);
  return {comm.seconds - hidden + hidden * sm_share, comm.origin};
}
inline Cost behind(const Cost& comm, double window, double sm_share) {
  const double hidden = std::min(comm.seconds, window);
  return comm.as(comm.seconds - hidden + hidden * sm_share);
}

// Seconds per part and the origins that priced them.
struct Times {
  std::array<double, kPartCount> s{};
  // Seconds per origin of each part, kept only when tracking (estimates with a breakdown):
  // searches price totals and copy these often.
  std::vector<std::array<double, kOriginCount>> by;
  bool tracking() const { return !by.empty(); }
  void track() { by.assign(kPartCount, {}); }
  // Of the communication parts, what runs during the backward pass (its own collectives and
  // a full recomputation's): with the backward and recompute compute, the window that
  // overlapped data-parallel reductions hide behind.
  double backward_comm = 0;
  // Of kComputeBackward, the weight-gradient GEMMs' seconds (what a zero-bubble schedule such
  // as DualPipe defers to fill its bubble).
  double wgrad = 0;
  // The pace-setting stage's seconds per micro-batch: what step_times sets on the step it
  // returns (variable-length pricing scales it per micro-batch).
  double micro_batch_s = 0;
  // dp_sync=async or local: every data-parallel collective of a step, hidden or not (what one
  // exchange of gradients or parameters takes), and async's staleness in updates.
  double dp_exchange_s = 0;
  int dp_staleness = 0;
  void add_backward_comm(Part p, Priced x) {
    add(p, x);
    backward_comm += std::max(0.0, x.seconds);
  }
  void add(Part p, Priced x, double times = 1) {
    if (x.seconds <= 0) return;
    s[p] += x.seconds * times;
    if (tracking()) by[p][static_cast<size_t>(x.origin)] += x.seconds * times;
  }
  // Two answers that make one time (a GEMM's backward: its two GEMMs), each keeping its origin.
  void add(Part p, Priced a, Priced b) {
    const double sum = a.seconds + b.seconds;
    if (sum <= 0) return;
    s[p] += sum;
    if (tracking()) {
      by[p][static_cast<size_t>(a.origin)] += a.seconds;
      by[p][static_cast<size_t>(b.origin)] += b.seconds;
    }
  }
  void add(Part p, const Cost& x, double times = 1) {
    if (x.seconds <= 0) return;
    s[p] += x.seconds * times;
    if (tracking())
      for (size_t i = 0; i < kOriginCount; ++i) by[p][i] += x.by[i] * times;
  }
  void add(const Times& o, double times) {
    backward_comm += o.backward_comm * times;
    wgrad += o.wgrad * times;
    for (int i = 0; i < kPartCount; ++i) {
      if (o.s[i] <= 0) continue;
      s[i] += o.s[i] * times;
      if (tracking() && o.tracking())
        for (size_t k = 0; k < kOriginCount; ++k) by[i][k] += o.by[i][k] * times;
    }
  }
  double total() const {
    double t = 0;
    for (double x : s) t += x;
    return t;
  }
  // Part p as a cost (its seconds and origins); all parts together for p = kPartCount.
  Cost part(int p) const;
  // Part p's seconds (and origins) times f.
  void scale(Part p, double f) {
    s[p] *= f;
    if (tracking())
      for (double& x : by[p]) x *= f;
  }
};

}  // namespace shardcost
