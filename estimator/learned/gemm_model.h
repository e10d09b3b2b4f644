#pragma once
// Learned GEMM models: gradient-boosted trees (XGBoost) over gemm_features(), predicting the
// log2 efficiency against the roofline for one device and data type. Fitted on the store's
// rows with k-fold and grouped cross-validation, saved as JSON in fitted_model.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gemm_features.h"
#include "records.h"
#include "shardcost/hardware.h"

namespace shardcost::learned {

struct GemmRow {
  GemmShape shape;
  double seconds = 0;
};

// The shapes a model was fitted on, per dimension (log2 bounds): inside them it is "learned",
// outside "extrapolated".
struct GemmDomain {
  double lo[4] = {0, 0, 0, 0}, hi[4] = {0, 0, 0, 0};  // m, n, k, batch
  bool contains(const GemmShape&) const;
};

struct GemmFit {
  std::string device;  // catalog device
  DType dtype = DType::bf16;
  size_t rows = 0;
  GemmPrior prior;  // the analytic part the trees correct
  std::vector<CrossValidation> cv;
  GemmDomain domain;
  std::string booster;                                // XGBoost's JSON model
  std::string to_json() const;                        // the fitted_model row's parameters_json
  static GemmFit from_json(const std::string& json);  // throws InputError on a bad record
};

// Fewer rows than this and no model is fitted (the caller says so and skips it).
inline constexpr size_t kMinGemmRows = 50;
inline constexpr const char* kGemmFitterVersion = "gemm-xgb-3";

// Deterministic: fixed seeds for the folds and the trees. The cross-validation folds and the
// final fit run on up to `threads` threads; the result is the same for any number.
GemmFit fit_gemm(const Device&, DType, const std::vector<GemmRow>&, int threads = 1);

class GemmModel {
 public:
  explicit GemmModel(const GemmFit&);
  GemmModel(GemmModel&&) noexcept;
  ~GemmModel();
  const GemmFit& fit() const { return fit_; }
  // Seconds for shapes on the fitted device (one call for many: XGBoost predicts in batches).
  std::vector<double> predict(const Device&, const std::vector<GemmShape>&) const;

 private:
  GemmFit fit_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardcost::learned

namespace shardcost::learned {

// For a device without a model of its own: the analytic prior alone, its two constants
// fitted over every device's rows of the type (trees do not carry across architectures: a
// split on a device feature copies one of the devices; docs/learned-models.md). Its answers
// are "extrapolated". Cross-validated by leaving each device out in turn.
struct PooledGemmPrior {
  DType dtype = DType::bf16;
  GemmPrior prior;
  std::vector<std::string> devices;  // catalog devices fitted on
  size_t rows = 0;
  std::vector<CrossValidation> cv;  // one per device left out
  std::string to_json() const;
  static PooledGemmPrior from_json(const std::string&);
};
struct DeviceRows {
  Device device;
  std::vector<GemmRow> rows;
};
PooledGemmPrior fit_pooled_gemm_prior(DType, const std::vector<DeviceRows>&);

}  // namespace shardcost::learned
