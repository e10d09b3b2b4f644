#include "svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardcost::cli::svg {
namespace {

constexpr int kLeft = 72, kTop = 36, kBottom = 52, kLegendWidth = 190;

struct Range {
  double lo = 0, hi = 1;
};

// Maps data to pixels on one axis.
struct Mapper {
  Scale scale;
  Range r;
  double p0, p1;  // pixels of r.lo and r.hi
  double operator()(double v) const {
    double t;
    if (scale == Scale::log)
      t = (std::log10(v) - std::log10(r.lo)) / (std::log10(r.hi) - std::log10(r.lo));
    else
      t = (v - r.lo) / (r.hi - r.lo);
    return p0 + t * (p1 - p0);
  }
};

std::string number_label(double v) {
  const double a = std::abs(v);
  if (a == 0) return "0";
  if (a >= 1e6 || a < 1e-3) return fmt::format("{:.0e}", v);
  if (a >= 100) return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

Range data_range(const Plot& p, bool x_axis, const Axis& axis) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& s : p.series)
    for (const auto& [x, y] : s.points) {
      const double v = x_axis ? x : y;
      if (!std::isfinite(v) || (axis.scale == Scale::log && v <= 0)) continue;
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
  for (const auto& rule : p.rules)
    if (rule.vertical == x_axis && std::isfinite(rule.at))
      lo = std::min(lo, rule.at), hi = std::max(hi, rule.at);
  if (!std::isfinite(lo)) lo = axis.scale == Scale::log ? 1 : 0, hi = lo * 10 + 1;
  if (axis.scale == Scale::linear) {
    if (lo >= 0) lo = 0;  // rates and times read honestly from zero
    if (hi <= lo) hi = lo + 1;
    hi += (hi - lo) * 0.05;
  } else {
    if (hi <= lo) hi = lo * 10;
    lo /= 1.3, hi *= 1.3;
  }
  if (axis.min) lo = *axis.min;
  if (axis.max) hi = *axis.max;
  return {lo, hi};
}

std::vector<double> linear_ticks(Range r) {
  const double span = r.hi - r.lo;
  const double raw = span / 6;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> out;
  for (double v = std::ceil(r.lo / step) * step; v <= r.hi + step * 1e-9; v += step)
    out.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

std::vector<double> log_ticks(Range r, Ticks kind) {
  std::vector<double> out;
  const double base = kind == Ticks::bytes ? 2 : 10;
  const double first = std::ceil(std::log(r.lo) / std::log(base) - 1e-9);
  const double last = std::floor(std::log(r.hi) / std::log(base) + 1e-9);
  double stride = 1;
  while ((last - first) / stride > 8) stride *= 2;
  for (double e = first; e <= last; e += stride) out.push_back(std::pow(base, e));
  return out;
}

std::string tick_label(double v, Ticks kind) {
  return kind == Ticks::bytes ? bytes_label(v) : number_label(v);
}

}  // namespace

const std::string& palette(size_t i) {
  static const std::vector<std::string> colours = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                   "#E69F00", "#56B4E9", "#000000", "#8C564B",
                                                   "#7F7F7F", "#BCBD22"};
  return colours[i % colours.size()];
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string bytes_label(double bytes) {
  static const char* kUnits[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (std::abs(bytes) >= 1024 && u < 4) bytes /= 1024, ++u;
  return fmt::format(
      "{}{}",
      bytes == std::floor(bytes) ? fmt::format("{:.0f}", bytes) : fmt::format("{:.3g}", bytes),
      kUnits[u]);
}

std::string render(const Plot& p, int width, int height) {
  const Range xr = data_range(p, true, p.x), yr = data_range(p, false, p.y);
  const int right = width - kLegendWidth, bottom = height - kBottom;
  const Mapper mx{p.x.scale, xr, double(kLeft), double(right)};
  const Mapper my{p.y.scale, yr, double(bottom), double(kTop)};
  auto inside = [&](double x, double y) {
    return std::isfinite(x) && std::isfinite(y) && x >= xr.lo && x <= xr.hi && y >= yr.lo &&
           y <= yr.hi && (p.x.scale == Scale::linear || x > 0) &&
           (p.y.scale == Scale::linear || y > 0);
  };

  std::string o = fmt::format(
      "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" "
      "role=\"img\" aria-label=\"{2}\" font-family=\"sans-serif\" font-size=\"12\">\n",
      width, height, escape(p.title));
  o += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", width, height);
  o += fmt::format(
      "<text class=\"title\" x=\"{}\" y=\"20\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
      kLeft, escape(p.title));
  // Grid and tick labels.
  o += "<g class=\"grid\" stroke=\"#e3e3e3\" stroke-width=\"1\">\n";
  std::string labels;
  const auto xt = p.x.scale == Scale::log ? log_ticks(xr, p.x.ticks) : linear_ticks(xr);
  const auto yt = p.y.scale == Scale::log ? log_ticks(yr, p.y.ticks) : linear_ticks(yr);
  for (double v : xt) {
    const double x = mx(v);
    o += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", x, kTop,
                     bottom);
    labels +=
        fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                    x, bottom + 16, escape(tick_label(v, p.x.ticks)));
  }
  for (double v : yt) {
    const double y = my(v);
    o += fmt::format("<line x1=\"{0}\" y1=\"{2:.1f}\" x2=\"{1}\" y2=\"{2:.1f}\"/>\n", kLeft, right,
                     y);
    labels +=
        fmt::format("<text class=\"tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                    kLeft - 6, y + 4, escape(tick_label(v, p.y.ticks)));
  }
  o += "</g>\n" + labels;
  o += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", kLeft,
      kTop, right - kLeft, bottom - kTop);
  o += fmt::format(
      "<text class=\"axis-label x\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" "
      "font-size=\"13\">{}</text>\n",
      (kLeft + right) / 2, height - 12, escape(p.x.label));
  o += fmt::format(
      "<text class=\"axis-label y\" x=\"0\" y=\"0\" text-anchor=\"middle\" font-size=\"13\" "
      "transform=\"translate(16 {}) rotate(-90)\">{}</text>\n",
      (kTop + bottom) / 2, escape(p.y.label));
  // Reference lines.
  for (const auto& rule : p.rules) {
    if (rule.vertical) {
      if (!inside(rule.at, yr.hi)) continue;
      const double x = mx(rule.at);
      o += fmt::format(
          "<g class=\"rule\"><line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" "
          "stroke=\"#B00020\" "
          "stroke-dasharray=\"6 4\"/><text x=\"{3:.1f}\" y=\"{4}\" fill=\"#B00020\" "
          "text-anchor=\"end\">{5}</text></g>\n",
          x, kTop, bottom, x - 4, kTop + 14, escape(rule.label));
    } else {
      if (!inside(xr.lo, rule.at)) continue;
      const double y = my(rule.at);
      o += fmt::format(
          "<g class=\"rule\"><line x1=\"{0}\" y1=\"{2:.1f}\" x2=\"{1}\" y2=\"{2:.1f}\" "
          "stroke=\"#B00020\" "
          "stroke-dasharray=\"6 4\"/><text x=\"{3}\" y=\"{4:.1f}\" "
          "fill=\"#B00020\">{5}</text></g>\n",
          kLeft, right, y, kLeft + 6, y - 5, escape(rule.label));
    }
  }
  // Series, then the legend beside the plot.
  std::string legend = "<g class=\"legend\">\n";
  for (size_t i = 0; i < p.series.size(); ++i) {
    const Series& s = p.series[i];
    const std::string colour = s.color.empty() ? palette(i) : s.color;
    std::vector<size_t> order(s.points.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return s.points[a].first < s.points[b].first; });
    o += fmt::format("<g class=\"series\" data-name=\"{}\" fill=\"{}\" stroke=\"{}\">\n",
                     escape(s.name), colour, colour);
    if (s.lines && s.points.size() > 1) {
      std::string pts;
      for (size_t k : order)
        if (inside(s.points[k].first, s.points[k].second))
          pts += fmt::format("{:.1f},{:.1f} ", mx(s.points[k].first), my(s.points[k].second));
      o += fmt::format("<polyline fill=\"none\" stroke-width=\"2\" points=\"{}\"/>\n", pts);
    }
    for (size_t k : order) {
      const auto [x, y] = s.points[k];
      if (!inside(x, y)) continue;
      o += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\">", mx(x), my(y),
                       s.marker_radius);
      if (k < s.tips.size()) o += "<title>" + escape(s.tips[k]) + "</title>";
      o += "</circle>\n";
    }
    o += "</g>\n";
    const int ly = kTop + 8 + static_cast<int>(i) * 18;
    if (ly > height - 20) continue;
    std::string name = s.name.size() > 26 ? s.name.substr(0, 25) + "…" : s.name;
    legend += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}"
        "<title>{}</title></text>\n",
        right + 12, ly, colour, right + 32, ly + 10, escape(name), escape(s.name));
  }
  o += legend + "</g>\n</svg>\n";
  return o;
}

std::string render_bars(const std::string& title, const std::string& value_label,
                        const std::vector<Bar>& bars, int width) {
  constexpr int kLabelWidth = 150, kRow = 26, kNoteWidth = 150;
  const int height = kTop + static_cast<int>(bars.size()) * kRow + 44;
  double hi = 0;
  for (const auto& b : bars) hi = std::max(hi, b.value);
  if (hi <= 0) hi = 1;
  const int x0 = kLabelWidth, x1 = width - kNoteWidth;
  std::string o = fmt::format(
      "<svg class=\"plot bars\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" "
      "role=\"img\" aria-label=\"{2}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
      "<text class=\"title\" x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">{2}</text>\n",
      width, height, escape(title));
  for (size_t i = 0; i < bars.size(); ++i) {
    const int y = kTop + static_cast<int>(i) * kRow;
    const double w = (x1 - x0) * bars[i].value / hi;
    o += fmt::format(
        "<g class=\"series\" data-name=\"{0}\"><text x=\"{1}\" y=\"{2}\" "
        "text-anchor=\"end\">{0}</text>"
        "<rect x=\"{3}\" y=\"{4}\" width=\"{5:.1f}\" height=\"{6}\" fill=\"{7}\"/>"
        "<text x=\"{8:.1f}\" y=\"{2}\">{9}</text></g>\n",
        escape(bars[i].label), x0 - 8, y + 15, x0, y + 3, std::max(w, 1.0), kRow - 8, palette(i),
        x0 + w + 6, escape(bars[i].note));
  }
  o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>\n", x0,
                   kTop, height - 40);
  o += fmt::format(
      "<text class=\"axis-label x\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" "
      "font-size=\"13\">{}</text>\n",
      (x0 + x1) / 2, height - 14, escape(value_label));
  return o + "</svg>\n";
}

}  // namespace shardcost::cli::svg
