#include "import_util.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>

#include "shardcost/error.h"
#include "shardcost/importers.h"

namespace shardcost::db {

std::vector<std::string_view> split_ws(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    const size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<int64_t> parse_int(std::string_view s) {
  s = trim(s);
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> parse_real(std::string_view s) {
  s = trim(s);
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

int64_t parse_time_ns(std::string_view s) {
  std::tm tm{};
  const std::string text(trim(s));
  if (sscanf(text.c_str(), "%d-%d-%d %d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
             &tm.tm_min, &tm.tm_sec) != 6)
    return 0;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm)) * 1000000000;
}

namespace {
// Squeezed names (no '_' or '-', lower case), longest first so "allreduce" wins over "reduce".
constexpr std::pair<std::string_view, std::string_view> kOps[] = {
    {"reducescatter", "reduce_scatter"},
    {"allreduce", "all_reduce"},
    {"allgather", "all_gather"},
    {"alltoallv", "all_to_all_v"},
    {"alltoall", "all_to_all"},
    {"hypercube", "hypercube"},
    {"broadcast", "broadcast"},
    {"sendrecv", "send_recv"},
    {"scatter", "scatter"},
    {"gather", "gather"},
    {"reduce", "reduce"},
};

std::string squeeze(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '_' && c != '-') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

std::string nccl_op_name(std::string_view name) {
  std::string s = squeeze(name);
  // The programs: all_reduce_perf, and all_reduce_perf_mpi as the MPI build names it.
  if (s.size() > 7 && s.substr(s.size() - 7) == "perfmpi") s.resize(s.size() - 7);
  if (s.size() > 4 && s.substr(s.size() - 4) == "perf") s.resize(s.size() - 4);
  for (const auto& [key, op] : kOps)
    if (s == key) return std::string(op);
  return "";
}

std::string nccl_op_from_path(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  const std::string base = squeeze(slash == std::string_view::npos ? path : path.substr(slash + 1));
  for (const auto& [key, op] : kOps)
    if (base.find(key) != std::string::npos) return std::string(op);
  return "";
}

std::string nccl_version_text(int64_t code) {
  if (code <= 0) return "";
  // NCCL_VERSION(X,Y,Z): X*1000+Y*100+Z before 2.9, X*10000+Y*100+Z since.
  const int64_t major = code >= 10000 ? code / 10000 : code / 1000;
  const int64_t minor = code >= 10000 ? (code % 10000) / 100 : (code % 1000) / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

void StreamHash::block(const unsigned char* b) {
  for (int lane = 0; lane < 4; ++lane) {
    uint64_t x;
    std::memcpy(&x, b + 8 * lane, 8);
    h_[lane] = (h_[lane] ^ x) * 1099511628211ull;
  }
}

void StreamHash::update(std::string_view bytes) {
  size_ += bytes.size();
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t i = 0;
  if (tail_n_ > 0) {
    while (tail_n_ < 32 && i < bytes.size()) tail_[tail_n_++] = p[i++];
    if (tail_n_ < 32) return;
    block(tail_);
    tail_n_ = 0;
  }
  for (; i + 32 <= bytes.size(); i += 32) block(p + i);
  for (; i < bytes.size(); ++i) tail_[tail_n_++] = p[i];
}

std::string StreamHash::uuid(std::string_view kind) const {
  uint64_t h = 1469598103934665603ull;
  for (uint64_t lane : h_) h = (h ^ lane) * 1099511628211ull;
  for (size_t i = 0; i < tail_n_; ++i) h = (h ^ tail_[i]) * 1099511628211ull;
  char hex[17];
  snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return "import-" + std::string(kind) + "-" + hex + "-" + std::to_string(size_);
}

void check_input_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec == std::errc::no_such_file_or_directory || !fs::exists(st))
    throw InputError("cannot read " + path + ": no such file; check the path");
  if (ec) throw InputError("cannot read " + path + ": " + ec.message());
  if (fs::is_directory(st)) throw InputError("cannot read " + path + ": it is a directory");
}

std::string read_input_file(const std::string& path) {
  check_input_file(path);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw InputError("cannot read " + path + ": " + std::strerror(errno));
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) text.append(buf, n);
  if (std::ferror(f.get())) throw InputError("cannot read " + path + ": a read error");
  return text;
}

std::optional<int64_t> step_number(std::string_view name, std::string_view prefix) {
  if (prefix.empty() || name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix)
    return std::nullopt;
  int64_t number = 0;
  const char* end = name.data() + name.size();
  const auto [ptr, ec] = std::from_chars(name.data() + prefix.size(), end, number);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return number;
}

std::string content_uuid(std::string_view kind, std::string_view text) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a, 64 bit
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return "import-" + std::string(kind) + "-" + hex + "-" + std::to_string(text.size());
}

}  // namespace shardcost::db
