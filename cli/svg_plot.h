#pragma once
// A small SVG plotter for the HTML report: line/scatter plots with linear or log axes, unit-
// aware tick labels and a legend, and horizontal bar charts. Output is inline SVG text with
// no scripts and no external references. Every label is printed whole: text too wide for its
// place (a legend entry, a title, a bar's label) wraps onto more lines, and the plot grows.
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shardcost::cli::svg {

enum class Scale { linear, log };
enum class Ticks { number, bytes };  // bytes: 1K, 4M, 1G on powers of two

struct Axis {
  std::string label;  // with units: "bus bandwidth (GB/s)"
  Scale scale = Scale::linear;
  Ticks ticks = Ticks::number;
  std::optional<double> min, max;  // default: the data (linear axes start at 0 when all >= 0)
};

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // drawn in x order
  bool lines = true;
  double marker_radius = 3;
  std::vector<std::string> tips;  // optional hover text per point (SVG <title>)
  std::string color;              // empty: the palette's next colour
};

// A reference line: a peak, a memory capacity.
struct Rule {
  bool vertical = false;
  double at = 0;
  std::string label;
};

struct Plot {
  std::string title;
  Axis x, y;
  std::vector<Series> series;
  std::vector<Rule> rules;
};

// width x height holds the title, the frame and the axes; the legend is stacked below them
// (every series, each name in full), and the SVG is as much taller as the legend needs.
std::string render(const Plot&, int width = 640, int height = 400);

struct Bar {
  std::string label;
  double value = 0;
  std::string note;  // printed after the bar: "41.2 ms, 38 %"
};
// Bars of category_label (the y axis: "kernel class", printed over the bars' labels) against
// value_label (x, with units).
std::string render_bars(const std::string& title, const std::string& category_label,
                        const std::string& value_label, const std::vector<Bar>&, int width = 640);

// A Gantt chart: one row per distinct `row` (in first-seen order), a bar from start to end on
// a time axis from 0 (time_label, with units), its label inside the bar where it fits and its
// tip as hover text.
struct GanttBar {
  std::string row;
  double start = 0, end = 0;
  std::string label, tip;
};
std::string render_gantt(const std::string& title, const std::string& time_label,
                         const std::vector<GanttBar>&, int width = 640);

// Colour-blind-safe palette (Okabe-Ito, then Tableau), cycled.
const std::string& palette(size_t i);
std::string escape(const std::string&);  // XML text and attributes
// "1K", "64M", "2G" for powers of two; "1.5M" otherwise (binary, as nccl-tests prints sizes).
std::string bytes_label(double bytes);
// The lines text takes at font_px within max_px, by estimated glyph widths (a little wider
// than common sans-serif fonts): broken at spaces (dropped) or after _ - / , ; : and, where
// one run is still too long, anywhere. Joined, they are the text less the spaces broken at.
std::vector<std::string> wrap(const std::string& text, double max_px, double font_px = 12);
double text_width(const std::string& text, double font_px = 12);

}  // namespace shardcost::cli::svg
