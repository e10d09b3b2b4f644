#pragma once
// Progress of long work on stderr: "shardcost: shard-tables: 1,200 of 20,000 tables placed
// (4 s)", once the work has run 2 s (SHARDCOST_PROGRESS_AFTER_S sets it: 0 for tests), then at
// most once a second, and when it ends. Lines, not carriage returns: logs read them too.
#include <string>

#include "shardcost/progress.h"

namespace shardcost::cli {

Progress progress_lines(std::string command);

}  // namespace shardcost::cli
