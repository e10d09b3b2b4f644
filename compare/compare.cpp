// Matching two sides by identity and judging every pair against its noise.
#include "shardcost/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>

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
    case Verdict::inconclusive:
      return "inconclusive";
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
    case Method::runs_t:
      return "runs-t";
  }
  return "threshold-only";
}

int64_t Comparison::count(Verdict v) const {
  return std::count_if(pairs.begin(), pairs.end(),
                       [v](const PairResult& p) { return p.verdict == v; });
}

int64_t Comparison::inconclusive_slower() const {
  return std::count_if(pairs.begin(), pairs.end(), [](const PairResult& p) {
    return p.verdict == Verdict::inconclusive && p.change > 0;
  });
}

namespace {

// A side's runs of one identity, in run order (the newest row of a run wins).
using Runs = std::map<Identity, std::vector<Measure>, IdentityLess>;
Runs by_run(std::vector<Measure> side, int64_t& superseded) {
  Runs out;
  for (auto& m : side) {
    auto& list = out[Identity{m.table, m.key}];
    if (!list.empty() && list.back().run_id == m.run_id) {
      ++superseded;
      list.back() = std::move(m);
    } else {
      list.push_back(std::move(m));
    }
  }
  return out;
}

// One Measure standing for a side's runs: the newest row, its median the runs' geometric
// mean, its p10..p90 the lowest and highest run median.
Measure summary_of(const std::vector<Measure>& runs) {
  Measure m = runs.back();
  double logs = 0, lo = runs.front().median_ns, hi = lo;
  for (const auto& r : runs) {
    logs += std::log(std::max(r.median_ns, 1e-9));
    lo = std::min(lo, r.median_ns);
    hi = std::max(hi, r.median_ns);
  }
  m.median_ns = std::exp(logs / static_cast<double>(runs.size()));
  if (runs.size() > 1) {
    m.p10_ns = lo;
    m.p90_ns = hi;
  }
  return m;
}

// z (two-sided) at alpha: the normal limit of Student's t.
double z_at(double alpha) {
  return stats::student_t_critical(alpha, 1e7);
}

// A row's repeated runs: the difference of the sides' mean log medians, its within-row sum of
// squares and degrees of freedom, and 1/na + 1/nb. nullopt with one run a side.
struct RunStats {
  double diff = 0, ss = 0, df = 0, inv_n = 0;
};
// Two samples for a pooled-variance t-test: the difference of their means (y - x), their
// sums of squares about their own means, the degrees of freedom and 1/nx + 1/ny. nullopt
// with fewer than three values in all (no degree of freedom).
std::optional<RunStats> two_samples(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.empty() || y.empty() || x.size() + y.size() < 3) return std::nullopt;
  auto mean = [](const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  };
  const double mx = mean(x), my = mean(y);
  RunStats r;
  for (double v : x) r.ss += (v - mx) * (v - mx);
  for (double v : y) r.ss += (v - my) * (v - my);
  r.diff = my - mx;
  r.df = static_cast<double>(x.size() + y.size() - 2);
  r.inv_n = 1.0 / static_cast<double>(x.size()) + 1.0 / static_cast<double>(y.size());
  return r;
}
// A row's runs on each side, as log medians.
std::optional<RunStats> run_stats(const std::vector<Measure>& a, const std::vector<Measure>& b) {
  auto logs = [](const std::vector<Measure>& runs) {
    std::vector<double> out;
    for (const auto& r : runs) out.push_back(std::log(std::max(r.median_ns, 1e-9)));
    return out;
  };
  return two_samples(logs(a), logs(b));
}

// Student's t on a row's runs with its variance moderated toward its device's (the median of
// the rows' variances), each weighted by the row's own degrees of freedom: a few runs give a
// noisy variance, and one lucky row of three near-equal runs must not look precise (Smyth's
// moderated t, with the prior worth as much as the row's own runs).
void runs_test(const RunStats& r, double device_var, const CompareOptions& o, PairResult& p) {
  const double var = (r.ss / r.df + device_var) / 2, df = 2 * r.df;
  const double se = std::sqrt(var * r.inv_n);
  p.method = Method::runs_t;
  p.change = std::expm1(r.diff);
  if (se > 0) {
    p.p_value = stats::student_t_p(r.diff / se, df);
    p.noise = std::exp(stats::student_t_critical(o.alpha, df) * se) - 1;
  } else {
    p.p_value = r.diff == 0 ? 1.0 : 0.0;
    p.noise = 0;
  }
}

// The smallest relative change one run's within-run spread resolves at alpha (0: no spread).
double within_noise(const PairResult& p, double alpha) {
  auto relative_se = [](const Measure& m) -> double {
    if (m.samples_ns.size() >= kMinSamples) {
      std::vector<double> logs;
      for (int64_t v : m.samples_ns) logs.push_back(std::log(std::max<double>(v, 1)));
      return 1.2533 * stats::robust_scatter(logs) /
             std::sqrt(static_cast<double>(m.samples_ns.size()));
    }
    if (auto s = spread(m))
      return 1.2533 * *s / 2.5631 / std::max(m.median_ns, 1.0) /
             std::sqrt(static_cast<double>(std::max<int64_t>(m.iterations, 1)));
    return 0;
  };
  const double se = std::hypot(relative_se(p.base), relative_se(p.next));
  return se > 0 ? std::exp(z_at(alpha) * se) - 1 : 0;
}

constexpr size_t kMinScatterRows = 6;  // rows of a device that estimate its scatter

// Each table's (and device's) rows, one mean log median per run, over the rows every run of
// both sides holds; Student's t on the two sides' run means.
std::vector<TableShift> table_shifts(const Runs& b, const Runs& n, const CompareOptions& o) {
  struct RunsOfRows {
    std::map<int64_t, std::map<std::string, double>> by_run;  // run -> row label -> log median
  };
  std::map<std::pair<std::string, std::string>, std::pair<RunsOfRows, RunsOfRows>> groups;
  for (const auto& [id, runs] : b) {
    auto it = n.find(id);
    if (it == n.end() || runs.empty()) continue;
    const Measure& first = runs.front();
    auto& g = groups[{first.table, first.key.empty() ? "" : first.key.front().second}];
    const std::string row = first.label();
    for (const auto& m : runs)
      g.first.by_run[m.run_id][row] = std::log(std::max(m.median_ns, 1e-9));
    for (const auto& m : it->second)
      g.second.by_run[m.run_id][row] = std::log(std::max(m.median_ns, 1e-9));
  }
  std::vector<TableShift> out;
  for (const auto& [key, sides] : groups) {
    // The rows every run of both sides holds.
    std::map<std::string, int> seen;
    size_t total_runs = 0;
    for (const RunsOfRows* side : {&sides.first, &sides.second})
      for (const auto& [run, rows] : side->by_run) {
        ++total_runs;
        for (const auto& [row, v] : rows) ++seen[row];
      }
    std::vector<std::string> common;
    for (const auto& [row, count] : seen)
      if (static_cast<size_t>(count) == total_runs) common.push_back(row);
    if (common.size() < 3) continue;
    auto means = [&](const RunsOfRows& side) {
      std::vector<double> per_run;
      for (const auto& [run, rows] : side.by_run) {
        double sum = 0;
        for (const auto& row : common) sum += rows.at(row);
        per_run.push_back(sum / static_cast<double>(common.size()));
      }
      return per_run;
    };
    const auto x = means(sides.first), y = means(sides.second);
    const auto r = two_samples(x, y);
    if (!r) continue;
    const double se = std::sqrt(r->ss / r->df * r->inv_n);
    TableShift t;
    t.table = key.first;
    t.device = key.second;
    t.rows = static_cast<int64_t>(common.size());
    t.base_runs = static_cast<int64_t>(x.size());
    t.next_runs = static_cast<int64_t>(y.size());
    t.change = std::expm1(r->diff);
    t.p_value = se > 0 ? stats::student_t_p(r->diff / se, r->df) : (r->diff == 0 ? 1.0 : 0.0);
    out.push_back(t);
  }
  for (auto& t : out)
    t.significant =
        t.p_value < o.alpha / static_cast<double>(out.size()) && std::abs(t.change) > o.threshold;
  return out;
}

}  // namespace

Comparison compare(std::vector<Measure> base, std::vector<Measure> next,
                   const CompareOptions& options) {
  Comparison out;
  out.options = options;
  // Each side's runs of every identity: with repeats all of them, else the newest.
  Runs b, n;
  if (options.repeats) {
    b = by_run(std::move(base), out.superseded);
    n = by_run(std::move(next), out.superseded);
  } else {
    for (auto& [id, m] : newest(std::move(base), out.superseded)) b[id] = {std::move(m)};
    for (auto& [id, m] : newest(std::move(next), out.superseded)) n[id] = {std::move(m)};
  }
  if (options.repeats) out.tables = table_shifts(b, n, options);  // before pairs take n
  std::vector<std::optional<RunStats>> stats_of;                  // per pair, with repeats
  std::map<std::string, std::vector<double>> run_var;  // device -> its rows' run variances
  for (auto& [id, runs] : b) {
    auto it = n.find(id);
    if (it == n.end()) {
      out.only_base.push_back(runs.back());
      continue;
    }
    PairResult p;
    p.base = summary_of(runs);
    p.next = summary_of(it->second);
    p.base_runs = static_cast<int64_t>(runs.size());
    p.next_runs = static_cast<int64_t>(it->second.size());
    std::optional<RunStats> rs;
    if (options.repeats) rs = run_stats(runs, it->second);
    if (rs) {
      run_var[p.base.key.empty() ? "" : p.base.key.front().second].push_back(rs->ss / rs->df);
      p.method = Method::runs_t;
      p.change = std::expm1(rs->diff);
    } else {
      if (p.base.median_ns > 0)
        p.change = p.next.median_ns / p.base.median_ns - 1;
      else
        p.change = p.next.median_ns > 0 ? std::numeric_limits<double>::infinity() : 0;
      p.p_value = test(p.base, p.next, p.method);
      p.noise = within_noise(p, options.alpha);
    }
    p.excess = p.change;
    n.erase(it);
    out.pairs.push_back(std::move(p));
    stats_of.push_back(rs);
  }
  for (size_t i = 0; i < out.pairs.size(); ++i)
    if (stats_of[i]) {
      auto& p = out.pairs[i];
      runs_test(*stats_of[i],
                stats::median_of(run_var[p.base.key.empty() ? "" : p.base.key.front().second]),
                options, p);
    }
  for (auto& [id, runs] : n) out.only_next.push_back(runs.back());

  // Per device: the rows' common shift and their scatter around it.
  std::map<std::string, std::vector<size_t>> by_device;
  for (size_t i = 0; i < out.pairs.size(); ++i) {
    const auto& p = out.pairs[i];
    by_device[p.base.key.empty() ? "" : p.base.key.front().second].push_back(i);
  }
  for (const auto& [device, rows] : by_device) {
    NoiseNote note;
    note.device = device;
    note.pairs = static_cast<int64_t>(rows.size());
    std::vector<double> logs;
    for (size_t i : rows) {
      const auto& p = out.pairs[i];
      note.base_runs = std::max(note.base_runs, p.base_runs);
      note.next_runs = std::max(note.next_runs, p.next_runs);
      if (std::isfinite(p.change) && p.change > -1) logs.push_back(std::log1p(p.change));
    }
    const double shift = stats::median_of(logs);
    note.shift = logs.empty() ? 0 : std::expm1(shift);
    if (auto it = run_var.find(device); it != run_var.end()) {
      // Repeats: the noise the runs themselves show.
      note.scatter = std::sqrt(stats::median_of(it->second));
      note.estimated = true;
    } else if (logs.size() >= kMinScatterRows) {
      // One run a side: a row must stand out of the others' scatter around their shift.
      note.scatter = stats::robust_scatter(logs);
      note.estimated = true;
      // The whole run moved past the threshold: with one run a side, a machine that ran
      // slower and a build that did cannot be told apart, so the shift is noise too.
      const double band = std::exp(z_at(options.alpha) * note.scatter) - 1 +
                          (std::abs(note.shift) > options.threshold ? std::abs(note.shift) : 0);
      for (size_t i : rows) {
        auto& p = out.pairs[i];
        if (p.method == Method::runs_t || !std::isfinite(p.change) || p.change <= -1) continue;
        const double r = std::log1p(p.change) - shift;
        const double cross = note.scatter > 0
                                 ? 2 * (1 - stats::normal_cdf(std::abs(r) / note.scatter))
                                 : (r == 0 ? 1.0 : 0.0);
        p.p_value = p.p_value ? std::max(*p.p_value, cross) : cross;
        p.noise = std::max(p.noise, band);
        p.excess = std::expm1(r);
      }
    }
    out.noise.push_back(note);
  }

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
    if (std::abs(p.change) > options.threshold) {
      if (p.significant && std::abs(p.excess) > options.threshold && p.excess * p.change > 0)
        p.verdict = p.change > 0 ? Verdict::regressed : Verdict::improved;
      else if (p.noise > options.threshold)
        p.verdict = Verdict::inconclusive;
    }
    // A row past the threshold in a table that moved, significantly, the same way.
    if (p.verdict != Verdict::regressed && p.verdict != Verdict::improved &&
        std::abs(p.change) > options.threshold)
      for (const auto& t : out.tables)
        if (t.significant && t.table == p.base.table &&
            t.device == (p.base.key.empty() ? "" : p.base.key.front().second) &&
            t.change * p.change > 0) {
          p.verdict = p.change > 0 ? Verdict::regressed : Verdict::improved;
          p.by_table = true;
        }
  }
  return out;
}

}  // namespace shardcost::regress
