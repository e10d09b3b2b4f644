// Statistics, size parsing and nccl-tests' bandwidth definitions: pure functions.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>

#include "shardcost/error.h"
#include "shardcost/profiler.h"

namespace shardcost::bench {
namespace {

// Nearest-rank percentile of sorted samples, interpolating between neighbours.
int64_t percentile(const std::vector<int64_t>& sorted, double p) {
  const double pos = p * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return static_cast<int64_t>(std::llround(static_cast<double>(sorted[lo]) * (1 - frac) +
                                           static_cast<double>(sorted[hi]) * frac));
}

}  // namespace

Stats summarize(std::vector<int64_t> samples) {
  Stats s;
  if (samples.empty()) return s;
  s.samples_ns = samples;
  std::sort(samples.begin(), samples.end());
  s.iterations = static_cast<int64_t>(samples.size());
  s.min_ns = samples.front();
  s.max_ns = samples.back();
  s.median_ns = percentile(samples, 0.5);
  s.p10_ns = percentile(samples, 0.1);
  s.p90_ns = percentile(samples, 0.9);
  const double sum = std::accumulate(samples.begin(), samples.end(), 0.0);
  s.mean_ns = sum / static_cast<double>(samples.size());
  double var = 0;
  for (const int64_t x : samples)
    var += (static_cast<double>(x) - s.mean_ns) * (static_cast<double>(x) - s.mean_ns);
  var /= static_cast<double>(samples.size());
  s.cv = s.mean_ns > 0 ? std::sqrt(var) / s.mean_ns : 0;
  return s;
}

int64_t parse_size(std::string_view text) {
  const auto bad = [&](const char* why) {
    return InputError(
        fmt::format("invalid size '{}': {}; use a byte count with an optional "
                    "K, M or G suffix, e.g. 64K or 1G",
                    text, why));
  };
  if (text.empty()) throw bad("empty");
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr == text.data()) throw bad("not a number");
  std::string_view rest(ptr, static_cast<size_t>(text.data() + text.size() - ptr));
  if (!rest.empty() && (rest.back() == 'B' || rest.back() == 'b')) rest.remove_suffix(1);
  int shift = 0;
  if (rest.size() == 1) {
    switch (std::toupper(static_cast<unsigned char>(rest[0]))) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      case 'T':
        shift = 40;
        break;
      default:
        throw bad("unknown suffix");
    }
  } else if (!rest.empty()) {
    throw bad("unknown suffix");
  }
  if (value <= 0) throw bad("must be positive");
  if (value > (std::numeric_limits<int64_t>::max() >> shift)) throw bad("too large");
  return value << shift;
}

std::vector<int64_t> size_sweep(int64_t begin, int64_t end, int64_t factor) {
  if (begin <= 0 || end < begin)
    throw InputError(fmt::format("size range {}..{} is empty; -e must be at least -b", begin, end));
  if (factor < 2 && begin != end)
    throw InputError(fmt::format("-f {} must be 2 or more for a sweep", factor));
  std::vector<int64_t> sizes;
  for (int64_t s = begin; s <= end; s *= factor) {
    sizes.push_back(s);
    if (factor < 2 || s > std::numeric_limits<int64_t>::max() / factor) break;
  }
  return sizes;
}

double bus_factor(std::string_view op, int ranks) {
  if (ranks < 1) throw InputError(fmt::format("rank count {} must be positive", ranks));
  const double n = ranks;
  if (op == "all_reduce") return 2 * (n - 1) / n;
  if (op == "all_gather" || op == "reduce_scatter" || op == "all_to_all") return (n - 1) / n;
  if (op == "broadcast" || op == "reduce" || op == "send_recv") return 1;
  throw InputError(fmt::format("unknown collective '{}'; use one of: {}", op,
                               fmt::join(collective_ops(), ", ")));
}

const std::vector<std::string>& collective_ops() {
  static const std::vector<std::string> ops = {"all_reduce", "all_gather", "reduce_scatter",
                                               "broadcast",  "reduce",     "all_to_all",
                                               "send_recv"};
  return ops;
}

std::string canonical_collective(std::string_view op) {
  if (op == "alltoall") return "all_to_all";
  if (op == "sendrecv") return "send_recv";
  return std::string(op);
}

}  // namespace shardcost::bench
