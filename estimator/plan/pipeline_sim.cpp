// Megatron's 1F1B schedule played out op by op (docs/variable-length.md, "Pipelines").
#include "pipeline_sim.h"

#include <algorithm>
#include <stdexcept>

namespace shardcost {
namespace {

struct Op {
  int micro_batch, chunk;
  bool forward;
};

// Device d's ops in order: warm-up forwards, then one forward and one backward in turn, then
// the cool-down backwards (Megatron's forward_backward_pipelining_*; with interleaving, the
// k-th forward runs chunk (k / pp) % vpp of micro-batch (k / (pp vpp)) pp + k % pp, the k-th
// backward the chunks in reverse).
std::vector<Op> device_ops(int d, int pp, int vpp, int m) {
  const int total = m * vpp;
  const int warmup = std::min(vpp == 1 ? pp - d - 1 : (pp - d - 1) * 2 + (vpp - 1) * pp, total);
  auto nth = [&](int k, bool forward) {
    const int group = k / pp % vpp;
    const int mb = vpp == 1 ? k : k / (pp * vpp) * pp + k % pp;
    return Op{mb, forward ? group : vpp - 1 - group, forward};
  };
  std::vector<Op> ops;
  ops.reserve(static_cast<size_t>(2 * total));
  for (int k = 0; k < warmup; ++k) ops.push_back(nth(k, true));
  for (int i = 0; i < total - warmup; ++i) {
    ops.push_back(nth(warmup + i, true));
    ops.push_back(nth(i, false));
  }
  for (int k = total - warmup; k < total; ++k) ops.push_back(nth(k, false));
  return ops;
}

}  // namespace

double pipeline_seconds(const PipelineShape& shape, const std::vector<double>& micro_batch_s) {
  const int pp = shape.pp, vpp = shape.vpp;
  if (pp <= 1) {
    double sum = 0;
    for (double t : micro_batch_s) sum += t;
    return sum;
  }
  std::vector<double> times = micro_batch_s;
  if (vpp > 1)
    while (times.size() % static_cast<size_t>(pp) != 0) times.push_back(0);
  const int m = static_cast<int>(times.size());
  if (m == 0) return 0;
  const int stages = pp * vpp;  // virtual stage v = chunk * pp + device
  auto share = [&](int d) {
    return shape.stage_share.empty() ? 1.0 : shape.stage_share[static_cast<size_t>(d)];
  };

  thread_local std::vector<std::vector<Op>> ops;
  ops.assign(static_cast<size_t>(pp), {});
  for (int d = 0; d < pp; ++d) ops[static_cast<size_t>(d)] = device_ops(d, pp, vpp, m);
  // End times of each (micro-batch, virtual stage) forward and backward; < 0: not yet run.
  thread_local std::vector<double> fwd_end, bwd_end;
  fwd_end.assign(static_cast<size_t>(m * stages), -1);
  bwd_end.assign(static_cast<size_t>(m * stages), -1);
  std::vector<size_t> next(static_cast<size_t>(pp), 0);
  std::vector<double> free_at(static_cast<size_t>(pp), 0);
  auto at = [&](int mb, int v) { return static_cast<size_t>(mb * stages + v); };

  size_t remaining = 0;
  for (const auto& list : ops) remaining += list.size();
  while (remaining > 0) {
    bool progressed = false;
    for (int d = 0; d < pp; ++d) {
      const auto du = static_cast<size_t>(d);
      while (next[du] < ops[du].size()) {
        const Op& op = ops[du][next[du]];
        const int v = op.chunk * pp + d;
        // Its input: the previous virtual stage's forward, the next one's backward (the last
        // stage's backward follows its own forward).
        double ready = 0;
        if (op.forward) {
          if (v > 0) ready = fwd_end[at(op.micro_batch, v - 1)];
        } else {
          ready =
              v + 1 < stages ? bwd_end[at(op.micro_batch, v + 1)] : fwd_end[at(op.micro_batch, v)];
        }
        if (ready < 0) break;  // waits for another device
        const double seconds = times[static_cast<size_t>(op.micro_batch)] * share(d) / vpp *
                               (op.forward ? shape.forward_share : 1 - shape.forward_share);
        const double end = std::max(ready, free_at[du]) + seconds;
        free_at[du] = end;
        (op.forward ? fwd_end : bwd_end)[at(op.micro_batch, v)] = end;
        ++next[du];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) throw std::logic_error("pipeline schedule deadlocked");
  }
  return *std::max_element(free_at.begin(), free_at.end());
}

}  // namespace shardcost
