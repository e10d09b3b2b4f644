#include "svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

namespace shardcost::cli::svg {
namespace {

constexpr int kLeft = 72, kTop = 36, kBottom = 52, kRight = 16;
constexpr int kLine = 15, kTitleLine = 18;  // px from one baseline to the next
constexpr double kTitlePx = 15 * 1.1;       // the title's bold 15 px, as wide as this

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
    // Decade ticks need two decades in view: else the range grows to the decades around it.
    if (axis.ticks == Ticks::number && std::floor(std::log10(hi)) - std::ceil(std::log10(lo)) < 1)
      lo = std::pow(10, std::floor(std::log10(lo))), hi = std::pow(10, std::ceil(std::log10(hi)));
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

// One <text> at x, y (the first line's baseline), each further line a <tspan> below.
std::string text_lines(const std::vector<std::string>& lines, double x, double y,
                       const std::string& attributes = "", int line = kLine) {
  std::string o = fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\"{}>", x, y, attributes);
  for (size_t i = 0; i < lines.size(); ++i)
    o += i == 0
             ? escape(lines[i])
             : fmt::format("<tspan x=\"{:.1f}\" dy=\"{}\">{}</tspan>", x, line, escape(lines[i]));
  return o + "</text>";
}

// The legend below the frame: a swatch and the whole name of every series, in as many columns
// as the widest entry leaves room for, a name wider than the row wrapped onto more lines.
struct Legend {
  std::string svg;
  int bottom = 0;
};
Legend legend(const std::vector<std::pair<std::string, std::string>>& entries, int x0, int x1,
              int y0) {
  constexpr int kSwatch = 20, kGap = 18;
  std::vector<std::vector<std::string>> lines;
  double widest = 0;
  for (const auto& entry : entries) {
    lines.push_back(wrap(entry.first, x1 - x0 - kSwatch));
    for (const auto& l : lines.back()) widest = std::max(widest, text_width(l));
  }
  const int column = kSwatch + static_cast<int>(std::ceil(widest)) + kGap;
  const size_t columns =
      std::clamp<size_t>(static_cast<size_t>((x1 - x0 + kGap) / column), 1, entries.size());
  Legend out{"<g class=\"legend\">\n", y0};
  for (size_t first = 0; first < entries.size(); first += columns) {
    size_t tallest = 1;
    for (size_t i = first; i < std::min(first + columns, entries.size()); ++i) {
      const int x = x0 + static_cast<int>(i - first) * column;
      out.svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"10\" fill=\"{}\"/>", x,
                             out.bottom + 3, entries[i].second);
      out.svg += text_lines(lines[i], x + kSwatch, out.bottom + 13) + "\n";
      tallest = std::max(tallest, lines[i].size());
    }
    out.bottom += static_cast<int>(tallest) * kLine + 4;
  }
  out.svg += "</g>\n";
  return out;
}

// The SVG element around a plot's body.
std::string svg_open(const std::string& cls, int width, int height, const std::string& title) {
  return fmt::format(
      "<svg class=\"{0}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{1}\" height=\"{2}\" "
      "viewBox=\"0 0 {1} {2}\" "
      "role=\"img\" aria-label=\"{3}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{1}\" height=\"{2}\" fill=\"#ffffff\"/>\n",
      cls, width, height, escape(title));
}

std::string title_text(const std::vector<std::string>& lines, int x) {
  return text_lines(lines, x, 20, " class=\"title\" font-size=\"15\" font-weight=\"bold\"",
                    kTitleLine) +
         "\n";
}

// Bytes of the UTF-8 sequence that starts with c.
size_t utf8_length(unsigned char c) {
  return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

// The text cut where a line may break: after a space (the piece's flag; the space is dropped
// where the line breaks) or after one of _ - / , ; : (kept at the end of the piece).
std::vector<std::pair<std::string, bool>> break_pieces(const std::string& text) {
  std::vector<std::pair<std::string, bool>> out(1);
  for (char c : text) {
    if (c == ' ') {
      out.back().second = true;
      out.emplace_back();
      continue;
    }
    out.back().first += c;
    if (std::string_view("_-/,;:").find(c) != std::string_view::npos) out.emplace_back();
  }
  return out;
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

double text_width(const std::string& text, double font_px) {
  double em = 0;
  for (size_t i = 0; i < text.size(); i += utf8_length(static_cast<unsigned char>(text[i]))) {
    const char c = text[i];
    if (std::string_view(" .,:;'!|il").find(c) != std::string_view::npos)
      em += 0.32;
    else if (std::string_view("ftrjI()[]-").find(c) != std::string_view::npos)
      em += 0.42;
    else if (std::string_view("mwMW@%").find(c) != std::string_view::npos)
      em += 0.98;
    else if (c >= 'A' && c <= 'Z')
      em += 0.76;
    else
      em += 0.64;  // lower case, digits, and characters past ASCII (·, µ)
  }
  return em * font_px;
}

std::vector<std::string> wrap(const std::string& text, double max_px, double font_px) {
  std::vector<std::string> lines(1);
  bool space_before = false;  // the piece follows a space
  for (auto& [piece, space_after] : break_pieces(text)) {
    const std::string joined = lines.back() + (space_before ? " " : "") + piece;
    if (lines.back().empty() || text_width(joined, font_px) <= max_px)
      lines.back() = lines.back().empty() ? piece : joined;
    else
      lines.push_back(piece);
    space_before = space_after;
    // A piece wider than a whole line: cut it where it fills one.
    while (text_width(lines.back(), font_px) > max_px) {
      const std::string& l = lines.back();
      size_t cut = utf8_length(static_cast<unsigned char>(l[0]));
      for (size_t next = cut; next < l.size();
           next += utf8_length(static_cast<unsigned char>(l[next]))) {
        if (text_width(l.substr(0, next), font_px) > max_px) break;
        cut = next;
      }
      if (cut >= l.size()) break;
      std::string rest = l.substr(cut);
      lines.back().resize(cut);
      lines.push_back(std::move(rest));
    }
  }
  return lines;
}

std::string render(const Plot& p, int width, int height) {
  const Range xr = data_range(p, true, p.x), yr = data_range(p, false, p.y);
  const auto title = wrap(p.title, width - kLeft - kRight, kTitlePx);
  const int top = kTop + kTitleLine * static_cast<int>(title.size() - 1);
  const int right = width - kRight, bottom = height - kBottom;
  const Mapper mx{p.x.scale, xr, double(kLeft), double(right)};
  const Mapper my{p.y.scale, yr, double(bottom), double(top)};
  auto inside = [&](double x, double y) {
    return std::isfinite(x) && std::isfinite(y) && x >= xr.lo && x <= xr.hi && y >= yr.lo &&
           y <= yr.hi && (p.x.scale == Scale::linear || x > 0) &&
           (p.y.scale == Scale::linear || y > 0);
  };

  std::string o = title_text(title, kLeft);
  // Grid and tick labels.
  o += "<g class=\"grid\" stroke=\"#e3e3e3\" stroke-width=\"1\">\n";
  std::string labels;
  const auto xt = p.x.scale == Scale::log ? log_ticks(xr, p.x.ticks) : linear_ticks(xr);
  const auto yt = p.y.scale == Scale::log ? log_ticks(yr, p.y.ticks) : linear_ticks(yr);
  for (double v : xt) {
    const double x = mx(v);
    o += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", x, top,
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
      top, right - kLeft, bottom - top);
  o += fmt::format(
      "<text class=\"axis-label x\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" "
      "font-size=\"13\">{}</text>\n",
      (kLeft + right) / 2, height - 12, escape(p.x.label));
  o += fmt::format(
      "<text class=\"axis-label y\" x=\"0\" y=\"0\" text-anchor=\"middle\" font-size=\"13\" "
      "transform=\"translate(16 {}) rotate(-90)\">{}</text>\n",
      (top + bottom) / 2, escape(p.y.label));
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
          x, top, bottom, x - 4, top + 14, escape(rule.label));
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
  // Series, then the legend below the plot.
  std::vector<std::pair<std::string, std::string>> entries;
  for (size_t i = 0; i < p.series.size(); ++i) {
    const Series& s = p.series[i];
    const std::string colour = s.color.empty() ? palette(i) : s.color;
    entries.emplace_back(s.name, colour);
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
  }
  if (entries.empty()) return svg_open("plot", width, height, p.title) + o + "</svg>\n";
  const Legend l = legend(entries, kLeft, right, height);
  return svg_open("plot", width, l.bottom + 4, p.title) + o + l.svg + "</svg>\n";
}

std::string render_bars(const std::string& title, const std::string& category_label,
                        const std::string& value_label, const std::vector<Bar>& bars, int width) {
  constexpr int kMargin = 10, kRow = 26, kHeader = 20;
  const auto title_lines = wrap(title, width - 2 * kMargin, kTitlePx);
  const int top = kTop + kTitleLine * static_cast<int>(title_lines.size() - 1);
  // Labels as wide as the widest, up to 40 % of the plot (longer ones wrap), under the category
  // axis's label as their column's header; notes whole.
  std::vector<std::vector<std::string>> labels;
  double label_w = text_width(category_label, 13), note_w = 60, hi = 0;
  for (const auto& b : bars) {
    labels.push_back(wrap(b.label, width * 0.4));
    for (const auto& l : labels.back()) label_w = std::max(label_w, text_width(l));
    note_w = std::max(note_w, text_width(b.note) + 12);
    hi = std::max(hi, b.value);
  }
  if (hi <= 0) hi = 1;
  const int x0 = kMargin + static_cast<int>(std::ceil(label_w)) + 8;
  const int x1 = std::max(x0 + 60, width - static_cast<int>(std::ceil(note_w)));
  std::string o = title_text(title_lines, kMargin);
  o += fmt::format(
      "<text class=\"axis-label y\" x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"13\" "
      "font-style=\"italic\">{}</text>\n",
      x0 - 8, top + 12, escape(category_label));
  int y = top + kHeader;
  for (size_t i = 0; i < bars.size(); ++i) {
    const double w = (x1 - x0) * bars[i].value / hi;
    o += fmt::format("<g class=\"series\" data-name=\"{}\">", escape(bars[i].label));
    o += text_lines(labels[i], x0 - 8, y + 15, " text-anchor=\"end\"");
    o += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>"
        "<text x=\"{:.1f}\" y=\"{}\">{}</text></g>\n",
        x0, y + 3, std::max(w, 1.0), kRow - 8, palette(i), x0 + w + 6, y + 15,
        escape(bars[i].note));
    y += std::max(kRow, static_cast<int>(labels[i].size()) * kLine + 11);
  }
  const int height = y + 44;
  o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>\n", x0,
                   top + kHeader, y + 4);
  o += fmt::format(
      "<text class=\"axis-label x\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" "
      "font-size=\"13\">{}</text>\n",
      (x0 + x1) / 2, height - 14, escape(value_label));
  return svg_open("plot bars", width, height, title) + o + "</svg>\n";
}

std::string render_gantt(const std::string& title, const std::string& time_label,
                         const std::vector<GanttBar>& bars, int width) {
  constexpr int kMargin = 10, kRow = 24;
  const auto title_lines = wrap(title, width - 2 * kMargin, kTitlePx);
  const int top = kTop + kTitleLine * static_cast<int>(title_lines.size() - 1);
  std::vector<std::string> rows;
  double label_w = 40, hi = 0;
  for (const auto& b : bars) {
    if (std::find(rows.begin(), rows.end(), b.row) == rows.end()) {
      rows.push_back(b.row);
      label_w = std::max(label_w, std::min(text_width(b.row), width * 0.3));
    }
    hi = std::max(hi, b.end);
  }
  if (hi <= 0) hi = 1;
  const auto ticks = linear_ticks({0, hi});
  const double span = std::max(hi, ticks.empty() ? hi : ticks.back());
  const int x0 = kMargin + static_cast<int>(std::ceil(label_w)) + 8, x1 = width - kRight;
  auto x_of = [&](double t) { return x0 + (x1 - x0) * t / span; };
  std::string o = title_text(title_lines, kMargin);
  const int y_end = top + static_cast<int>(rows.size()) * kRow;
  for (double t : ticks)
    o += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        x_of(t), top, y_end, y_end + 16, number_label(t));
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto label = wrap(rows[r], width * 0.3);
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", x0 - 8,
                     top + static_cast<int>(r) * kRow + 16, escape(label.front()));
  }
  for (const auto& b : bars) {
    const size_t r = static_cast<size_t>(std::find(rows.begin(), rows.end(), b.row) - rows.begin());
    const double xa = x_of(b.start), w = std::max(1.0, x_of(b.end) - xa);
    const int y = top + static_cast<int>(r) * kRow;
    o += fmt::format(
        "<g class=\"series\" data-name=\"{}\"><title>{}</title><rect x=\"{:.1f}\" y=\"{}\" "
        "width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>",
        escape(b.row), escape(b.tip), xa, y + 3, w, kRow - 6, palette(r));
    if (text_width(b.label, 11) + 6 < w)
      o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" fill=\"#fff\">{}</text>",
                       xa + 3, y + 16, escape(b.label));
    o += "</g>\n";
  }
  o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>\n", x0, top,
                   y_end);
  const int height = y_end + 48;
  o += fmt::format(
      "<text class=\"axis-label x\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" "
      "font-size=\"13\">{}</text>\n",
      (x0 + x1) / 2, height - 10, escape(time_label));
  return svg_open("plot gantt", width, height, title) + o + "</svg>\n";
}

}  // namespace shardcost::cli::svg
