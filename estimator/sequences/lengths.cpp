// Sequence-length distributions: a measured sample read from a file (plain or gzip), or a
// named parametric form; draws from the generator's raw 64-bit output only, so a seed gives
// the same lengths with any standard library.
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <memory>

#include "shardcost/error.h"
#include "shardcost/varlen.h"

namespace shardcost {
namespace {

constexpr int64_t kUnbounded = int64_t{1}
                               << 40;  // a lognormal without max: no sequence is this long

// Lines of a text file, gzip or not (zlib reads plain files as they are).
class Lines {
 public:
  explicit Lines(const std::string& path)
      : path_(path), file_(gzopen(path.c_str(), "rb"), &gzclose) {
    if (!file_)
      throw InputError(fmt::format("{}: cannot open the lengths file; check the path", path));
  }
  bool next(std::string& line) {
    line.clear();
    char buf[4096];
    while (gzgets(file_.get(), buf, sizeof buf)) {
      line += buf;
      if (!line.empty() && line.back() == '\n') break;
    }
    int err = Z_OK;
    const char* msg = gzerror(file_.get(), &err);
    if (err != Z_OK && err != Z_STREAM_END)
      throw InputError(fmt::format("{}: cannot be read ({}); is it a damaged .gz?", path_,
                                   msg ? msg : "zlib error"));
    if (line.empty()) return false;
    ++number_;
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ' ||
                             line.back() == '\t'))
      line.pop_back();
    return true;
  }
  size_t number() const { return number_; }

 private:
  std::string path_;
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file_;
  size_t number_ = 0;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <typename T>
bool whole(std::string_view s, T& out) {
  s = trim(s);
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    const size_t at = s.find(sep);
    out.push_back(trim(s.substr(0, at)));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

// A uniform double in (0, 1) from the generator's top 53 bits.
double unit(std::mt19937_64& rng) {
  return ((rng() >> 11) + 0.5) * 0x1.0p-53;
}
// A uniform integer in [0, n): the raw draw modulo n, redrawn in the short biased tail.
uint64_t below(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x = rng();
  while (x >= limit) x = rng();
  return x % n;
}

}  // namespace

LengthDistribution LengthDistribution::fixed(int64_t length) {
  if (length < 1)
    throw InputError(fmt::format("fixed:{}: a length must be at least 1 token", length));
  LengthDistribution d;
  d.kind_ = Kind::fixed;
  d.min_ = d.max_ = length;
  d.source_ = fmt::format("fixed:{}", length);
  return d;
}

LengthDistribution LengthDistribution::load(const std::string& path) {
  Lines in(path);
  std::map<int64_t, uint64_t> counts;
  std::string line;
  int length_col = -1, count_col = -1;
  size_t columns = 1;
  bool first = true;
  while (in.next(line)) {
    const std::string_view l = trim(line);
    if (l.empty() || l.front() == '#') continue;
    const auto cells = split(l, ',');
    if (first) {
      first = false;
      if (l.find_first_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") !=
          std::string_view::npos) {
        for (size_t i = 0; i < cells.size(); ++i) {
          if (cells[i] == "length") length_col = static_cast<int>(i);
          if (cells[i] == "count") count_col = static_cast<int>(i);
        }
        if (length_col < 0)
          throw InputError(
              fmt::format("{}:{}: the header names no 'length' column; write one length per "
                          "line, or a CSV header length,count",
                          path, in.number()));
        columns = cells.size();
        continue;
      }
    }
    if (cells.size() != columns)
      throw InputError(fmt::format("{}:{}: {} fields where the {} has {}", path, in.number(),
                                   cells.size(), columns == 1 ? "file" : "header", columns));
    int64_t length = 0;
    const std::string_view lc = cells[length_col < 0 ? 0 : static_cast<size_t>(length_col)];
    if (!whole(lc, length))
      throw InputError(
          fmt::format("{}:{}: '{}' is not a whole number of tokens", path, in.number(), lc));
    if (length < 1)
      throw InputError(
          fmt::format("{}:{}: length {} must be at least 1 token", path, in.number(), length));
    uint64_t count = 1;
    if (count_col >= 0 && !whole(cells[static_cast<size_t>(count_col)], count))
      throw InputError(fmt::format("{}:{}: count '{}' is not a whole number", path, in.number(),
                                   cells[static_cast<size_t>(count_col)]));
    if (count == 0) continue;
    uint64_t& slot = counts[length];
    if (slot > UINT64_MAX - count)
      throw InputError(fmt::format("{}:{}: the counts overflow", path, in.number()));
    slot += count;
  }
  if (counts.empty())
    throw InputError(fmt::format("{}: holds no lengths; one length per line", path));
  LengthDistribution d;
  d.kind_ = Kind::sample;
  d.source_ = path;
  uint64_t total = 0;
  for (const auto& [length, count] : counts) {
    if (total > (uint64_t{1} << 62) - count)
      throw InputError(fmt::format("{}: the counts overflow", path));
    total += count;
    d.values_.push_back(length);
    d.cumulative_.push_back(total);
  }
  d.min_ = d.values_.front();
  d.max_ = d.values_.back();
  return d;
}

LengthDistribution LengthDistribution::parse(std::string_view spec) {
  const size_t colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  const std::string_view rest =
      colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
  auto fail = [&](const std::string& why) {
    return InputError(
        fmt::format("--seq-dist '{}': {}; e.g. lognormal:median=1024,sigma=1.5,min=128,max=8192, "
                    "uniform:min=128,max=8192 or fixed:4096",
                    spec, why));
  };
  if (kind == "fixed") {
    int64_t n = 0;
    if (!whole(rest, n) || n < 1) throw fail("fixed needs a length of at least 1 token");
    return fixed(n);
  }
  if (kind != "lognormal" && kind != "uniform") throw fail(fmt::format("unknown form '{}'", kind));
  std::map<std::string, double> p;
  for (const auto item : split(rest, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) throw fail(fmt::format("'{}' is not key=value", item));
    const std::string key(trim(item.substr(0, eq)));
    const std::string_view value = trim(item.substr(eq + 1));
    const bool known = kind == "lognormal"
                           ? (key == "median" || key == "sigma" || key == "min" || key == "max")
                           : (key == "min" || key == "max");
    if (!known)
      throw fail(fmt::format("unknown parameter '{}' for {} (it takes {})", key, kind,
                             kind == "lognormal" ? "median, sigma, min, max" : "min, max"));
    double v = 0;
    const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || ptr != value.data() + value.size() || !std::isfinite(v))
      throw fail(fmt::format("{}='{}' is not a number", key, value));
    p[key] = v;
  }
  LengthDistribution d;
  d.source_ = std::string(spec);
  auto length_of = [&](const char* key, int64_t fallback) {
    if (!p.count(key)) return fallback;
    const double v = p[key];
    if (v < 1 || v > static_cast<double>(kUnbounded) || v != std::floor(v))
      throw fail(fmt::format("{} must be a whole number of tokens, at least 1", key));
    return static_cast<int64_t>(v);
  };
  if (kind == "uniform") {
    if (!p.count("min") || !p.count("max")) throw fail("uniform needs min and max");
    d.kind_ = Kind::uniform;
  } else {
    if (!p.count("median") || !p.count("sigma")) throw fail("lognormal needs median and sigma");
    if (!(p["median"] >= 1)) throw fail("median must be at least 1 token");
    if (!(p["sigma"] > 0) || p["sigma"] > 10) throw fail("sigma must be in (0, 10]");
    d.kind_ = Kind::lognormal;
    d.log_median_ = std::log(p["median"]);
    d.sigma_ = p["sigma"];
  }
  d.min_ = length_of("min", 1);
  d.max_ = length_of("max", kUnbounded);
  if (d.min_ > d.max_) throw fail(fmt::format("min {} is above max {}", d.min_, d.max_));
  return d;
}

double LengthDistribution::median() const {
  switch (kind_) {
    case Kind::sample: {
      const uint64_t half = (cumulative_.back() + 1) / 2;
      return static_cast<double>(values_[static_cast<size_t>(
          std::lower_bound(cumulative_.begin(), cumulative_.end(), half) - cumulative_.begin())]);
    }
    case Kind::lognormal:
      return std::clamp(std::exp(log_median_), static_cast<double>(min_),
                        static_cast<double>(max_));
    case Kind::uniform:
      return 0.5 * static_cast<double>(min_ + max_);
    case Kind::fixed:
      return static_cast<double>(min_);
  }
  return 0;
}

int64_t LengthDistribution::draw(std::mt19937_64& rng) const {
  switch (kind_) {
    case Kind::sample: {
      const uint64_t at = below(rng, cumulative_.back());
      return values_[static_cast<size_t>(
          std::upper_bound(cumulative_.begin(), cumulative_.end(), at) - cumulative_.begin())];
    }
    case Kind::lognormal: {
      // Box-Muller; outside [min, max] drawn again (a truncated lognormal).
      for (int tries = 0; tries < 1000; ++tries) {
        const double z = std::sqrt(-2 * std::log(unit(rng))) * std::cos(2 * M_PI * unit(rng));
        const double x = std::round(std::exp(log_median_ + sigma_ * z));
        if (x >= static_cast<double>(min_) && x <= static_cast<double>(max_))
          return static_cast<int64_t>(x);
      }
      // Clamped as a double first: a huge median must not overflow the integer.
      return static_cast<int64_t>(std::clamp(std::round(std::exp(log_median_)),
                                             static_cast<double>(min_), static_cast<double>(max_)));
    }
    case Kind::uniform:
      return min_ + static_cast<int64_t>(below(rng, static_cast<uint64_t>(max_ - min_ + 1)));
    case Kind::fixed:
      return min_;
  }
  return min_;
}

std::string LengthDistribution::describe() const {
  switch (kind_) {
    case Kind::sample:
      return fmt::format("{}: {} lengths, median {}, longest {}", source_, cumulative_.back(),
                         median(), max_);
    case Kind::lognormal:
      return fmt::format("lognormal, median {:g}, sigma {:g} in [{}, {}]", std::exp(log_median_),
                         sigma_, min_,
                         max_ == kUnbounded ? std::string("unbounded") : std::to_string(max_));
    case Kind::uniform:
      return fmt::format("uniform in [{}, {}]", min_, max_);
    case Kind::fixed:
      return fmt::format("every sequence {} tokens", min_);
  }
  return source_;
}

}  // namespace shardcost
