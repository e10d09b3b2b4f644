#pragma once
// Long work says how far it has got: a planner calls its Progress with what it counts, how many
// it has done and of how many; the command line says it on stderr (cli/progress.cpp). An empty
// one says nothing, and the work is the same either way.
#include <cstdint>
#include <functional>
#include <string_view>

namespace shardcost {

using Progress = std::function<void(std::string_view what, int64_t done, int64_t total)>;

inline void tick(const Progress& p, std::string_view what, int64_t done, int64_t total) {
  if (p) p(what, done, total);
}

}  // namespace shardcost
