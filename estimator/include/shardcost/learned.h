#pragma once
// Learned cost models fitted on the store (shardcost fit) and the cost source that prices
// from them: inside the shapes a model was fitted on its answers are "learned", outside
// "extrapolated". docs/learned-models.md has the model families and their figures.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardcost/costs.h"
#include "shardcost/hardware.h"

namespace shardcost {
namespace learned {
struct CollectiveFit;
}

// What fitting one model did: its rows and cross-validation, or why it was skipped.
struct FitReport {
  std::string kind;    // gemm_efficiency, gemm_prior_pooled, collective_curves, memory_curve,
                       // kernel_classes, embedding_lookup
  std::string device;  // catalog device
  std::string
      key;  // GEMMs: the data type; collectives: "op level"; memory: the kind; kernels: "by class"
  size_t rows = 0;
  struct Validation {
    std::string split;
    size_t rows = 0;
    double median = 0, p90 = 0;                       // |relative error| of held-out time
    std::vector<std::pair<double, double>> held_out;  // some (measured, predicted) seconds
  };
  std::vector<Validation> cross_validation;
  std::string skipped;  // empty: fitted and saved
  std::vector<std::string>
      notes;  // what was left out of a fitted model (a curve with too few sizes)
};

// Fits a model per stored device and data type (gemm), op and fabric level (collective) or
// kind (memory) of the table ("all": every table with a model family) and saves each in the
// store's fitted_model, replacing the old one.
// device: only the stored devices that are this catalog device. threads: how many fits may run
// at once (0: one per hardware thread); the models do not depend on it.
std::vector<FitReport> fit_store(const std::string& store_path, std::string_view table,
                                 const std::optional<std::string>& device, int threads = 0);

class LearnedCosts : public CostSource {
 public:
  // The store's fitted models. A record that cannot be read is skipped and described in
  // `problems` (the next source prices what it would have).
  static LearnedCosts load(const std::string& store_path, std::vector<std::string>* problems);
  LearnedCosts(LearnedCosts&&) noexcept;
  LearnedCosts& operator=(LearnedCosts&&) noexcept;
  ~LearnedCosts() override;

  std::optional<Priced> gemm(const Device&, DType, const GemmShape&) const override;
  std::optional<Priced> collective(const Device&, CollectiveOp, double bytes,
                                   GroupShape) const override;
  std::optional<PriceBasis> collective_basis(const Device&, CollectiveOp, double bytes,
                                             GroupShape) const override;
  std::optional<Priced> memory(const Device&, std::string_view kind, double bytes) const override;
  std::optional<EmbeddingPriced> embedding(const Device&, const EmbeddingPass&) const override;
  // An embedding-bag pass on a device as the store names it (a host CPU) or a catalog device.
  std::optional<EmbeddingPriced> embedding(std::string_view device, const EmbeddingPass&) const;
  // A traced kernel's duration by name and launch (threads: blocks x threads per block, 0
  // not known) on a device as the store names it or a catalog device. look_up false: a
  // measured launch too is priced by its class's fit (what the report draws).
  std::optional<Priced> kernel(std::string_view device, std::string_view name, double threads,
                               bool look_up = true) const;
  size_t models() const;
  // The models it holds, with the figures they were fitted with (skipped stays empty).
  const std::vector<FitReport>& describe() const;

 private:
  const learned::CollectiveFit* collective_fit(const Device&, CollectiveOp, GroupShape) const;
  struct Impl;
  explicit LearnedCosts(std::unique_ptr<Impl>);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardcost
