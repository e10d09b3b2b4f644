#pragma once
// What estimate adds for variable-length data: the distribution, the step's spread, the
// imbalance and the static baseline, as text (the JSON: shardcost/request.h).
#include <CLI/CLI.hpp>
#include <string>

#include "shardcost/request.h"

namespace shardcost::cli {

// The variable-length options of estimate, rank and report: a length file or a named
// distribution, the sampling.
void add_varlen_options(CLI::App*, VarlenRequest&);

std::string varlen_text(const VarlenEstimate&, const VarlenOptions&, const Strategy&);

}  // namespace shardcost::cli
