#pragma once
// GEMM shapes and sizes from the command line or CSV files (predict, bench gemm),
// with errors that name the file, the line and the column.
#include <cstdint>
#include <string>
#include <vector>

#include "shardcost/hardware.h"

namespace shardcost::cli {

// "MxNxK" or "MxNxKxB" (sizes may carry K/M/G suffixes).
GemmShape parse_shape(const std::string& text);
// A CSV file with a header naming m, n, k and optionally batch (other columns ignored).
std::vector<GemmShape> read_shapes_csv(const std::string& path);
// A CSV file with a header naming bytes (other columns ignored).
std::vector<int64_t> read_sizes_csv(const std::string& path);

}  // namespace shardcost::cli
