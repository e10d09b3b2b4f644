#pragma once
// Seconds per part of a step, with the weakest cost origin that contributed to each: what
// block pricing and the schedule add up.
#include <algorithm>
#include <array>

#include "shardcost/hardware.h"

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

CostOrigin weakest_origin(const Times&);
inline Priced scaled(Priced p, double f) { return {p.seconds * f, p.origin}; }
// Both costs together, labelled with the weaker of their origins.
inline Priced combined(Priced a, Priced b) {
  return {a.seconds + b.seconds, static_cast<CostOrigin>(std::min(static_cast<int>(a.origin),
                                                                  static_cast<int>(b.origin)))};
}
// Communication hidden behind a compute window costs what outlasts the window, plus the
// compute the NCCL kernels' SMs would have done meanwhile.
inline Priced behind(Priced comm, Priced window, double sm_share) {
  const double hidden = std::min(comm.seconds, window.seconds);
  return {comm.seconds - hidden + hidden * sm_share, comm.origin};
}

}  // namespace shardcost
