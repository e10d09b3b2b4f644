#pragma once
// The kinds of fitted_model rows this shardcost writes and reads, and how fit reports them.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "records.h"
#include "shardcost/learned.h"

namespace shardcost::learned {

inline constexpr const char* kGemmKind = "gemm_efficiency";
inline constexpr const char* kPooledKind = "gemm_prior_pooled";
inline constexpr const char* kCollectiveKind = "collective_curves";
inline constexpr const char* kMemoryKind = "memory_curve";
inline constexpr const char* kKernelKind = "kernel_classes";
inline constexpr const char* kKernelKey = "by class";
inline constexpr const char* kEmbeddingKind = "embedding_lookup";

// "all_reduce intra_node": a collective model's key.
// "all_reduce intra_node"; between nodes with the ranks per node the curves were measured at:
// "all_reduce inter_node 8/node".
inline std::string collective_key(CollectiveOp op, FabricLevel level, int per_node = 0) {
  if (level == FabricLevel::inter_node && per_node > 0)
    return fmt::format("{} {} {}/node", to_string(op), to_string(level), per_node);
  return fmt::format("{} {}", to_string(op), to_string(level));
}

// The figures a fitted model carries, as fit reports them.
inline std::vector<FitReport::Validation> validations(const std::vector<CrossValidation>& cv) {
  std::vector<FitReport::Validation> out;
  for (const auto& c : cv) out.push_back({c.split, c.rows, c.median, c.p90, c.held_out});
  return out;
}

// "a100-sxm4-80gb+b200-sxm-180gb": the devices a pooled prior was fitted on.
inline std::string joined(const std::vector<std::string>& devices) {
  std::string out;
  for (const auto& d : devices) out += (out.empty() ? "" : "+") + d;
  return out;
}

}  // namespace shardcost::learned
