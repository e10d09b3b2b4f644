// The dense part of a recommendation model beside its tables: MLPs data-parallel on every GPU.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cost.h"
#include "shardcost/error.h"

namespace shardcost::embeddings {

DenseCost dense_cost(const CostModel& m, const ShardingOptions& o) {
  DenseCost d;
  const double rows = static_cast<double>(o.batch) / m.gpus();
  const double element = o.dense_dtype == DType::fp32 || o.dense_dtype == DType::tf32 ? 4 : 2;
  double activations = 0;
  for (size_t c = 0; c < o.dense_mlps.size(); ++c) {
    const auto& widths = o.dense_mlps[c];
    if (widths.size() < 2)
      throw InputError(
          fmt::format("--dense-mlp {}: give at least two layer widths (in,out,...)", c + 1));
    for (size_t l = 0; l + 1 < widths.size(); ++l) {
      const int64_t in = widths[l], out = widths[l + 1];
      if (in < 1 || out < 1)
        throw InputError(fmt::format("--dense-mlp {}: layer widths must be positive, not {}", c + 1,
                                     in < 1 ? in : out));
      const auto r = static_cast<int64_t>(std::max(1.0, std::round(rows)));
      d.compute_s += m.gemm_s({r, out, in, 1}, o.dense_dtype) +
                     m.gemm_s({r, in, out, 1}, o.dense_dtype) +
                     m.gemm_s({in, out, r, 1}, o.dense_dtype);
      d.parameters += static_cast<double>(in) * out + out;
      activations += rows * out * element * 2;  // the layer's output and its activation's
    }
  }
  // Weights, fp32 gradients and Adam's two fp32 moments, and what the backward keeps.
  d.memory_bytes = d.parameters * (element + 4 + 8) + activations;
  d.all_reduce_s = m.data_parallel_s(d.parameters * 4);
  return d;
}

}  // namespace shardcost::embeddings
