#include "svg_plot.h"

#include <gtest/gtest.h>

#include <regex>

namespace shardcost::cli::svg {
namespace {

std::string no_spaces(std::string s) {
  std::erase(s, ' ');
  return s;
}

// What the page shows of an SVG fragment: its text, without tags or <title> tooltips, and
// without spaces (a name wrapped at a space loses it).
std::string visible(std::string svg) {
  svg = std::regex_replace(svg, std::regex("<title>[^<]*</title>"), "");
  return no_spaces(std::regex_replace(svg, std::regex("<[^>]*>|\n"), ""));
}

std::string legend_of(const std::string& svg) {
  const size_t from = svg.find("<g class=\"legend\">");
  EXPECT_NE(from, std::string::npos) << "no legend";
  return from == std::string::npos ? "" : svg.substr(from, svg.find("</g>", from) - from);
}

std::vector<std::string> matches(const std::string& s, const std::string& pattern) {
  std::vector<std::string> out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(s.begin(), s.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

const std::string kKernel =
    "ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_nn on NVIDIA H100 80GB HBM3 "
    "(gpu-node-01, rank 0)";

Plot many_series() {
  Plot p;
  p.title = "Memory bandwidth";
  p.x = {"buffer size (bytes, log scale)", Scale::log, Ticks::bytes, {}, {}};
  p.y = {"bandwidth (GB/s)", Scale::linear, Ticks::number, {}, {}};
  std::vector<std::string> names = {"copy_d2d · NVIDIA A100-SXM4-80GB",
                                    "copy · Generic Host CPU @ 3.0GHz", kKernel};
  for (int i = 0; i < 20; ++i) names.push_back("series " + std::to_string(i));
  for (size_t i = 0; i < names.size(); ++i)
    p.series.push_back({names[i], {{1024, i + 1.0}, {4096, i + 2.0}}, true, 3, {}, ""});
  return p;
}

TEST(SvgPlot, LegendShowsEverySeriesNameInFull) {
  const Plot p = many_series();
  const std::string legend = visible(legend_of(render(p)));
  for (const auto& s : p.series)
    EXPECT_NE(legend.find(no_spaces(escape(s.name))), std::string::npos) << s.name;
}

TEST(SvgPlot, LegendGrowsThePlotAndStaysInsideIt) {
  const std::string svg = render(many_series(), 640, 400);
  const auto height = matches(svg, "<svg[^>]* height=\"([0-9]+)\"");
  ASSERT_EQ(height.size(), 1u);
  EXPECT_GT(std::stoi(height[0]), 400);  // 23 entries do not fit beside a 400 px plot
  for (const auto& y : matches(legend_of(svg), " y=\"([0-9.]+)\""))
    EXPECT_LT(std::stod(y), std::stoi(height[0]));
  for (const auto& x : matches(legend_of(svg), " x=\"([0-9.]+)\"")) EXPECT_LT(std::stod(x), 640);
}

TEST(SvgPlot, WrapKeepsEveryCharacterWithinTheWidth) {
  for (double width : {120.0, 300.0, 532.0}) {
    const auto lines = wrap(kKernel, width);
    std::string joined;
    for (const auto& l : lines) {
      EXPECT_LE(text_width(l), width) << l;
      joined += l;
    }
    EXPECT_EQ(no_spaces(joined), no_spaces(kKernel)) << width;
    EXPECT_GT(lines.size(), 1u);
  }
  EXPECT_EQ(wrap("bf16", 100), std::vector<std::string>{"bf16"});
  EXPECT_EQ(wrap("a_very_long_name", 40),
            (std::vector<std::string>{"a_", "very_", "long_", "name"}));  // broken after '_'
  EXPECT_EQ(wrap("4 ranks, intra-node", 80), (std::vector<std::string>{"4 ranks,", "intra-node"}));
}

TEST(SvgPlot, LogAxisHasDecadeTicks) {
  Plot p;
  p.title = "bandwidth";
  p.x = {"size (bytes, log scale)", Scale::log, Ticks::bytes, {}, {}};
  p.y = {"bandwidth (GB/s) (log)", Scale::log, Ticks::number, {}, {}};
  // Little more than one decade: the axis still shows the decades around the data.
  p.series.push_back({"a", {{1024, 15}, {4096, 350}}, true, 3, {}, ""});
  const auto y_ticks = matches(render(p), "class=\"tick\"[^>]*text-anchor=\"end\">([^<]*)<");
  EXPECT_EQ(y_ticks, (std::vector<std::string>{"10", "100", "1000"}));
  p.series.push_back({"b", {{1024, 0.5}, {4096, 1850}}, true, 3, {}, ""});
  EXPECT_EQ(matches(render(p), "class=\"tick\"[^>]*text-anchor=\"end\">([^<]*)<"),
            (std::vector<std::string>{"1", "10", "100", "1000"}));
}

TEST(SvgPlot, EveryPlotLabelsBothAxes) {
  const std::string line = render(many_series());
  EXPECT_NE(line.find("class=\"axis-label x\"" + std::string(" x=")), std::string::npos);
  EXPECT_EQ(matches(line, "class=\"axis-label [xy]\"[^>]*>([^<]*)<"),
            (std::vector<std::string>{"buffer size (bytes, log scale)", "bandwidth (GB/s)"}));
  const std::string bars = render_bars("time per class", "kernel class", "time (ms)",
                                       {{"gemm", 2, "2 ms"}, {"communication", 1, "1 ms"}});
  EXPECT_EQ(matches(bars, "class=\"axis-label [xy]\"[^>]*>([^<]*)<"),
            (std::vector<std::string>{"kernel class", "time (ms)"}));
}

TEST(SvgPlot, BarLabelsAreWholeAndInside) {
  const std::string bars =
      render_bars("time per kernel", "kernel", "time (ms)", {{kKernel, 2, "2 ms, 40 %"}});
  EXPECT_NE(visible(bars).find(no_spaces(kKernel)), std::string::npos);
  // The label is right-aligned at its x: its widest line fits between the margin and x.
  const auto x = matches(bars, "<text x=\"([0-9.]+)\" y=\"[0-9.]+\" text-anchor=\"end\">");
  ASSERT_EQ(x.size(), 1u);
  for (const auto& l : wrap(kKernel, 640 * 0.4)) EXPECT_LE(text_width(l) + 10, std::stod(x[0]));
}

}  // namespace
}  // namespace shardcost::cli::svg
