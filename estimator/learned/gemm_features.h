#pragma once
// What a learned GEMM model sees: the shape against the device's roofline, tile and wave
// quantization for the tiles cuBLAS picks from, and the device's own figures, so that one
// model can price a device it has no rows of. The target is the efficiency against the
// roofline bound (log2), a physically bounded quantity, not raw time; the trees learn it
// relative to the analytic prior below.
#include <string>
#include <vector>

#include "shardcost/hardware.h"

namespace shardcost::learned {

// Seconds the roofline allows: max(FLOPs / dense peak of the type, bytes / HBM bandwidth),
// operands in the type (fp8 GEMMs write 16-bit outputs).
double gemm_roofline_seconds(const Device&, DType, const GemmShape&);

// An analytic prior the trees correct: a fixed launch cost of `c0_cycles` at the boost clock
// for each kernel the GEMM runs as (two where the best tiling splits K: cuBLAS reduces the
// splits in a kernel of their own), plus a soft maximum (power p) of the compute time at the
// catalog's GEMM efficiency times the best tile/wave/split-K quantization, and the memory
// time at the catalog's streaming efficiency. Two constants, fitted per model
// (docs/learned-models.md).
struct GemmPrior {
  double c0_cycles = 6000;
  double p = 3;
};
double gemm_prior_seconds(const Device&, DType, const GemmShape&, const GemmPrior&);
// Fits c0_cycles and p to rows (device, dtype, shape, seconds) in log space, robustly.
struct PriorRow {
  const Device* device;
  DType dtype;
  GemmShape shape;
  double seconds;
};
GemmPrior fit_gemm_prior(const std::vector<PriorRow>&);

const std::vector<std::string>& gemm_feature_names();
// Appends one row of gemm_feature_names().size() values.
void gemm_features(const Device&, DType, const GemmShape&, std::vector<float>& out);

}  // namespace shardcost::learned
