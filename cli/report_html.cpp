// Builds the report's sections from the store's tables: records in, HTML text out.
#include "report_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "format.h"
#include "shardcost/error.h"
#include "shardcost/store_costs.h"
#include "shardcost/trace.h"
#include "svg_plot.h"

namespace shardcost::cli {
namespace {

using svg::escape;

// Cells by column name; rows of a CostTable are typed as SQLite returns them.
struct Rows {
  const db::CostTable& t;
  size_t col(const std::string& name) const {
    for (size_t i = 0; i < t.columns.size(); ++i)
      if (t.columns[i] == name) return i;
    throw Error("internal: table " + t.name + " has no column " + name);
  }
  double num(const std::vector<db::Cell>& row, const std::string& name) const {
    const db::Cell& c = row[col(name)];
    if (const auto* i = std::get_if<int64_t>(&c)) return static_cast<double>(*i);
    if (const auto* d = std::get_if<double>(&c)) return *d;
    return NAN;
  }
  std::string text(const std::vector<db::Cell>& row, const std::string& name) const {
    return db::cell_text(row[col(name)]);
  }
};

// Series keyed and ordered by label; a later row at the same x replaces an earlier one (runs
// are read oldest first, so the newest measurement is drawn).
using SeriesMap = std::map<std::string, std::map<double, double>>;

std::vector<svg::Series> to_series(const SeriesMap& m) {
  std::vector<svg::Series> out;
  for (const auto& [name, pts] : m) {
    svg::Series s;
    s.name = name;
    for (const auto& [x, y] : pts) s.points.emplace_back(x, y);
    out.push_back(std::move(s));
  }
  return out;
}

std::string figure(const std::string& svg_text, const std::string& caption) {
  return "<figure>" + svg_text + "<figcaption>" + caption + "</figcaption></figure>\n";
}

std::string empty_note(const std::string& what) {
  return "<p class=\"empty\">" + escape(what) + "</p>\n";
}

size_t distinct_devices(const Rows& r) {
  std::set<std::string> d;
  for (const auto& row : r.t.rows) d.insert(r.text(row, "device"));
  return d.size();
}

// Devices whose best bandwidths differ more than this share a plot on a log axis: on a linear
// one a host's lines would lie flat on zero beside a GPU's.
constexpr double kLogSpan = 20;

// The y axis of a bandwidth plot (what, in GB/s): linear from zero, or logarithmic with decade
// ticks where the devices' best bandwidths (GB/s by device) span more than kLogSpan.
svg::Axis bandwidth_axis(const std::map<std::string, double>& best, const std::string& what) {
  double lo = INFINITY, hi = 0;
  for (const auto& [device, b] : best)
    if (b > 0) lo = std::min(lo, b), hi = std::max(hi, b);
  if (best.size() > 1 && hi > lo * kLogSpan)
    return {what + " (GB/s) (log)", svg::Scale::log, svg::Ticks::number, {}, {}};
  return {what + " (GB/s)", svg::Scale::linear, svg::Ticks::number, {}, {}};
}

std::string collectives_section(const db::CostTable& t) {
  Rows r{t};
  if (t.rows.empty())
    return empty_note(
        "No collective measurements in this store (bench collective, import nccl-tests).");
  const bool several = distinct_devices(r) > 1;
  std::map<std::string, SeriesMap> by_op;
  std::map<std::string, std::map<std::string, double>> best;  // op -> device -> GB/s
  std::set<std::string> has_out_of_place;
  for (const auto& row : t.rows)
    if (r.num(row, "in_place") == 0) has_out_of_place.insert(r.text(row, "op"));
  for (const auto& row : t.rows) {
    const std::string op = r.text(row, "op");
    if (r.num(row, "in_place") != 0 && has_out_of_place.count(op)) continue;
    std::string name =
        fmt::format("{} ranks, {}", r.text(row, "ranks"),
                    r.text(row, "fabric_level") == "inter_node" ? "inter-node" : "intra-node");
    const std::string device = r.text(row, "device");
    if (several) name += " · " + device;
    const double busbw = r.num(row, "busbw_gbps");
    by_op[op][name][r.num(row, "bytes")] = busbw;
    double& b = best[op][device];
    b = std::max(b, busbw);
  }
  std::string out;
  for (const auto& [op, series] : by_op) {
    svg::Plot p;
    p.title = op + ": bus bandwidth";
    p.x = {"message size (bytes, log scale)", svg::Scale::log, svg::Ticks::bytes, {}, {}};
    p.y = bandwidth_axis(best[op], "bus bandwidth");
    p.series = to_series(series);
    out += figure(
        svg::render(p),
        escape(op) +
            ": busbw = algbw × nccl-tests' bus factor; one line per rank count and fabric level.");
  }
  return out;
}

std::string gemm_section(const db::CostTable& t) {
  Rows r{t};
  if (t.rows.empty()) return empty_note("No GEMM measurements in this store (bench gemm).");
  SeriesMap rate, fraction;
  std::vector<std::string> matched, unmatched;
  std::map<std::string, std::optional<Device>> devices;
  for (const auto& row : t.rows) devices.emplace(r.text(row, "device"), std::nullopt);
  for (auto& [name, dev] : devices) {
    dev = catalog_device(name);
    (dev ? matched : unmatched).push_back(dev ? name + " = " + dev->name : name);
  }
  const bool several = devices.size() > 1;
  for (const auto& row : t.rows) {
    const std::string device = r.text(row, "device"), dtype = r.text(row, "dtype");
    const std::string name = several ? dtype + " · " + device : dtype;
    const double gflop = r.num(row, "flop") / 1e9, tflops = r.num(row, "tflop_per_s");
    rate[name][gflop] = tflops;
    const auto& dev = devices.at(device);
    if (!dev) continue;
    try {
      const double peak = dev->peak_flops[static_cast<size_t>(parse_dtype(dtype))];
      if (peak > 0) fraction[name][gflop] = tflops * 1e12 / peak;
    } catch (const InputError&) {
      // A dtype the catalog has no peak for: no fraction to draw.
    }
  }
  svg::Plot p;
  p.title = "GEMM throughput";
  p.x = {"GEMM size (GFLOP per call, log scale)", svg::Scale::log, svg::Ticks::number, {}, {}};
  p.y = {"throughput (TFLOP/s)", svg::Scale::linear, svg::Ticks::number, {}, {}};
  p.series = to_series(rate);
  std::string out =
      figure(svg::render(p), "TFLOP/s = 2·m·n·k·batch / median time, one line per data type.");
  if (!fraction.empty()) {
    svg::Plot f = p;
    f.title = "GEMM fraction of peak";
    f.y = {"fraction of datasheet peak", svg::Scale::linear, svg::Ticks::number, 0.0, 1.05};
    f.series = to_series(fraction);
    f.rules = {{false, 1.0, "datasheet peak"}};
    out += figure(svg::render(f), "Peak from the catalog device: " +
                                      escape(fmt::format("{}", fmt::join(matched, "; "))) + ".");
  }
  if (!unmatched.empty())
    out += "<p class=\"note\">No catalog device matches " +
           escape(fmt::format("{}", fmt::join(unmatched, "; "))) +
           ", so no fraction of peak is drawn for it.</p>\n";
  return out;
}

std::string memory_section(const db::CostTable& t) {
  Rows r{t};
  if (t.rows.empty())
    return empty_note("No memory-bandwidth measurements in this store (bench memory).");
  const bool several = distinct_devices(r) > 1;
  SeriesMap series;
  std::map<std::string, double> best;  // device -> GB/s
  std::vector<svg::Rule> rules;
  std::set<std::string> seen;
  for (const auto& row : t.rows) {
    const std::string device = r.text(row, "device");
    const double gbps = r.num(row, "bandwidth_gbps");
    series[several ? r.text(row, "kind") + " · " + device : r.text(row, "kind")]
          [r.num(row, "bytes")] = gbps;
    double& b = best[device];
    b = std::max(b, gbps);
    if (seen.insert(device).second)
      if (auto dev = catalog_device(device); dev && dev->memory_bandwidth_Bps > 0)
        rules.push_back({false, dev->memory_bandwidth_Bps / 1e9, dev->name + " peak"});
  }
  svg::Plot p;
  p.title = "Memory bandwidth";
  p.x = {"buffer size (bytes, log scale)", svg::Scale::log, svg::Ticks::bytes, {}, {}};
  p.y = bandwidth_axis(best, "bandwidth");
  p.series = to_series(series);
  p.rules = rules;
  return figure(svg::render(p),
                "bandwidth = bytes / median time (1 GB/s = 1e9 B/s), one line per kind.");
}

std::string kernels_section(const db::CostTable& t) {
  if (t.rows.empty())
    return empty_note("No traced kernels in this store (trace -- CMD, import kineto).");
  const trace::Summary s = trace::summarize(trace::from_kernel_table(t), 5);
  std::vector<svg::Bar> bars;
  for (const auto& c : s.classes) {
    if (c.time_ns <= 0) continue;
    const double share = s.gpu_time_ns > 0 ? 100.0 * static_cast<double>(c.time_ns) /
                                                 static_cast<double>(s.gpu_time_ns)
                                           : 0;
    bars.push_back({std::string(trace::to_string(c.cls)), static_cast<double>(c.time_ns) / 1e6,
                    fmt::format("{:.3g} ms, {:.0f} %, {} calls",
                                static_cast<double>(c.time_ns) / 1e6, share, c.count)});
  }
  std::string out =
      figure(svg::render_bars("Traced GPU time per kernel class", "kernel class",
                              "time (ms, summed over events)", bars),
             fmt::format("{} kernels, {} copies, {} sets; classes as in docs/tracing.md.",
                         s.kernels, s.copies, s.sets));
  out += "<table><tr><th>kernel</th><th>class</th><th>calls</th><th>time (ms)</th></tr>\n";
  for (const auto& k : s.top)
    out += fmt::format("<tr><td class=\"name\">{}</td><td>{}</td><td>{}</td><td>{:.3f}</td></tr>\n",
                       escape(k.name), trace::to_string(k.cls), k.count,
                       static_cast<double>(k.time_ns) / 1e6);
  return out + "</table>\n";
}

std::string models_section(const std::vector<FittedModelPlot>& models) {
  if (models.empty()) return empty_note("No fitted models in this store (shardcost fit).");
  std::string out;
  for (const auto& m : models) {
    if (m.measured_predicted_s.empty()) continue;
    svg::Plot p;
    p.title = fmt::format("{} · {} · {}", m.model.kind, m.model.device, m.model.key);
    p.x = {"measured time (µs, log scale)", svg::Scale::log, svg::Ticks::number, {}, {}};
    p.y = {"predicted time (µs, log scale)", svg::Scale::log, svg::Ticks::number, {}, {}};
    const char* what = m.model.kind == "collective_curves" ? "measured sizes and rank counts"
                       : m.model.kind == "memory_curve"    ? "measured sizes"
                       : m.model.kind == "kernel_classes"
                           ? "traced launches (mean per kernel and launch)"
                           : "GEMM shapes";
    svg::Series rows{what, {}, false, 2, {}, ""};
    double lo = 1e300, hi = 0;
    for (const auto& [measured, predicted] : m.measured_predicted_s) {
      rows.points.emplace_back(measured * 1e6, predicted * 1e6);
      lo = std::min({lo, measured * 1e6, predicted * 1e6});
      hi = std::max({hi, measured * 1e6, predicted * 1e6});
    }
    std::sort(rows.points.begin(), rows.points.end());
    p.series.push_back(std::move(rows));
    p.series.push_back({"predicted = measured", {{lo, lo}, {hi, hi}}, true, 0, {}, ""});
    std::string figures;
    for (const auto& v : m.model.cross_validation)
      figures += fmt::format("; held out {}: median {:.1f} %, p90 {:.1f} %", v.split,
                             100 * v.median, 100 * v.p90);
    const std::string drawn =
        m.held_out ? fmt::format(
                         "{} of the {} held-out predictions ({}), each for a row the model was "
                         "fitted without",
                         m.measured_predicted_s.size(), m.model.cross_validation.front().rows,
                         m.model.cross_validation.front().split)
                   : fmt::format("{} rows it was fitted on", m.measured_predicted_s.size());
    out += figure(svg::render(p), fmt::format("{}{}.", drawn, figures));
  }
  return out;
}

// Fractions of values per bin, drawn as a step outline over [lo, hi] (log bins when asked).
svg::Series histogram(const std::string& name, const std::vector<double>& values, double lo,
                      double hi, bool log_bins, double scale) {
  constexpr int kBins = 30;
  std::vector<double> count(kBins, 0);
  auto bin_of = [&](double v) {
    const double f = log_bins ? std::log(v / lo) / std::log(hi / lo) : (v - lo) / (hi - lo);
    return std::clamp(static_cast<int>(f * kBins), 0, kBins - 1);
  };
  for (double v : values)
    count[static_cast<size_t>(bin_of(v))] += 1.0 / static_cast<double>(values.size());
  auto edge = [&](int i) {
    const double f = static_cast<double>(i) / kBins;
    return (log_bins ? lo * std::pow(hi / lo, f) : lo + (hi - lo) * f) * scale;
  };
  svg::Series out{name, {}, true, 0, {}, ""};
  for (int i = 0; i < kBins; ++i) {
    out.points.emplace_back(edge(i), 100 * count[static_cast<size_t>(i)]);
    out.points.emplace_back(edge(i + 1), 100 * count[static_cast<size_t>(i)]);
  }
  return out;
}

std::string steps_section(const std::vector<db::StepPoint>& steps,
                          const std::optional<PredictedSteps>& predicted) {
  if (steps.empty() && !predicted)
    return empty_note(
        "No training steps in this store (import kineto a PyTorch profiler trace with its "
        "ProfilerStep spans), and no prediction (report --model M --cluster C --gbs N --strategy S "
        "--seq-lengths FILE).");
  std::map<std::string, std::vector<double>> runs;  // source -> step seconds
  for (const auto& st : steps) {
    const std::string& name = st.source.empty() ? st.run_uuid : st.source;
    runs[name.substr(name.find_last_of('/') + 1)].push_back(st.duration_ns *
                                                            1e-9);  // the file's name
  }
  double lo = 1e300, hi = 0;
  for (const auto& [name, v] : runs)
    for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x);
  if (predicted)
    for (double x : predicted->step_s) lo = std::min(lo, x), hi = std::max(hi, x);
  if (hi <= lo) hi = lo * 1.01 + 1e-9;
  svg::Plot p;
  p.title = "Step times";
  p.x = {"step time (ms)", svg::Scale::linear, svg::Ticks::number, {}, {}};
  p.y = {"steps (%)", svg::Scale::linear, svg::Ticks::number, {}, {}};
  size_t shown = 0;
  for (const auto& [name, v] : runs)
    if (shown++ < 6)
      p.series.push_back(
          histogram(fmt::format("measured: {} ({} steps)", name, v.size()), v, lo, hi, false, 1e3));
  if (predicted)
    p.series.push_back(histogram(
        fmt::format("predicted: {} ({} batches)", predicted->label, predicted->step_s.size()),
        predicted->step_s, lo, hi, false, 1e3));
  std::string out =
      figure(svg::render(p),
             "The share of steps per step-time bin: each run's measured steps (ProfilerStep "
             "spans) and the steps priced on sampled global batches.");
  if (predicted && !predicted->lengths.empty()) {
    std::vector<double> lengths(predicted->lengths.begin(), predicted->lengths.end());
    const auto [mn, mx] = std::minmax_element(lengths.begin(), lengths.end());
    svg::Plot l;
    l.title = "Sequence lengths";
    l.x = {"tokens (log scale)", svg::Scale::log, svg::Ticks::number, {}, {}};
    l.y = {"sequences (%)", svg::Scale::linear, svg::Ticks::number, {}, {}};
    l.series.push_back(
        histogram("lengths drawn", lengths, *mn, std::max(*mx, *mn * 1.01), true, 1));
    out += figure(svg::render(l),
                  fmt::format("{} lengths drawn from the distribution priced, in log-spaced bins.",
                              lengths.size()));
  }
  return out;
}

std::string plans_section(const RankedPlans& plans) {
  const auto& best = plans.result.best;
  if (best.empty())
    return empty_note("No strategy fits in memory for this model, cluster and batch.");
  // The frontier: no other plan is both faster and smaller.
  std::vector<size_t> order(best.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_pair(best[a].memory_per_gpu_bytes, best[a].step_time_s) <
           std::make_pair(best[b].memory_per_gpu_bytes, best[b].step_time_s);
  });
  std::vector<size_t> frontier;
  double fastest = INFINITY;
  for (size_t i : order)
    if (best[i].step_time_s < fastest) fastest = best[i].step_time_s, frontier.push_back(i);
  svg::Series all{
      "strategies (" + std::to_string(best.size()) + ")", {}, false, 2.5, {}, "#9AA5B1"};
  svg::Series front{"feasible frontier", {}, true, 4.5, {}, "#D55E00"};
  for (const auto& e : best) {
    all.points.emplace_back(e.memory_per_gpu_bytes / kGiB, e.step_time_s);
    all.tips.push_back(fmt::format("{}: {:.3f} s, {:.1f} GiB", to_string(e.strategy), e.step_time_s,
                                   e.memory_per_gpu_bytes / kGiB));
  }
  for (size_t i : frontier) {
    front.points.emplace_back(best[i].memory_per_gpu_bytes / kGiB, best[i].step_time_s);
    front.tips.push_back(all.tips[i]);
  }
  svg::Plot p;
  p.title = fmt::format("{} on {} ({} GPUs, global batch {})", plans.model, plans.cluster,
                        plans.gpus, plans.global_batch);
  p.x = {"memory per GPU (GiB)", svg::Scale::linear, svg::Ticks::number, {}, {}};
  // Times differ by tens of percent between plans: an axis from zero would flatten them.
  double t_lo = INFINITY, t_hi = 0;
  for (const auto& e : best)
    t_lo = std::min(t_lo, e.step_time_s), t_hi = std::max(t_hi, e.step_time_s);
  const double pad = std::max((t_hi - t_lo) * 0.08, t_hi * 0.01);
  p.y = {"step time (s)", svg::Scale::linear, svg::Ticks::number, std::max(0.0, t_lo - pad),
         t_hi + pad};
  p.series = {all, front};
  if (plans.capacity_bytes > 0) p.rules = {{true, plans.capacity_bytes / kGiB, "device memory"}};
  std::string out = figure(
      svg::render(p, 900, 460),
      fmt::format(
          "{} candidates evaluated, {} fit in memory; the {} fastest drawn, the frontier (no plan "
          "both faster and smaller) in orange. Hover a point for its strategy.",
          plans.result.evaluated, plans.result.feasible, best.size()));
  out +=
      "<table><tr><th>frontier strategy</th><th>step time (s)</th><th>memory "
      "(GiB)</th><th>MFU</th></tr>\n";
  for (size_t i : frontier)
    out += fmt::format("<tr><td>{}</td><td>{:.3f}</td><td>{:.1f}</td><td>{:.1f} %</td></tr>\n",
                       escape(to_string(best[i].strategy)), best[i].step_time_s,
                       best[i].memory_per_gpu_bytes / kGiB, best[i].mfu * 100);
  return out + "</table>\n";
}

std::string summary_section(const db::StoreInfo& info) {
  std::string out =
      "<table><tr><th>run</th><th>tool</th><th>host</th><th>status</th><th>source / "
      "command</th></tr>\n";
  for (const auto& r : info.runs)
    out +=
        fmt::format("<tr><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", r.id,
                    escape(r.tool), escape(r.tool_version), escape(r.host), escape(r.status),
                    escape((r.source.empty() ? r.command_line : r.source).substr(0, 100)));
  out += "</table>\n<p>";
  for (const auto& c : info.counts) out += fmt::format("{} {} · ", escape(c.table), c.rows);
  return out + "</p>\n";
}

constexpr std::string_view kStyle = R"css(
body { font-family: sans-serif; margin: 24px; color: #222; background: #fafafa; }
h1 { margin-bottom: 4px; } h2 { margin-top: 32px; border-bottom: 1px solid #ccc; }
.grid { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; background: #fff; border: 1px solid #ddd; padding: 8px; }
figcaption { font-size: 12px; color: #555; max-width: 640px; margin-top: 4px; }
table { border-collapse: collapse; font-size: 12px; margin: 8px 0; background: #fff; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; }
td.name { max-width: 900px; overflow-wrap: anywhere; }
.empty, .note { color: #666; font-style: italic; }
)css";

}  // namespace

std::optional<Device> catalog_device(const std::string& stored_name) {
  return catalog_device_for(stored_name);
}

std::string report_html(const ReportInputs& in) {
  std::string o =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>shardcost "
      "report</title>\n<style>";
  o += kStyle;
  o += "</style></head><body>\n<h1>shardcost report</h1>\n";
  o += fmt::format("<p>Store <code>{}</code>, schema version {}.</p>\n", escape(in.info.path),
                   in.info.schema_version);
  o += "<h2 id=\"runs\">Runs</h2>\n" + summary_section(in.info);
  o += "<h2 id=\"collectives\">Collectives</h2>\n<div class=\"grid\">" +
       collectives_section(in.collective) + "</div>\n";
  o += "<h2 id=\"gemm\">GEMM</h2>\n<div class=\"grid\">" + gemm_section(in.gemm) + "</div>\n";
  o += "<h2 id=\"memory\">Memory bandwidth</h2>\n<div class=\"grid\">" + memory_section(in.memory) +
       "</div>\n";
  o += "<h2 id=\"kernels\">Traced kernels</h2>\n<div class=\"grid\">" +
       kernels_section(in.kernels) + "</div>\n";
  o += "<h2 id=\"steps\">Training steps</h2>\n<div class=\"grid\">" +
       steps_section(in.steps, in.predicted) + "</div>\n";
  o += "<h2 id=\"models\">Fitted models</h2>\n<div class=\"grid\">" + models_section(in.models) +
       "</div>\n";
  if (!in.calibrations.empty())
    o += "<h2 id=\"calibration\">Measured training steps</h2>\n<div class=\"grid\">" +
         calibrations_section(in.calibrations) + "</div>\n";
  if (in.plans) o += "<h2 id=\"strategies\">Ranked strategies</h2>\n" + plans_section(*in.plans);
  if (!in.schedules.empty())
    o += "<h2 id=\"schedules\">Job schedules</h2>\n" + schedules_section(in.schedules);
  return o + "</body></html>\n";
}

}  // namespace shardcost::cli
