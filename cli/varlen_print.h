#pragma once
// What estimate adds for variable-length data: the distribution, the step's spread, the
// imbalance and the static baseline, as text and as JSON.
#include <nlohmann/json.hpp>

#include <string>

#include "shardcost/varlen.h"

namespace shardcost::cli {

std::string varlen_text(const VarlenEstimate&, const VarlenOptions&, const Strategy&);
// Adds the variable-length fields to an estimate's JSON.
void add_varlen_json(nlohmann::json&, const VarlenEstimate&, const VarlenOptions&);

}  // namespace shardcost::cli
