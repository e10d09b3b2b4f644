#pragma once
// Learned embedding-bag costs: one model per stored device, pass, weight type and optimizer,
// fitted on bench embedding's rows. An analytic prior, a memory of two cache levels (the
// pass's bytes, costs/embedding_bytes.h, split into those each cache of fitted size serves,
// the hot rows under the access skew, and those memory serves) plus a cost per lookup and a
// fixed cost, all fitted; boosted trees (XGBoost) correct it from the configuration's features.
// docs/embeddings.md has the figures.
#include <optional>
#include <string>
#include <vector>

#include "records.h"
#include "shardcost/hardware.h"
#include "tree_ensemble.h"

namespace shardcost::learned {

struct EmbeddingRow {
  EmbeddingPass pass;
  double seconds = 0;
};

struct EmbeddingFit {
  std::string device;  // catalog device, or the stored name (a host CPU)
  bool backward = false;
  std::string dtype;      // as stored: fp32, bf16, fp16
  std::string optimizer;  // the backward's; "none" for the forward
  size_t rows = 0;
  // The prior: a fixed cost; seconds per byte served from a near cache of `near_bytes`, from a
  // far one of `far_bytes` and from memory beyond; seconds per lookup (index handling, the
  // backward's sort).
  double fixed_s = 0, near_s_per_byte = 0, far_s_per_byte = 0, miss_s_per_byte = 0;
  double lookup_s = 0, near_bytes = 0, far_bytes = 0;
  std::vector<CrossValidation> cv;
  // The configurations fitted on: log2 of rows, dim, pooling, batch; the skew as it is.
  double lo[5] = {}, hi[5] = {};
  std::string booster;  // XGBoost's JSON model
  std::optional<TreeEnsemble> trees;

  double prior_s(const EmbeddingPass&) const;
  // Seconds, and whether the pass lies inside the configurations fitted on.
  std::pair<double, bool> predict(const EmbeddingPass&) const;
  std::string to_json() const;
  static EmbeddingFit from_json(const std::string&);  // throws InputError on a bad record
};

inline constexpr size_t kMinEmbeddingRows = 20;
inline constexpr const char* kEmbeddingFitterVersion = "embedding-xgb-2";
// "backward bf16 rowwise_adagrad": a model's key.
std::string embedding_key(bool backward, const std::string& dtype, const std::string& optimizer);
// Bytes per element of a stored weight type (fp32 4, fp16/bf16 2), 0 when unknown.
int embedding_dtype_bytes(const std::string& dtype);

// Deterministic (fixed seeds). Throws InputError with fewer than kMinEmbeddingRows rows.
EmbeddingFit fit_embedding(const std::string& device, bool backward, const std::string& dtype,
                           const std::string& optimizer, const std::vector<EmbeddingRow>&);

}  // namespace shardcost::learned
