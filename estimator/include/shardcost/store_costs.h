#pragma once
// A CostSource backed by the cost store. The measurements are loaded once into memory, so
// pricing many thousands of candidates never touches SQL.
//
// Collectives: matched by op, fabric level and device, on the measured bus-bandwidth curve
// (busbw against log size). The exact rank count is preferred; otherwise the curve of the
// nearest rank count, since busbw is defined to be rank-independent (then "interpolated").
// A measured size gives the measured time ("measured"); between sizes busbw is interpolated
// linearly in log(size); below the smallest size the time of the smallest message is taken
// (latency floor), above the largest the largest size's busbw (bandwidth plateau); all three
// are "interpolated". time = bytes * busbw_factor / busbw.
// GEMMs: an exact shape is "measured"; otherwise TFLOP/s is interpolated in log(dim) between
// measured shapes that share the other two dimensions and the batch ("interpolated").
// Outside the measured range of a GEMM family there is no answer (efficiency varies too much
// with shape to extrapolate): the catalog prices it.
// Memory operations: by device and kind; a measured size is "measured", between sizes time is
// interpolated in log-log, below the range the smallest size's time, above it the largest
// size's bandwidth ("interpolated").
// Devices match by name: lower case, without "NVIDIA", punctuation as '-'; equal names, or
// the same model token (h100) and the same memory size token (80gb) where both name one.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/costs.h"
#include "shardcost/hardware.h"

namespace shardcost {

struct CollectiveSample {
  std::string device;
  CollectiveOp op = CollectiveOp::all_reduce;
  int ranks = 0;
  FabricLevel level = FabricLevel::intra_node;
  double bytes = 0;
  double seconds = 0;
  int nodes = 1;  // the nodes the ranks spanned (nccl-tests' hosts)
};
struct GemmSample {
  std::string device;
  DType dtype = DType::bf16;
  GemmShape shape;
  double seconds = 0;
};

// The store's measurements as two cost sources over one index, built once per process:
// measured() answers exact points only (origin "measured"), interpolated() the points between
// and beyond them (origin "interpolated"). A chain asks them in that order, then learned
// models, then the catalog; StoreCosts itself is that pair in order.
struct MemorySample {
  std::string device;
  std::string kind;
  double bytes = 0;
  double seconds = 0;
};

class StoreCosts : public CostSource {
 public:
  StoreCosts(const std::vector<CollectiveSample>&, const std::vector<GemmSample>&,
             const std::vector<MemorySample>& = {});
  // Reads every collective and GEMM measurement of the store at path (read-only).
  static StoreCosts load(const std::string& path);

  const CostSource& measured() const { return *measured_; }
  const CostSource& interpolated() const { return *interpolated_; }

  std::optional<Priced> gemm(const Device&, DType, const GemmShape&) const override;
  std::optional<Priced> collective(const Device&, CollectiveOp, double bytes,
                                   GroupShape) const override;
  std::optional<PriceBasis> collective_basis(const Device&, CollectiveOp, double bytes,
                                             GroupShape) const override;
  std::optional<Priced> memory(const Device&, std::string_view kind, double bytes) const override;
  size_t collective_curves() const;
  size_t gemm_shapes() const;

  struct Index;  // costs/store_index.h

 private:
  std::shared_ptr<const Index> index_;
  std::shared_ptr<const CostSource> measured_, interpolated_;
  CostChain both_;  // measured, then interpolated
};

// "NVIDIA A100-SXM4-80GB" -> "a100-sxm4-80gb"
std::string normalize_device_name(std::string_view);
// Whether two names (any spelling) are the same device: equal once normalised, or the same
// model token with the same memory size where both name one.
bool same_device_name(std::string_view a, std::string_view b);
// The catalog device a stored device name (as a driver or a tool reports it) is, if any.
std::optional<Device> catalog_device_for(std::string_view stored_name);

}  // namespace shardcost
