#pragma once
// GEMM shapes and sizes from the command line or CSV files (predict, bench),
// with errors that name the file, the line and the column.
#include <cstdint>
#include <string>
#include <vector>

#include "shardcost/hardware.h"
#include "shardcost/profiler.h"

namespace shardcost::cli {

// "MxNxK" or "MxNxKxB" (sizes may carry K/M/G suffixes).
GemmShape parse_shape(const std::string& text);
// A CSV file with a header naming m, n, k and optionally batch (other columns ignored).
std::vector<GemmShape> read_shapes_csv(const std::string& path);
// A CSV file with a header naming bytes (other columns ignored).
std::vector<int64_t> read_sizes_csv(const std::string& path);

// "16" for a flag that needs a whole number above 0; else an InputError naming the flag.
int64_t positive_int(const std::string& text, const char* flag);
// The sizes of -b BEGIN -e END -f FACTOR (K/M/G suffixes): without -b, default_begin to
// default_end; -b alone is one size.
std::vector<int64_t> size_sweep_of(const std::string& begin, const std::string& end,
                                   const std::string& factor, const char* default_begin,
                                   const char* default_end);

// "a,b,,c" -> a, b, c: a comma-separated list, empty items dropped.
std::vector<std::string> split_commas(const std::string& text);
// "1024,4096" or a range "1K:8K:2" (begin:end:factor); K/M/G suffixes.
std::vector<int64_t> size_list(const std::string& spec, const char* flag);
// "0,1.05,1.2": non-negative numbers; else an InputError naming the flag.
std::vector<double> number_list(const std::string& spec, const char* flag);

// The embedding-bag configurations of bench embedding and predict embedding: every
// (rows, dim, pooling, batch, zipf) of the lists, or each table of a tables file at each batch.
struct EmbeddingGrid {
  std::string rows, dim, pooling, batch, zipf;
  std::string tables;  // a tables file: its tables instead of rows, dim, pooling and zipf
  // > 0: this many configurations drawn between each list's least and greatest value (a Latin
  // hypercube, log scale; the skew linear; the ends included), seeded, instead of every
  // combination: a space-filling design whose points differ in every dimension, which the
  // learned model interpolates better than a lattice.
  int sample = 0;
  uint64_t seed = 1;
};
std::vector<bench::EmbeddingShape> embedding_grid(const EmbeddingGrid&);

}  // namespace shardcost::cli
