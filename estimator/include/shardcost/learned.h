#pragma once
// Learned cost models fitted on the store (shardcost fit) and the cost source that prices
// from them: inside the shapes a model was fitted on its answers are "learned", outside
// "extrapolated". docs/learned-models.md has the model families and their figures.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/costs.h"
#include "shardcost/hardware.h"

namespace shardcost {

// What fitting one model did: its rows and cross-validation, or why it was skipped.
struct FitReport {
  std::string kind;    // gemm_efficiency
  std::string device;  // catalog device
  std::string key;     // the data type for GEMMs
  size_t rows = 0;
  struct Validation {
    std::string split;
    size_t rows = 0;
    double median = 0, p90 = 0;  // |relative error| of held-out time
  };
  std::vector<Validation> cross_validation;
  std::string skipped;  // empty: fitted and saved
};

// Fits a model per stored device and data type of the table ("gemm"; "all" = every table
// with a model family) and saves each in the store's fitted_model, replacing the old one.
// device: only the stored devices that are this catalog device.
std::vector<FitReport> fit_store(const std::string& store_path, std::string_view table,
                                 const std::optional<std::string>& device);

class LearnedCosts : public CostSource {
 public:
  // The store's fitted models. A record that cannot be read is skipped and described in
  // `problems` (the next source prices what it would have).
  static LearnedCosts load(const std::string& store_path, std::vector<std::string>* problems);
  LearnedCosts(LearnedCosts&&) noexcept;
  LearnedCosts& operator=(LearnedCosts&&) noexcept;
  ~LearnedCosts() override;

  std::optional<Priced> gemm(const Device&, DType, const GemmShape&) const override;
  std::optional<Priced> collective(const Device&, CollectiveOp, double, int, FabricLevel) const override {
    return std::nullopt;
  }
  size_t models() const;
  // The models it holds, with the figures they were fitted with (skipped stays empty).
  const std::vector<FitReport>& describe() const;

 private:
  struct Impl;
  explicit LearnedCosts(std::unique_ptr<Impl>);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardcost
