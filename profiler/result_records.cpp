#include "result_records.h"

#include <algorithm>

namespace shardcost::bench {
namespace {
double median_ns(const Measured& m) {
  return static_cast<double>(std::max<int64_t>(1, m.stats.median_ns));
}
}  // namespace

GemmResult gemm_result(const GemmShapeSpec& s, const std::string& dtype, const Measured& m,
                       int64_t checked_elements) {
  GemmResult r;
  r.shape = s;
  r.dtype = dtype;
  r.stats = m.stats;
  r.wrong = m.wrong;
  r.checked = checked_elements;
  const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) *
                       static_cast<double>(s.k) * static_cast<double>(s.batch);
  r.tflops = flops / median_ns(m) / 1e3;
  return r;
}

MemoryResult memory_result(const std::string& kind, int64_t bytes, const Measured& m) {
  MemoryResult r;
  r.kind = kind;
  r.bytes = bytes;
  r.stats = m.stats;
  r.wrong = m.wrong;
  r.bandwidth_gbps = static_cast<double>(r.bytes) / median_ns(m);
  return r;
}

EmbeddingResult embedding_result(const EmbeddingShape& s, const std::string& pass,
                                 const EmbeddingOptions& o, const Measured& m) {
  EmbeddingResult r;
  r.shape = s;
  r.pass = pass;
  r.dtype = o.dtype;
  r.optimizer = pass == "backward" ? o.optimizer : "none";
  r.stats = m.stats;
  r.wrong = m.wrong;
  r.lookups_per_s = static_cast<double>(s.batch) * s.pooling / median_ns(m) * 1e9;
  return r;
}

CollectiveResult collective_result(const CollectiveOptions& o, const std::string& op,
                                   const CollectiveLayout& layout, bool in_place, int ranks,
                                   const Measured& m) {
  CollectiveResult r;
  r.op = op;
  r.dtype = o.dtype;
  r.redop = (op == "all_reduce" || op == "reduce" || op == "reduce_scatter") ? o.redop : "none";
  r.root = (op == "broadcast" || op == "reduce") ? o.root : -1;
  r.bytes = layout.bytes;
  r.elements = layout.elements;
  r.in_place = in_place;
  r.stats = m.stats;
  r.wrong = m.wrong;
  r.algbw_gbps =
      static_cast<double>(r.bytes) / static_cast<double>(std::max<int64_t>(1, m.stats.median_ns));
  r.busbw_gbps = r.algbw_gbps * bus_factor(op, ranks);
  return r;
}

}  // namespace shardcost::bench
