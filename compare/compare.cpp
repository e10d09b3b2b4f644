// Matching two sides by identity and judging every pair against its noise.
#include "shardcost/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace shardcost::regress {
namespace {

using Identity = std::pair<std::string, std::vector<std::pair<std::string, std::string>>>;

// Sizes sort as numbers (65536 before 1048576), names as text.
bool value_less(const std::string& a, const std::string& b) {
  const bool na =
      !a.empty() && a.size() < 19 && a.find_first_not_of("0123456789") == std::string::npos;
  const bool nb =
      !b.empty() && b.size() < 19 && b.find_first_not_of("0123456789") == std::string::npos;
  if (na && nb) return std::stoll(a) < std::stoll(b);
  return a < b;
}

struct IdentityLess {
  bool operator()(const Identity& a, const Identity& b) const {
    if (a.first != b.first) return a.first < b.first;
    const size_t n = std::min(a.second.size(), b.second.size());
    for (size_t i = 0; i < n; ++i) {
      const auto& x = a.second[i].second;
      const auto& y = b.second[i].second;
      if (x != y) return value_less(x, y);
    }
    return a.second.size() < b.second.size();
  }
};
using Side = std::map<Identity, Measure, IdentityLess>;

// Newest wins: the input is oldest first, so a later row replaces an earlier one.
Side newest(std::vector<Measure> side, int64_t& superseded) {
  Side out;
  for (auto& m : side) {
    Identity id{m.table, m.key};
    auto [it, added] = out.try_emplace(std::move(id), std::move(m));
    if (!added) {
      ++superseded;
      it->second = std::move(m);
    }
  }
  return out;
}

constexpr size_t kMinSamples = 3;  // below this, ranks say nothing: use the summary

std::optional<double> spread(const Measure& m) {
  if (!m.p10_ns || !m.p90_ns || m.iterations < 2) return std::nullopt;
  const double s = *m.p90_ns - *m.p10_ns;
  return s > 0 ? std::optional<double>(s) : std::nullopt;
}

// The test's raw p-value and which method gave it; nullopt: no spread to test against.
std::optional<double> test(const Measure& a, const Measure& b, Method& method) {
  if (a.samples_ns.size() >= kMinSamples && b.samples_ns.size() >= kMinSamples) {
    method = Method::mann_whitney;
    return stats::mann_whitney_p(a.samples_ns, b.samples_ns);
  }
  auto sa = spread(a), sb = spread(b);
  // One side without a spread (an import beside a benchmark): assume the same noise.
  if (!sa) sa = sb;
  if (!sb) sb = sa;
  if (sa && sb) {
    method = Method::median_z;
    // Relative spreads, so a side without one borrows the other's noise at its own scale.
    const double ra = *sa / std::max(a.median_ns, 1.0), rb = *sb / std::max(b.median_ns, 1.0);
    auto p = stats::median_z_p(a.median_ns, ra * a.median_ns, a.iterations, b.median_ns,
                               rb * b.median_ns, b.iterations);
    if (p) return p;
  }
  method = Method::threshold;
  return std::nullopt;
}

}  // namespace

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::regressed:
      return "regressed";
    case Verdict::improved:
      return "improved";
    case Verdict::unchanged:
      return "unchanged";
  }
  return "unchanged";
}

std::string_view to_string(Method m) {
  switch (m) {
    case Method::mann_whitney:
      return "mann-whitney";
    case Method::median_z:
      return "median-z";
    case Method::threshold:
      return "threshold-only";
  }
  return "threshold-only";
}

int64_t Comparison::count(Verdict v) const {
  return std::count_if(pairs.begin(), pairs.end(),
                       [v](const PairResult& p) { return p.verdict == v; });
}

Comparison compare(std::vector<Measure> base, std::vector<Measure> next,
                   const CompareOptions& options) {
  Comparison out;
  out.options = options;
  auto b = newest(std::move(base), out.superseded);
  auto n = newest(std::move(next), out.superseded);
  for (auto& [id, m] : b) {
    auto it = n.find(id);
    if (it == n.end()) {
      out.only_base.push_back(std::move(m));
      continue;
    }
    PairResult p;
    p.base = std::move(m);
    p.next = std::move(it->second);
    n.erase(it);
    if (p.base.median_ns > 0)
      p.change = p.next.median_ns / p.base.median_ns - 1;
    else
      p.change = p.next.median_ns > 0 ? std::numeric_limits<double>::infinity() : 0;
    p.p_value = test(p.base, p.next, p.method);
    out.pairs.push_back(std::move(p));
  }
  for (auto& [id, m] : n) out.only_next.push_back(std::move(m));

  std::vector<double> raw;
  for (const auto& p : out.pairs)
    if (p.p_value) raw.push_back(*p.p_value);
  const std::vector<double> adjusted = stats::holm(raw);
  size_t i = 0;
  for (auto& p : out.pairs) {
    if (p.p_value) {
      p.p_adjusted = adjusted[i++];
      p.significant = *p.p_adjusted < options.alpha;
    } else {
      p.significant = true;  // nothing to test against: the threshold decides
    }
    if (p.significant && std::abs(p.change) > options.threshold)
      p.verdict = p.change > 0 ? Verdict::regressed : Verdict::improved;
  }
  return out;
}

}  // namespace shardcost::regress
