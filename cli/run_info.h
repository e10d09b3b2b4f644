#pragma once
// Where a stored run came from: the time now and this process's command line.
#include <cstdint>
#include <string>

namespace shardcost::cli {

int64_t now_ns();            // Unix epoch, nanoseconds
std::string command_line();  // /proc/self/cmdline, arguments joined by spaces

}  // namespace shardcost::cli
