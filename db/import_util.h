#pragma once
// Small helpers the importers share.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardcost::db {

// The content id of a large file read in chunks: FNV-1a's mixing over 8-byte words in four
// independent lanes (32-byte blocks; the last partial block per byte), folded into one,
// "import-<kind>-<hash>-<size>". Not content_uuid's value: a kind uses one or the other.
class StreamHash {
 public:
  void update(std::string_view bytes);
  std::string uuid(std::string_view kind) const;

 private:
  void block(const unsigned char* b);
  uint64_t h_[4] = {1469598103934665603ull, 1469598103934665603ull ^ 1, 1469598103934665603ull ^ 2,
                    1469598103934665603ull ^ 3};
  uint64_t size_ = 0;
  unsigned char tail_[32] = {};
  size_t tail_n_ = 0;  // bytes of a block begun in the previous chunk
};

// The longest a measured time may be (a day, in µs): past it, or negative, or not finite, the
// number is not a time.
constexpr double kMaxDurationUs = 86400e6;
inline bool is_duration_us(double us) {
  return us >= 0 && us <= kMaxDurationUs;  // false for NaN too
}

// An input path that is no file to read, said in one line ("no such file", "it is a
// directory"); the caller's open says why a file that is there cannot be read.
void check_input_file(const std::string& path);

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
