#pragma once
// What a learned GEMM model sees: the shape against the device's roofline, tile and wave
// quantization for the tiles cuBLAS picks from, and the device's own figures, so that one
// model can price a device it has no rows of. The target is the efficiency against the
// roofline bound (log2), a physically bounded quantity, not raw time.
#include <string>
#include <vector>

#include "shardcost/hardware.h"

namespace shardcost::learned {

// Seconds the roofline allows: max(FLOPs / dense peak of the type, bytes / HBM bandwidth),
// operands in the type (fp8 GEMMs write 16-bit outputs).
double gemm_roofline_seconds(const Device&, DType, const GemmShape&);

const std::vector<std::string>& gemm_feature_names();
// Appends one row of gemm_feature_names().size() values.
void gemm_features(const Device&, DType, const GemmShape&, std::vector<float>& out);

}  // namespace shardcost::learned
