#pragma once
// Small helpers the importers share.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardcost::db {

std::vector<std::string_view> split_ws(std::string_view line);
std::string_view trim(std::string_view s);
std::optional<int64_t> parse_int(std::string_view s);
std::optional<double> parse_real(std::string_view s);
// "2024-03-01 12:00:00" read as UTC, in ns since the epoch; 0 when it does not parse.
int64_t parse_time_ns(std::string_view s);
// nccl-tests program or collective names ("all_reduce_perf", "AllReduce", "alltoall")
// to the store's op names; empty when unknown.
std::string nccl_op_name(std::string_view name);
// The op a file name mentions ("results/allgather_8gpu.txt" -> all_gather), or empty.
std::string nccl_op_from_path(std::string_view path);
// NCCL_VERSION_CODE (22105) to "2.21.5".
std::string nccl_version_text(int64_t code);

}  // namespace shardcost::db
