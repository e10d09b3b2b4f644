#pragma once
// Result records built from one measurement, shared by the host and CUDA backends so that
// FLOP and bandwidth arithmetic lives in one place.
#include <cstdint>
#include <string>
#include <utility>

#include "collective_check.h"
#include "harness.h"
#include "shardcost/profiler.h"

namespace shardcost::bench {

// TFLOP/s = 2·m·n·k·batch / median.
GemmResult gemm_result(const GemmShapeSpec&, const std::string& dtype, const Measured&,
                       int64_t checked_elements);
// GB/s = bytes / median (1e9 B/s).
MemoryResult memory_result(const std::string& kind, int64_t bytes, const Measured&);
// Lookups per second = batch x pooling / median; the optimizer named only for the backward.
EmbeddingResult embedding_result(const EmbeddingShape&, const std::string& pass,
                                 const EmbeddingOptions&, const Measured&);
// nccl-tests' algbw and busbw; redop and root kept only for the ops that use them.
CollectiveResult collective_result(const CollectiveOptions&, const std::string& op,
                                   const CollectiveLayout&, bool in_place, int ranks,
                                   const Measured&);

// Hands the report's last result, alone, to the checkpoint (when there is one): called by every
// benchmark right after it keeps a result. The report is left as it was, even on an exception.
template <typename Report>
void checkpoint_last(const Checkpoint& checkpoint, Report& report) {
  if (!checkpoint || report.results.empty()) return;
  auto all = std::move(report.results);
  db::Measurements one;
  try {
    report.results.assign(1, all.back());
    append(one, report);
  } catch (...) {
    report.results = std::move(all);
    throw;
  }
  report.results = std::move(all);
  int rank = 0, ranks = 1;
  if constexpr (requires { report.ranks; }) rank = report.rank, ranks = report.ranks;
  checkpoint(Finished{one, rank, ranks});
}

}  // namespace shardcost::bench
