#pragma once
// What estimate adds for variable-length data: the distribution, the step's spread, the
// imbalance and the static baseline, as text and as JSON.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "shardcost/varlen.h"

namespace shardcost::cli {

// The variable-length options of estimate, rank and report: a length file or a named
// distribution, the sampling.
struct VarlenArgs {
  std::string lengths_file, dist, long_seqs = "drop";
  uint64_t seed = 0;
  int batches = 100;
  int64_t batch_tokens = 0;
  int pad_to = 0;
  bool given() const { return !lengths_file.empty() || !dist.empty(); }
  VarlenOptions options() const;
};
void add_varlen_options(CLI::App*, VarlenArgs&);

std::string varlen_text(const VarlenEstimate&, const VarlenOptions&, const Strategy&);
// Adds the variable-length fields to an estimate's JSON.
void add_varlen_json(nlohmann::json&, const VarlenEstimate&, const VarlenOptions&);

}  // namespace shardcost::cli
