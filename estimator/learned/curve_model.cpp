#include "curve_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "shardcost/error.h"

namespace shardcost::learned {
namespace {

// Pool-adjacent-violators: the non-decreasing sequence nearest (least squares) to y.
std::vector<double> monotone(const std::vector<double>& y) {
  struct Block {
    double sum;
    size_t count;
  };
  std::vector<Block> blocks;
  for (double v : y) {
    blocks.push_back({v, 1});
    while (blocks.size() > 1 && blocks[blocks.size() - 2].sum / blocks[blocks.size() - 2].count >
                                    blocks.back().sum / blocks.back().count) {
      blocks[blocks.size() - 2].sum += blocks.back().sum;
      blocks[blocks.size() - 2].count += blocks.back().count;
      blocks.pop_back();
    }
  }
  std::vector<double> out;
  for (const auto& b : blocks) out.insert(out.end(), b.count, b.sum / b.count);
  return out;
}

using Points = std::vector<std::pair<double, double>>;

// Curves refitted without some of their points, and the errors on those points.
void hold_out(const Points& p, const std::vector<size_t>& held, HeldOut& out) {
  std::vector<bool> out_of_training(p.size(), false);
  for (size_t i : held) out_of_training[i] = true;
  Points train;
  for (size_t i = 0; i < p.size(); ++i)
    if (!out_of_training[i]) train.push_back(p[i]);
  if (train.size() < 2) return;
  const SizeCurve c = SizeCurve::fit(train);
  for (size_t i : held) out.add(c.at(p[i].first), p[i].second);
}

// The three size splits every curve model reports: each interior size left out, and the
// largest and smallest quarter of the sizes left out (how far the curve carries beyond
// what was measured).
// Each refit is linear in a curve's sizes: past kMaxSingleHoldOuts interior sizes, that many,
// evenly spread, are held out one at a time (300,000 sizes of one curve took over 600 s).
constexpr size_t kMaxSingleHoldOuts = 1000;

void size_splits(const std::vector<Points>& curves, std::vector<CrossValidation>& cv) {
  HeldOut each, top, bottom;
  size_t interior = 0, held_singly = 0;
  for (const auto& p : curves) {
    const size_t inner = p.size() > 2 ? p.size() - 2 : 0;
    const size_t stride =
        std::max<size_t>(1, (inner + kMaxSingleHoldOuts - 1) / kMaxSingleHoldOuts);
    interior += inner;
    for (size_t i = 1; i + 1 < p.size(); i += stride, ++held_singly) hold_out(p, {i}, each);
    const size_t q = std::max<size_t>(1, p.size() / 4);
    std::vector<size_t> hi, lo;
    for (size_t i = 0; i < q; ++i) hi.push_back(p.size() - 1 - i), lo.push_back(i);
    hold_out(p, hi, top);
    hold_out(p, lo, bottom);
  }
  cv.push_back(
      each.summary(held_singly == interior
                       ? std::string("each size held out")
                       : fmt::format("sizes held out one at a time ({} of {}, evenly spread)",
                                     held_singly, interior)));
  cv.push_back(top.summary("largest quarter of sizes held out"));
  cv.push_back(bottom.summary("smallest quarter of sizes held out"));
}

// Time at `ranks` from the curves at n0 < ranks < n1 (or beyond them), linear in the rank
// count at one size: ring and tree latencies grow with the number of ranks.
double across_ranks(int n0, double t0, int n1, double t1, int ranks) {
  return t0 + (t1 - t0) * (ranks - n0) / static_cast<double>(n1 - n0);
}

SizeCurve curve_from(const nlohmann::json& j) {
  SizeCurve c;
  for (const auto& b : j.at("bytes")) c.bytes.push_back(number_of(b));
  for (const auto& s : j.at("seconds")) c.seconds.push_back(number_of(s));
  if (c.bytes.size() < 2 || c.bytes.size() != c.seconds.size())
    throw InputError("a curve needs as many times as sizes, two or more");
  for (size_t i = 0; i < c.bytes.size(); ++i) {
    if (!(c.bytes[i] > 0) || !(c.seconds[i] > 0))
      throw InputError("a curve holds a size or time that is not positive");
    if (i > 0 && (c.bytes[i] <= c.bytes[i - 1] || c.seconds[i] < c.seconds[i - 1]))
      throw InputError("a curve is not ascending in size and non-decreasing in time");
  }
  return c;
}

nlohmann::json curve_json(const SizeCurve& c) {
  return {{"bytes", c.bytes}, {"seconds", c.seconds}};
}

void check_fitter(const nlohmann::json& j) {
  const auto fitter = j.at("fitter").get<std::string>();
  if (fitter != kCurveFitterVersion)
    throw InputError(fmt::format("fitted by '{}', not this shardcost's {}; fit again", fitter,
                                 kCurveFitterVersion));
}

}  // namespace

SizeCurve SizeCurve::fit(std::vector<std::pair<double, double>> points) {
  SizeCurve c;
  for (const auto& [b, t] : means(std::move(points))) {
    c.bytes.push_back(b);
    c.seconds.push_back(t);
  }
  c.seconds = monotone(c.seconds);
  return c;
}

std::vector<std::pair<double, double>> SizeCurve::means(
    std::vector<std::pair<double, double>> points) {
  std::sort(points.begin(), points.end());
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i < points.size();) {
    size_t j = i;
    double sum = 0;
    for (; j < points.size() && points[j].first == points[i].first; ++j) sum += points[j].second;
    out.push_back({points[i].first, sum / static_cast<double>(j - i)});
    i = j;
  }
  return out;
}

double SizeCurve::at(double b) const {
  const size_t n = bytes.size();
  auto line = [&](size_t i, size_t j) {
    const double slope = (seconds[j] - seconds[i]) / (bytes[j] - bytes[i]);
    return seconds[i] + (b - bytes[i]) * slope;
  };
  if (b <= bytes.front()) return std::max(line(0, 1), seconds.front() * b / bytes.front());
  if (b >= bytes.back()) return line(n - 2, n - 1);
  const size_t hi =
      static_cast<size_t>(std::upper_bound(bytes.begin(), bytes.end(), b) - bytes.begin());
  return line(hi - 1, hi);
}

std::optional<CurveAnswer> CollectiveFit::predict(double bytes, int ranks) const {
  if (curves.empty() || !(bytes > 0) || ranks < 1) return std::nullopt;
  for (const auto& [n, c] : curves)
    if (n == ranks) return CurveAnswer{c.at(bytes), c.covers(bytes)};
  if (!uniform || curves.size() < 2) return std::nullopt;
  const auto above =
      std::find_if(curves.begin(), curves.end(), [&](const auto& c) { return c.first > ranks; });
  if (above != curves.begin() && above != curves.end()) {
    const auto& [n0, c0] = *(above - 1);
    const auto& [n1, c1] = *above;
    return CurveAnswer{across_ranks(n0, c0.at(bytes), n1, c1.at(bytes), ranks),
                       c0.covers(bytes) && c1.covers(bytes)};
  }
  // Beyond the measured rank counts: the nearest two's line, its slope never negative (more
  // ranks are never faster), never below the ring's (n - 1) scaling of the nearest.
  const bool up = above == curves.end();
  const auto& near = up ? curves[curves.size() - 1] : curves[0];
  const auto& next = up ? curves[curves.size() - 2] : curves[1];
  const double t_near = near.second.at(bytes), t_next = next.second.at(bytes);
  const double slope = std::max(0.0, (t_near - t_next) / (near.first - next.first));
  const double t = t_near + slope * (ranks - near.first);
  const double ring = t_near * (ranks - 1) / static_cast<double>(std::max(1, near.first - 1));
  return CurveAnswer{std::max(t, std::min(ring, t_near)), false};
}

std::optional<CollectiveFit::Basis> CollectiveFit::basis(double bytes, int ranks) const {
  if (!predict(bytes, ranks)) return std::nullopt;
  const std::string layout = level == FabricLevel::inter_node
                                 ? fmt::format(" ({} a node, between nodes)", per_node)
                                 : std::string(" (one node)");
  auto sizes_of = [&](const SizeCurve& c) -> std::optional<Basis> {
    if (c.covers(bytes)) return std::nullopt;
    const bool above = bytes > c.bytes.back();
    return Basis{
        fmt::format("{} ranks measured{}, {} the sizes measured ({:.0f} to {:.0f} bytes): "
                    "the end stretch's line goes on",
                    ranks, layout, above ? "above" : "below", c.bytes.front(), c.bytes.back()),
        above ? "largest quarter of sizes held out" : "smallest quarter of sizes held out"};
  };
  for (const auto& [n, c] : curves) {
    if (n != ranks) continue;
    if (auto b = sizes_of(c)) return b;
    return Basis{fmt::format("{} ranks measured{}: time linear in bytes between the measured "
                             "sizes either side",
                             ranks, layout),
                 c.bytes.size() > 2 ? "each size held out" : ""};
  }
  // Another rank count: the curves either side, or the nearest two.
  const auto above =
      std::find_if(curves.begin(), curves.end(), [&](const auto& c) { return c.first > ranks; });
  if (above != curves.begin() && above != curves.end())
    return Basis{fmt::format("{} ranks between the {} and {} measured{}: time linear in the rank "
                             "count at each size{}",
                             ranks, (above - 1)->first, above->first, layout,
                             (above - 1)->second.covers(bytes) && above->second.covers(bytes)
                                 ? ""
                                 : ", past the sizes measured"),
                 "each rank count held out"};
  const bool up = above == curves.end();
  const int near = up ? curves.back().first : curves.front().first;
  const int next = up ? curves[curves.size() - 2].first : curves[1].first;
  return Basis{fmt::format("{} ranks, {} the {} and {} measured{}: their line goes on", ranks,
                           up ? "above" : "below", next, near, layout),
               up ? "largest rank count held out" : "smallest rank count held out"};
}

CollectiveFit fit_collective(
    const Device& d, CollectiveOp op, FabricLevel level,
    const std::vector<std::pair<int, std::vector<std::pair<double, double>>>>& by_ranks) {
  CollectiveFit fit;
  fit.device = d.name;
  fit.op = op;
  fit.level = level;
  fit.uniform = level == FabricLevel::inter_node || d.uniform_node();
  std::map<int, Points> sorted;
  for (const auto& [ranks, points] : by_ranks)
    sorted[ranks].insert(sorted[ranks].end(), points.begin(), points.end());
  std::vector<Points> kept;
  for (const auto& [ranks, points] : sorted) {
    Points measured = SizeCurve::means(points);
    SizeCurve c = SizeCurve::fit(measured);
    if (c.bytes.size() < kMinCurveSizes) {
      fit.dropped.push_back(fmt::format("{} ranks: {} sizes, fewer than the {} a curve needs",
                                        ranks, c.bytes.size(), kMinCurveSizes));
      continue;
    }
    fit.rows += c.bytes.size();
    kept.push_back(std::move(measured));
    fit.curves.push_back({ranks, std::move(c)});
  }
  if (fit.curves.empty())
    throw InputError(fmt::format("{} {} {}: no rank count with {} sizes or more", d.name,
                                 to_string(op), to_string(level), kMinCurveSizes));
  size_splits(kept, fit.cv);
  // Whole rank counts held out, each predicted from the rank counts either side of it. Where
  // the links are not uniform the model never does this; the figure says why not.
  HeldOut ranks;
  for (size_t i = 1; i + 1 < fit.curves.size(); ++i) {
    const auto& [n0, c0] = fit.curves[i - 1];
    const auto& [n1, c1] = fit.curves[i + 1];
    const int n = fit.curves[i].first;
    for (const auto& [b, t] : kept[i]) ranks.add(across_ranks(n0, c0.at(b), n1, c1.at(b), n), t);
  }
  if (!ranks.empty())
    fit.cv.push_back(ranks.summary(
        fit.uniform ? "each rank count held out"
                    : "each rank count held out (not used: the node's links are not uniform)"));
  // The end rank counts held out, each predicted from the two next to it as predict carries a
  // curve past the measured rank counts: the error of that extrapolation.
  if (fit.uniform && fit.curves.size() >= 3) {
    for (const bool top : {true, false}) {
      CollectiveFit rest = fit;
      const size_t out = top ? fit.curves.size() - 1 : 0;
      rest.curves.erase(rest.curves.begin() + static_cast<std::ptrdiff_t>(out));
      HeldOut end;
      for (const auto& [b, t] : kept[out])
        if (const auto a = rest.predict(b, fit.curves[out].first)) end.add(a->seconds, t);
      if (!end.empty())
        fit.cv.push_back(end.summary(top ? "largest rank count held out (from the two below it)"
                                         : "smallest rank count held out (from the two above it)"));
    }
  }
  return fit;
}

std::string CollectiveFit::to_json() const {
  nlohmann::json j;
  j["fitter"] = kCurveFitterVersion;
  j["device"] = device;
  j["op"] = std::string(to_string(op));
  j["level"] = std::string(to_string(level));
  j["uniform"] = uniform;
  if (level == FabricLevel::inter_node) j["per_node"] = per_node;
  j["rows"] = rows;
  j["cross_validation"] = cv_json(cv);
  for (const auto& [ranks, c] : curves) {
    auto cj = curve_json(c);
    cj["ranks"] = ranks;
    j["curves"].push_back(cj);
  }
  return j.dump();
}

CollectiveFit CollectiveFit::from_json(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    check_fitter(j);
    CollectiveFit f;
    f.device = j.at("device").get<std::string>();
    const auto op = parse_collective_op(j.at("op").get<std::string>());
    if (!op) throw InputError("its collective is not one shardcost knows; fit again");
    f.op = *op;
    const auto level = j.at("level").get<std::string>();
    if (level != "intra_node" && level != "inter_node")
      throw InputError("its fabric level is unknown; fit again");
    f.level = level == "inter_node" ? FabricLevel::inter_node : FabricLevel::intra_node;
    f.uniform = j.at("uniform").get<bool>();
    if (f.level == FabricLevel::inter_node && j.contains("per_node")) {
      const size_t per_node = count_of(j.at("per_node"));
      if (per_node > 1024) throw InputError("its ranks per node are out of range");
      f.per_node = static_cast<int>(per_node);
    }
    f.rows = count_of(j.at("rows"));
    f.cv = cv_from(j.at("cross_validation"));
    for (const auto& c : j.at("curves")) {
      const size_t ranks = count_of(c.at("ranks"));
      if (ranks < 1 || ranks > 1u << 24) throw InputError("a curve's rank count is out of range");
      if (!f.curves.empty() && static_cast<int>(ranks) <= f.curves.back().first)
        throw InputError("its curves are not in ascending rank counts");
      f.curves.push_back({static_cast<int>(ranks), curve_from(c)});
    }
    if (f.curves.empty()) throw InputError("it holds no curve; fit again");
    return f;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("unreadable collective model ({}); fit again", e.what()));
  }
}

CurveAnswer MemoryFit::predict(double bytes) const {
  return {curve.at(bytes), curve.covers(bytes)};
}

MemoryFit fit_memory(const std::string& device, const std::string& kind,
                     const std::vector<std::pair<double, double>>& points) {
  MemoryFit fit;
  fit.device = device;
  fit.kind = kind;
  const Points measured = SizeCurve::means(points);
  fit.curve = SizeCurve::fit(measured);
  fit.rows = fit.curve.bytes.size();
  if (fit.rows < kMinCurveSizes)
    throw InputError(fmt::format("{} {}: {} sizes, fewer than the {} a curve needs", device, kind,
                                 fit.rows, kMinCurveSizes));
  size_splits({measured}, fit.cv);
  return fit;
}

std::string MemoryFit::to_json() const {
  nlohmann::json j = curve_json(curve);
  j["fitter"] = kCurveFitterVersion;
  j["device"] = device;
  j["kind"] = kind;
  j["rows"] = rows;
  j["cross_validation"] = cv_json(cv);
  return j.dump();
}

MemoryFit MemoryFit::from_json(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    check_fitter(j);
    MemoryFit f;
    f.device = j.at("device").get<std::string>();
    f.kind = j.at("kind").get<std::string>();
    f.rows = count_of(j.at("rows"));
    f.cv = cv_from(j.at("cross_validation"));
    f.curve = curve_from(j);
    return f;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("unreadable memory model ({}); fit again", e.what()));
  }
}

}  // namespace shardcost::learned
