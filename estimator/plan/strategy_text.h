#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/estimator.h"

namespace shardcost {
// Applies "key=value,..." onto s (throws InputError); returns the keys that were set.
std::vector<std::string> apply_strategy_text(std::string_view text, Strategy& s);
}  // namespace shardcost
