#include "shardcost/store_costs.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "pricing.h"
#include "shardcost/db.h"

namespace shardcost {
namespace {

std::vector<std::string> tokens(const std::string& name) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('-', start);
    if (end == std::string::npos) end = name.size();
    if (end > start) out.push_back(name.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string memory_token(const std::vector<std::string>& t) {
  for (const auto& s : t)
    if (s.size() > 2 && s.substr(s.size() - 2) == "gb" &&
        std::isdigit(static_cast<unsigned char>(s[0])))
      return s;
  return "";
}

// The part's package, where the name says: an SXM module and a PCIe card of one GPU differ
// in SMs, clocks, memory and links (H100 SXM5: 132 SMs; H100 PCIe: 114).
std::string form_factor(const std::vector<std::string>& t) {
  for (const auto& s : t) {
    if (s.rfind("sxm", 0) == 0) return "sxm";
    if (s == "pcie" || s == "nvl") return s;
  }
  return "";
}

// The model number a name carries: its first token with a digit that is not a memory size
// (a100 in a100-sxm4-80gb, 4090 in geforce-rtx-4090, mi300x in instinct-mi300x), past any
// brand words; the first token where none has a digit.
std::string model_token(const std::vector<std::string>& t) {
  const std::string memory = memory_token(t);
  for (const auto& s : t)
    if (s != memory && std::any_of(s.begin(), s.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        }))
      return s;
  return t.front();
}

// a and b normalised.
bool same_device(const std::string& a, const std::string& b) {
  if (a == b) return true;
  const auto ta = tokens(a), tb = tokens(b);
  if (ta.empty() || tb.empty() || model_token(ta) != model_token(tb)) return false;
  const std::string fa = form_factor(ta), fb = form_factor(tb);
  if (!fa.empty() && !fb.empty() && fa != fb) return false;
  const std::string ma = memory_token(ta), mb = memory_token(tb);
  return ma.empty() || mb.empty() || ma == mb;
}

// Linear interpolation of y in log(x).
double interpolate_log(double x, double x0, double y0, double x1, double y1) {
  const double t = (std::log(x) - std::log(x0)) / (std::log(x1) - std::log(x0));
  return y0 + t * (y1 - y0);
}

}  // namespace

struct StoreCosts::Index {
  struct Point {
    double bytes, seconds, busbw;
  };
  using CurveKey = std::tuple<int, int, int, int>;  // device, op, ranks, nodes
  std::map<CurveKey, std::vector<Point>> curves;
  using GemmKey = std::tuple<int, int, int64_t, int64_t, int64_t, int64_t>;
  std::map<GemmKey, double> gemms;  // (device id, dtype, m, n, k, batch) -> seconds
  // The same shapes as lines along one dimension (0 = m, 1 = n, 2 = k) with the other two and
  // the batch fixed: (device, dtype, batch, dim, other, other) -> (value, FLOP/s) by value.
  using LineKey = std::tuple<int, int, int64_t, int, int64_t, int64_t>;
  std::map<LineKey, std::vector<std::pair<int64_t, double>>> lines;
  // (device id, memory kind) -> (bytes, seconds) ascending in bytes
  std::map<std::pair<int, std::string>, std::vector<std::pair<double, double>>> memory;
  std::vector<std::string> devices;  // normalised names; keys hold the index (device id)
  // Device name -> index in devices (-1: none); the estimator asks for a handful of devices
  // millions of times.
  mutable std::mutex mutex;
  mutable std::unordered_map<std::string, int> device_cache;
  // Tells indexes apart for the per-thread cache, even one built where a freed one stood.
  const uint64_t serial = next_serial();
  static uint64_t next_serial() {
    static std::atomic<uint64_t> n{0};
    return ++n;
  }

  // The device id of a device, or -1 when the store has none of it.
  int match_device(const Device& d) const {
    // Searches ask for one device millions of times: the last answer, per thread, first.
    thread_local uint64_t last_index = 0;
    thread_local std::string last_name;
    thread_local int last_match = -1;
    if (last_index == serial && last_name == d.name) return last_match;
    last_index = serial;
    last_name = d.name;
    last_match = match_device_slow(d);
    return last_match;
  }

  int match_device_slow(const Device& d) const {
    std::lock_guard lock(mutex);
    auto [it, added] = device_cache.emplace(d.name, -1);
    if (added) {
      const std::string want = normalize_device_name(d.name);
      for (size_t i = 0; i < devices.size() && it->second < 0; ++i)
        if (devices[i] == want) it->second = static_cast<int>(i);
      // The names the driver reports for this catalog device.
      for (const auto& alias : d.aliases)
        for (size_t i = 0; i < devices.size() && it->second < 0; ++i)
          if (devices[i] == normalize_device_name(alias)) it->second = static_cast<int>(i);
      for (size_t i = 0; i < devices.size() && it->second < 0; ++i)
        if (same_device(devices[i], want)) it->second = static_cast<int>(i);
    }
    return it->second;
  }

  const std::vector<std::pair<double, double>>* memory_line(const Device& d,
                                                            std::string_view kind) const {
    const int dev = match_device(d);
    if (dev < 0) return nullptr;
    const auto it = memory.find({dev, std::string(kind)});
    return it == memory.end() ? nullptr : &it->second;
  }

  // The measured curve of a group laid out as `group` (the same ranks over the same nodes),
  // or none: another layout drives other links (a group of 16 over 2 nodes uses 8 NICs a
  // node, one over 16 nodes one), and is a learned model's or the catalog's to price.
  const std::vector<Point>* curve(const Device& device, CollectiveOp op, double bytes,
                                  GroupShape group) const {
    const int dev = match_device(device);
    if (dev < 0 || bytes <= 0 || group.ranks < 2) return nullptr;
    const auto it = curves.find({dev, static_cast<int>(op), group.ranks, group.nodes});
    return it == curves.end() || it->second.empty() ? nullptr : &it->second;
  }
};

namespace {

// Interpolating GEMM throughput is trusted between shapes at most this far apart in the
// walked dimension (docs/learned-models.md: with 2,000 random A100 shapes in a store,
// interpolation over longer stretches missed by 10.6 % median, 41 % p90).
constexpr double kCloseRatio = 2.0;

// Exact points only: a measured GEMM shape, a measured size at the measured rank count.
class Measured final : public CostSource {
 public:
  explicit Measured(const StoreCosts::Index& index) : index_(index) {}
  std::optional<Priced> gemm(const Device& device, DType dtype, const GemmShape& s) const override {
    const int dev = index_.match_device(device);
    if (dev < 0) return std::nullopt;
    if (auto it = index_.gemms.find({dev, static_cast<int>(dtype), s.m, s.n, s.k, s.batch});
        it != index_.gemms.end())
      return Priced{it->second, CostOrigin::measured};
    return std::nullopt;
  }
  std::optional<Priced> collective(const Device& device, CollectiveOp op, double bytes,
                                   GroupShape group) const override {
    const auto* c = index_.curve(device, op, bytes, group);
    if (!c) return std::nullopt;
    const auto& pts = *c;
    auto hi =
        std::lower_bound(pts.begin(), pts.end(), bytes,
                         [](const StoreCosts::Index::Point& p, double b) { return p.bytes < b; });
    if (hi != pts.end() && hi->bytes == bytes) return Priced{hi->seconds, CostOrigin::measured};
    return std::nullopt;
  }
  std::optional<PriceBasis> collective_basis(const Device&, CollectiveOp, double,
                                             GroupShape group) const override {
    return PriceBasis{fmt::format("measured: this size at {} ranks over {} node{}", group.ranks,
                                  group.nodes, group.nodes == 1 ? "" : "s"),
                      {},
                      0,
                      0,
                      0};
  }
  std::optional<Priced> memory(const Device& device, std::string_view kind,
                               double bytes) const override {
    const auto* line = index_.memory_line(device, kind);
    if (!line) return std::nullopt;
    auto at = std::lower_bound(line->begin(), line->end(), std::make_pair(bytes, 0.0));
    if (at != line->end() && at->first == bytes) return Priced{at->second, CostOrigin::measured};
    return std::nullopt;
  }

 private:
  const StoreCosts::Index& index_;
};

// Between close measured points: collective time along the measured rank count's curve;
// GEMM throughput in log size along one dimension between measured shapes; memory time in
// log-log.
class Interpolated final : public CostSource {
 public:
  explicit Interpolated(const StoreCosts::Index& index) : index_(index) {}
  std::optional<Priced> memory(const Device& device, std::string_view kind,
                               double bytes) const override {
    const auto* line = index_.memory_line(device, kind);
    if (!line || bytes <= 0) return std::nullopt;
    const auto& l = *line;
    auto hi = std::lower_bound(l.begin(), l.end(), std::make_pair(bytes, 0.0));
    // Exact sizes are the measured source's; beyond the measured sizes, a learned model's.
    if (hi == l.begin() || hi == l.end() || hi->first == bytes) return std::nullopt;
    const auto lo = hi - 1;  // time in log-log between close neighbours
    if (hi->first > kCloseRatio * lo->first) return std::nullopt;
    return Priced{std::exp(interpolate_log(bytes, lo->first, std::log(lo->second), hi->first,
                                           std::log(hi->second))),
                  CostOrigin::interpolated};
  }

  // Between two measured sizes of the measured rank count at most kCloseRatio apart, time
  // linear in bytes (latency plus bytes over a bandwidth, per stretch: docs/learned-models.md).
  // Other rank counts and sizes beyond the measured ones are a learned model's.
  std::optional<Priced> collective(const Device& device, CollectiveOp op, double bytes,
                                   GroupShape group) const override {
    const auto* curve = index_.curve(device, op, bytes, group);
    if (!curve) return std::nullopt;
    const auto& c = *curve;
    auto hi =
        std::lower_bound(c.begin(), c.end(), bytes,
                         [](const StoreCosts::Index::Point& p, double b) { return p.bytes < b; });
    if (hi == c.begin() || hi == c.end() || hi->bytes == bytes) return std::nullopt;
    const auto lo = hi - 1;
    if (hi->bytes > kCloseRatio * lo->bytes) return std::nullopt;
    const double t =
        lo->seconds + (hi->seconds - lo->seconds) * (bytes - lo->bytes) / (hi->bytes - lo->bytes);
    return Priced{t, CostOrigin::interpolated};
  }
  std::optional<PriceBasis> collective_basis(const Device&, CollectiveOp, double,
                                             GroupShape group) const override {
    return PriceBasis{
        fmt::format(
            "interpolated: between two sizes measured at {} ranks over {} node{}, at most a factor "
            "2 apart",
            group.ranks, group.nodes, group.nodes == 1 ? "" : "s"),
        {},
        0,
        0,
        0};
  }

  std::optional<Priced> gemm(const Device& device, DType dtype, const GemmShape& s) const override {
    const int dev = index_.match_device(device);
    if (dev < 0) return std::nullopt;
    const int dt = static_cast<int>(dtype);
    const double flop = 2.0 * s.m * s.n * s.k * s.batch;
    const int64_t dims[3] = {s.m, s.n, s.k};
    // Walk one dimension with the other two fixed: the nearest measured shapes either side.
    for (int dim = 0; dim < 3; ++dim) {
      const int64_t a = dims[dim == 0 ? 1 : 0], b = dims[dim == 2 ? 1 : 2];
      const auto it = index_.lines.find({dev, dt, s.batch, dim, a, b});
      if (it == index_.lines.end()) continue;
      const auto& line = it->second;
      const int64_t want = dims[dim];
      auto above = std::upper_bound(line.begin(), line.end(), want,
                                    [](int64_t v, const auto& p) { return v < p.first; });
      auto below = std::lower_bound(line.begin(), line.end(), want,
                                    [](const auto& p, int64_t v) { return p.first < v; });
      if (above == line.end() || below == line.begin()) continue;
      --below;
      // Only between close neighbours: efficiency changes too much with shape for a long
      // stretch (a learned model or the catalog prices the rest).
      if (above->first > kCloseRatio * below->first) continue;
      const double rate =
          interpolate_log(static_cast<double>(want), static_cast<double>(below->first),
                          below->second, static_cast<double>(above->first), above->second);
      return Priced{flop / rate, CostOrigin::interpolated};
    }
    return std::nullopt;
  }

 private:
  const StoreCosts::Index& index_;
};

}  // namespace

std::string normalize_device_name(std::string_view name) {
  std::string s;
  for (char c : name) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.rfind("nvidia", 0) == 0) s = s.substr(6);
  while (!s.empty() && !std::isalnum(static_cast<unsigned char>(s[0]))) s.erase(s.begin());
  if (s.rfind("tesla", 0) == 0)
    s = s.substr(5);  // the brand older drivers report (Tesla V100-SXM2-16GB)
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += c;
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

StoreCosts::StoreCosts(const std::vector<CollectiveSample>& collectives,
                       const std::vector<GemmSample>& gemms,
                       const std::vector<MemorySample>& memory) {
  auto index = std::make_shared<Index>();
  auto& devices_ = index->devices;
  auto& curves_ = index->curves;
  auto& gemms_ = index->gemms;
  // Raw name (as stored) -> device id of its normalised name.
  std::unordered_map<std::string, int> ids;
  auto device_id = [&](const std::string& raw) {
    auto [it, added] = ids.emplace(raw, 0);
    if (added) {
      const std::string d = normalize_device_name(raw);
      auto at = std::find(devices_.begin(), devices_.end(), d);
      if (at == devices_.end()) at = devices_.insert(devices_.end(), d);
      it->second = static_cast<int>(at - devices_.begin());
    }
    return it->second;
  };
  // Several measurements of one point (in-place and out-of-place, repeated runs): their mean.
  std::map<Index::CurveKey, std::map<double, std::pair<double, int>>> sums;
  for (const auto& c : collectives) {
    if (c.bytes <= 0 || c.seconds <= 0 || c.ranks < 1) continue;
    const int dev = device_id(c.device);
    const GroupShape group = GroupShape::measured(c.ranks, c.nodes, c.level);
    auto& slot = sums[{dev, static_cast<int>(c.op), group.ranks, group.nodes}][c.bytes];
    slot.first += c.seconds;
    slot.second += 1;
  }
  for (const auto& [key, by_size] : sums) {
    auto& curve = curves_[key];
    const auto op = static_cast<CollectiveOp>(std::get<1>(key));
    const double factor = bus_bandwidth_factor(op, std::get<2>(key));
    for (const auto& [bytes, sum] : by_size) {
      const double seconds = sum.first / sum.second;
      curve.push_back({bytes, seconds, bytes * factor / seconds});
    }
  }
  std::map<Index::GemmKey, std::pair<double, int>> gsums;
  for (const auto& g : gemms) {
    if (g.seconds <= 0) continue;
    const int dev = device_id(g.device);
    auto& slot =
        gsums[{dev, static_cast<int>(g.dtype), g.shape.m, g.shape.n, g.shape.k, g.shape.batch}];
    slot.first += g.seconds;
    slot.second += 1;
  }
  for (const auto& [key, sum] : gsums) gemms_[key] = sum.first / sum.second;
  for (const auto& [key, seconds] : gemms_) {
    const auto& [d, t, m, n, k, b] = key;
    const double rate = 2.0 * m * n * k * b / seconds;
    index->lines[{d, t, b, 0, n, k}].push_back({m, rate});
    index->lines[{d, t, b, 1, m, k}].push_back({n, rate});
    index->lines[{d, t, b, 2, m, n}].push_back({k, rate});
  }
  for (auto& [key, line] : index->lines) std::sort(line.begin(), line.end());
  std::map<std::pair<int, std::string>, std::map<double, std::pair<double, int>>> msums;
  for (const auto& m : memory) {
    if (m.bytes <= 0 || m.seconds <= 0) continue;
    auto& slot = msums[{device_id(m.device), m.kind}][m.bytes];
    slot.first += m.seconds;
    slot.second += 1;
  }
  for (const auto& [key, by_size] : msums)
    for (const auto& [bytes, sum] : by_size)
      index->memory[key].push_back({bytes, sum.first / sum.second});
  index_ = index;
  measured_ = std::make_shared<Measured>(*index_);
  interpolated_ = std::make_shared<Interpolated>(*index_);
  both_ = CostChain({measured_.get(), interpolated_.get()});
}

size_t StoreCosts::collective_curves() const {
  return index_->curves.size();
}
size_t StoreCosts::gemm_shapes() const {
  return index_->gemms.size();
}

std::optional<Priced> StoreCosts::gemm(const Device& d, DType t, const GemmShape& s) const {
  return both_.gemm(d, t, s);
}

std::optional<Priced> StoreCosts::collective(const Device& d, CollectiveOp op, double bytes,
                                             GroupShape group) const {
  return both_.collective(d, op, bytes, group);
}

std::optional<PriceBasis> StoreCosts::collective_basis(const Device& d, CollectiveOp op,
                                                       double bytes, GroupShape group) const {
  return both_.collective_basis(d, op, bytes, group);
}

std::optional<Priced> StoreCosts::memory(const Device& d, std::string_view kind,
                                         double bytes) const {
  return both_.memory(d, kind, bytes);
}

StoreCosts StoreCosts::load(const std::string& path) {
  const db::Store store = db::Store::open(path, db::Store::Mode::read_only);
  std::vector<CollectiveSample> collectives;
  for (const auto& p : store.collective_points()) {
    const auto op = parse_collective_op(p.op);
    if (!op) continue;  // gather, scatter, ...: nothing the estimator asks for
    collectives.push_back(
        {p.device, *op, p.ranks,
         p.fabric_level == "inter_node" ? FabricLevel::inter_node : FabricLevel::intra_node,
         static_cast<double>(p.bytes), p.time_ns * 1e-9, p.nodes});
  }
  std::vector<GemmSample> gemms;
  for (const auto& p : store.gemm_points()) {
    const auto dtype = parse_store_dtype(p.dtype);
    if (!dtype) continue;
    gemms.push_back({p.device, *dtype, {p.m, p.n, p.k, p.batch}, p.time_ns * 1e-9});
  }
  std::vector<MemorySample> memory;
  for (const auto& p : store.memory_points())
    memory.push_back({p.device, p.kind, static_cast<double>(p.bytes), p.time_ns * 1e-9});
  return StoreCosts(collectives, gemms, memory);
}

bool same_device_name(std::string_view a, std::string_view b) {
  return same_device(normalize_device_name(a), normalize_device_name(b));
}

std::optional<Device> catalog_device_for(std::string_view stored_name) {
  const std::string stored = normalize_device_name(stored_name);
  for (const auto& name : catalog_names("devices")) {
    Device d = find_device(name);
    for (const auto& alias : d.aliases)
      if (normalize_device_name(alias) == stored) return d;
  }
  for (const auto& name : catalog_names("devices"))
    if (same_device_name(stored_name, name)) return find_device(name);
  return std::nullopt;
}

}  // namespace shardcost
