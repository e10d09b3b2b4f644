#include "compare_print.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "format.h"
#include "svg_plot.h"

namespace shardcost::cli {
namespace {

using db::Measure;
using regress::Comparison;
using regress::PairResult;
using regress::Verdict;

std::string device_of(const Measure& m) {
  return m.key.empty() ? "" : m.key.front().second;
}

// The identity without the device, which gets its own column.
std::string what(const Measure& m) {
  std::string out;
  for (size_t i = 1; i < m.key.size(); ++i)
    out += (out.empty() ? "" : " ") + m.key[i].first + "=" + m.key[i].second;
  return out;
}

// The one device every row was measured on, or empty when there are several.
std::string single_device(const Comparison& c) {
  std::optional<std::string> device;
  bool several = false;
  auto see = [&](const Measure& m) {
    if (!device)
      device = device_of(m);
    else if (*device != device_of(m))
      several = true;
  };
  for (const auto& p : c.pairs) see(p.base), see(p.next);
  for (const auto& m : c.only_base) see(m);
  for (const auto& m : c.only_next) see(m);
  return several || !device ? "" : *device;
}

std::string percent(double change) {
  if (!std::isfinite(change)) return "+inf";
  return fmt::format("{:+.1f}%", change * 100);
}

std::string p_text(const PairResult& p) {
  if (!p.p_adjusted) return "-";
  if (*p.p_adjusted < 1e-4) return "<1e-4";
  return fmt::format("{:.4f}", *p.p_adjusted);
}

std::string spread_text(const Measure& m) {
  if (!m.p10_ns || !m.p90_ns) return "";
  return fmt::format(" [{}..{}]", duration_text(*m.p10_ns), duration_text(*m.p90_ns));
}

std::string summary_line(const Comparison& c) {
  return fmt::format(
      "{} regressed, {} improved, {} inconclusive, {} unchanged; {} only in BASE, {} only in NEW",
      c.count(Verdict::regressed), c.count(Verdict::improved), c.count(Verdict::inconclusive),
      c.count(Verdict::unchanged), c.only_base.size(), c.only_next.size());
}

// What compare saw of the run-to-run noise, one line per device.
std::string noise_lines(const Comparison& c) {
  std::string out;
  for (const auto& n : c.noise) {
    const std::string where = n.device.empty() ? "" : n.device + ": ";
    if (!n.estimated) {
      out += fmt::format(
          "noise: {}{} rows, one run a side: too few rows to see run-to-run noise; judged by "
          "within-run spread alone\n",
          where, n.pairs);
      continue;
    }
    const std::string runs =
        n.base_runs > 1 || n.next_runs > 1
            ? fmt::format("from the runs themselves ({} BASE, {} NEW)", n.base_runs, n.next_runs)
            : "from the rows' scatter around their common shift (one run a side)";
    out += fmt::format(
        "noise: {}{} rows moved {} together; run-to-run noise of one row ±{:.1f}% (1 sigma) {}\n",
        where, n.pairs, percent(n.shift), std::expm1(n.scatter) * 100, runs);
  }
  for (const auto& t : c.tables)
    out += fmt::format(
        "noise: table {}{}: its {} rows moved {} together over {} + {} runs (Student's t on the "
        "runs' means, p={:.2g}): {}\n",
        t.table, t.device.empty() ? "" : " on " + t.device, t.rows, percent(t.change), t.base_runs,
        t.next_runs, t.p_value, t.significant ? "a shift of the table" : "within the runs' spread");
  return out;
}

std::string method_text(const PairResult& p) {
  return std::string(to_string(p.method)) + (p.by_table ? " (table)" : "");
}

std::string noise_text(const PairResult& p) {
  return p.noise > 0 ? fmt::format("±{:.1f}%", p.noise * 100) : "-";
}

// Unchanged pairs that moved past the threshold but not past their noise.
int64_t within_noise(const Comparison& c) {
  int64_t n = 0;
  for (const auto& p : c.pairs)
    n += p.verdict == Verdict::unchanged && std::abs(p.change) > c.options.threshold &&
         !p.significant;
  return n;
}

std::string md_cell(std::string s) {
  std::string out;
  for (char ch : s) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out;
}

nlohmann::json measure_json(const Measure& m) {
  nlohmann::json key = nlohmann::json::object();
  for (const auto& [k, v] : m.key) key[k] = v;
  nlohmann::json j = {{"table", m.table},
                      {"key", key},
                      {"median_ns", m.median_ns},
                      {"iterations", m.iterations},
                      {"samples", m.samples_ns.size()}};
  j["p10_ns"] = m.p10_ns ? nlohmann::json(*m.p10_ns) : nlohmann::json();
  j["p90_ns"] = m.p90_ns ? nlohmann::json(*m.p90_ns) : nlohmann::json();
  return j;
}

std::string pair_detail(const PairResult& p) {
  const std::string pv = p_text(p);
  return fmt::format("{} -> {} ({}), {}, p{}{}", duration_text(p.base.median_ns),
                     duration_text(p.next.median_ns), percent(p.change), to_string(p.method),
                     pv.front() == '<' ? "" : "=", pv);
}

}  // namespace

std::string duration_text(double ns) {
  const double a = std::abs(ns);
  if (a < 1e3) return fmt::format("{:.0f} ns", ns);
  if (a < 1e6) return fmt::format("{:.3g} us", ns / 1e3);
  if (a < 1e9) return fmt::format("{:.3g} ms", ns / 1e6);
  return fmt::format("{:.3g} s", ns / 1e9);
}

std::string compare_text(const Comparison& c, const CompareSides& s) {
  const std::string one_device = single_device(c);
  std::string out = fmt::format("BASE {}\nNEW  {}\n", s.base, s.next);
  if (!one_device.empty()) out += fmt::format("device {}\n", one_device);
  out += fmt::format("tables {}, threshold {:g}%, alpha {:g} (Holm over {} pairs)\n", s.table,
                     c.options.threshold * 100, c.options.alpha, c.pairs.size());
  out += noise_lines(c) + "\n";
  for (const Verdict v : {Verdict::regressed, Verdict::improved, Verdict::inconclusive}) {
    const int64_t n = c.count(v);
    if (v == Verdict::inconclusive && n == 0) continue;
    out += fmt::format("{} ({})\n",
                       v == Verdict::regressed  ? "REGRESSED"
                       : v == Verdict::improved ? "IMPROVED"
                                                : "INCONCLUSIVE: moved past the threshold, "
                                                  "within a noise wider than it",
                       n);
    if (n == 0) continue;
    std::vector<std::string> header = {"table",           "device",         "identity",
                                       "base [p10..p90]", "new [p10..p90]", "change",
                                       "noise",           "p (adj)",        "method"};
    std::vector<bool> right = {false, false, false, true, true, true, true, true, false};
    if (!one_device.empty()) header.erase(header.begin() + 1), right.erase(right.begin() + 1);
    Table t(header, right);
    for (const auto& p : c.pairs) {
      if (p.verdict != v) continue;
      std::vector<std::string> row = {p.base.table,
                                      device_of(p.base),
                                      what(p.base),
                                      duration_text(p.base.median_ns) + spread_text(p.base),
                                      duration_text(p.next.median_ns) + spread_text(p.next),
                                      percent(p.change),
                                      noise_text(p),
                                      p_text(p),
                                      method_text(p)};
      if (!one_device.empty()) row.erase(row.begin() + 1);
      t.add(row);
    }
    out += t.render(2);
  }
  out +=
      fmt::format("unchanged ({}), of which {} moved past the threshold but not past their noise\n",
                  c.count(Verdict::unchanged), within_noise(c));
  for (const auto* side : {&c.only_base, &c.only_next}) {
    if (side->empty()) continue;
    out += fmt::format("only in {} ({})\n", side == &c.only_base ? "BASE" : "NEW", side->size());
    size_t shown = 0;
    for (const auto& m : *side) {
      if (++shown > 20) {
        out += fmt::format("  ... and {} more (--format json lists all)\n", side->size() - 20);
        break;
      }
      out += one_device.empty() ? fmt::format("  {} {} {}\n", m.table, device_of(m), what(m))
                                : fmt::format("  {} {}\n", m.table, what(m));
    }
  }
  if (c.superseded)
    out += fmt::format("{} older duplicate rows were replaced by their newest run\n", c.superseded);
  out += "\nresult: " + summary_line(c) + "\n";
  return out;
}

std::string compare_markdown(const Comparison& c, const CompareSides& s) {
  const int64_t regressed = c.count(Verdict::regressed);
  std::string out =
      fmt::format("### shardcost compare: {}\n\n",
                  regressed ? fmt::format("**{} regressed**", regressed) : "no regressions");
  out += fmt::format(
      "`{}` → `{}` · tables {} · threshold {:g}% · alpha {:g} (Holm over {} pairs)\n\n", s.base,
      s.next, s.table, c.options.threshold * 100, c.options.alpha, c.pairs.size());
  out += fmt::format(
      "| regressed | improved | inconclusive | unchanged | only in base | only in new "
      "|\n|---:|---:|---:|---:|---:|---:|\n"
      "| {} | {} | {} | {} | {} | {} |\n",
      regressed, c.count(Verdict::improved), c.count(Verdict::inconclusive),
      c.count(Verdict::unchanged), c.only_base.size(), c.only_next.size());
  if (const std::string noise = noise_lines(c); !noise.empty()) out += "\n" + noise;
  for (const Verdict v : {Verdict::regressed, Verdict::improved, Verdict::inconclusive}) {
    if (c.count(v) == 0) continue;
    out += fmt::format(
        "\n#### {}\n\n| table | device | identity | base | new | change | noise | p (adj) | "
        "method |\n|---|---|---|---:|---:|---:|---:|---:|---|\n",
        v == Verdict::regressed  ? "Regressed"
        : v == Verdict::improved ? "Improved"
                                 : "Inconclusive");
    for (const auto& p : c.pairs) {
      if (p.verdict != v) continue;
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", p.base.table,
                         md_cell(device_of(p.base)), md_cell(what(p.base)),
                         duration_text(p.base.median_ns), duration_text(p.next.median_ns),
                         percent(p.change), noise_text(p), p_text(p), method_text(p));
    }
  }
  if (!c.only_base.empty() || !c.only_next.empty()) {
    out += "\n<details><summary>Unmatched rows</summary>\n\n";
    for (const auto* side : {&c.only_base, &c.only_next})
      for (const auto& m : *side)
        out += fmt::format("- only in {}: {} {} {}\n", side == &c.only_base ? "base" : "new",
                           m.table, md_cell(device_of(m)), md_cell(what(m)));
    out += "\n</details>\n";
  }
  const int64_t noise = within_noise(c);
  if (noise)
    out += fmt::format("\n{} rows moved past the threshold but not past their noise.\n", noise);
  return out;
}

std::string compare_json(const Comparison& c, const CompareSides& s) {
  nlohmann::json j;
  j["base"] = s.base;
  j["new"] = s.next;
  j["tables"] = s.table;
  j["threshold"] = c.options.threshold;
  j["alpha"] = c.options.alpha;
  j["summary"] = {{"regressed", c.count(Verdict::regressed)},
                  {"improved", c.count(Verdict::improved)},
                  {"inconclusive", c.count(Verdict::inconclusive)},
                  {"unchanged", c.count(Verdict::unchanged)},
                  {"only_base", c.only_base.size()},
                  {"only_new", c.only_next.size()},
                  {"superseded", c.superseded}};
  j["repeats"] = c.options.repeats;
  nlohmann::json noise = nlohmann::json::array();
  for (const auto& n : c.noise)
    noise.push_back(
        {{"device", n.device},
         {"pairs", n.pairs},
         {"shift", n.shift},
         {"scatter", n.estimated ? nlohmann::json(std::expm1(n.scatter)) : nlohmann::json()},
         {"base_runs", n.base_runs},
         {"new_runs", n.next_runs}});
  j["noise"] = std::move(noise);
  nlohmann::json tables = nlohmann::json::array();
  for (const auto& t : c.tables)
    tables.push_back({{"table", t.table},
                      {"device", t.device},
                      {"rows", t.rows},
                      {"base_runs", t.base_runs},
                      {"new_runs", t.next_runs},
                      {"change", t.change},
                      {"p_value", t.p_value},
                      {"significant", t.significant}});
  j["table_shifts"] = std::move(tables);
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& p : c.pairs) {
    nlohmann::json e = {
        {"table", p.base.table},
        {"verdict", std::string(to_string(p.verdict))},
        {"change", std::isfinite(p.change) ? nlohmann::json(p.change) : nlohmann::json()},
        {"method", std::string(to_string(p.method))},
        {"significant", p.significant},
        {"by_table", p.by_table},
        {"noise", p.noise > 0 ? nlohmann::json(p.noise) : nlohmann::json()},
        {"base_runs", p.base_runs},
        {"new_runs", p.next_runs},
        {"base", measure_json(p.base)},
        {"new", measure_json(p.next)}};
    e["key"] = e["base"]["key"];
    e["p_value"] = p.p_value ? nlohmann::json(*p.p_value) : nlohmann::json();
    e["p_adjusted"] = p.p_adjusted ? nlohmann::json(*p.p_adjusted) : nlohmann::json();
    pairs.push_back(std::move(e));
  }
  j["pairs"] = std::move(pairs);
  for (const auto* side : {&c.only_base, &c.only_next}) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& m : *side) rows.push_back(measure_json(m));
    j[side == &c.only_base ? "only_base" : "only_new"] = std::move(rows);
  }
  return json_text(j) + "\n";
}

std::string compare_junit(const Comparison& c, const CompareSides& s) {
  const size_t tests = c.pairs.size() + c.only_base.size() + c.only_next.size();
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  const int64_t failures = c.count(Verdict::regressed) + c.inconclusive_slower();
  out += fmt::format("<testsuites name=\"shardcost compare\" tests=\"{}\" failures=\"{}\">\n",
                     tests, failures);
  out +=
      fmt::format("  <testsuite name=\"{} vs {}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n",
                  svg::escape(s.base), svg::escape(s.next), tests, failures,
                  c.only_base.size() + c.only_next.size());
  out += fmt::format(
      "    <properties><property name=\"threshold\" value=\"{:g}\"/><property name=\"alpha\" "
      "value=\"{:g}\"/></properties>\n",
      c.options.threshold, c.options.alpha);
  auto testcase = [&](const Measure& m) {
    return fmt::format("    <testcase classname=\"shardcost.{}\" name=\"{}\"", m.table,
                       svg::escape(m.label()));
  };
  for (const auto& p : c.pairs) {
    out += testcase(p.base);
    if (p.verdict == Verdict::regressed) {
      out += fmt::format(
          ">\n      <failure type=\"regression\" message=\"{} slower\">{}</failure>\n    "
          "</testcase>\n",
          percent(p.change), svg::escape(pair_detail(p)));
    } else if (p.verdict == Verdict::inconclusive && p.change > 0) {
      out += fmt::format(
          ">\n      <failure type=\"inconclusive\" message=\"{} slower within noise {}\">{}"
          "</failure>\n    </testcase>\n",
          percent(p.change), noise_text(p), svg::escape(pair_detail(p)));
    } else {
      out += fmt::format(">\n      <system-out>{}: {}</system-out>\n    </testcase>\n",
                         to_string(p.verdict), svg::escape(pair_detail(p)));
    }
  }
  for (const auto* side : {&c.only_base, &c.only_next})
    for (const auto& m : *side)
      out +=
          testcase(m) + fmt::format(">\n      <skipped message=\"only in {}\"/>\n    </testcase>\n",
                                    side == &c.only_base ? "BASE" : "NEW");
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace shardcost::cli
