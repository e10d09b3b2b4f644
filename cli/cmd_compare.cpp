// compare: did something get slower? Exit 0 nothing regressed, 1 regressed, 2 bad input.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "commands.h"
#include "compare_print.h"
#include "format.h"
#include "shardcost/compare.h"
#include "shardcost/error.h"

namespace shardcost::cli {
namespace {

// FILE, or FILE:RUN where RUN is a run id or uuid prefix. An existing file wins, so a path
// that itself contains ':' still works.
struct Side {
  std::string path;
  std::optional<std::string> run;
};

Side parse_side(const std::string& arg, const char* which) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(arg, ec)) return {arg, std::nullopt};
  const size_t colon = arg.rfind(':');
  if (colon != std::string::npos && colon + 1 < arg.size() &&
      std::filesystem::is_regular_file(arg.substr(0, colon), ec))
    return {arg.substr(0, colon), arg.substr(colon + 1)};
  throw InputError(
      fmt::format("{} '{}' is not a store file; give FILE or FILE:RUN (a run id or uuid prefix "
                  "from 'shardcost db info FILE')",
                  which, arg));
}

// The relative change that matters, in percent with its unit: "5%", "0.5%". A bare number is
// refused: 0.5 read as a fraction is 50 %, a gate that can never fail, and read as a
// percentage is what the user may not have meant either.
double parse_threshold(const std::string& text) {
  std::string t = text;
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t.pop_back();
  char* end = nullptr;
  const double v = t.empty() ? NAN : std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v) || v <= 0 || v >= 1000)
    throw InputError(fmt::format(
        "--threshold '{}' is not a relative change; write it in percent, e.g. 5%", text));
  if (!percent)
    throw InputError(fmt::format(
        "--threshold {} has no unit; write it in percent: {}% (or {:g}% if {} was a fraction)",
        text, text, v * 100, text));
  return v / 100;
}

std::vector<std::string> parse_tables(const std::string& text) {
  if (text == "all") return db::comparable_tables();
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string name = text.substr(start, end - start);
    const auto& known = db::comparable_tables();
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw InputError(fmt::format(
          "--table '{}' is not comparable; use gemm, memory, collective, kernels or all", name));
    out.push_back(name);
    start = end + 1;
  }
  return out;
}

std::vector<db::Measure> load_side(const Side& side, const std::vector<std::string>& tables) {
  const db::Store store = db::Store::open(side.path, db::Store::Mode::read_only);
  std::optional<int64_t> run_id;
  if (side.run) run_id = db::resolve_run(store, *side.run).id;
  std::vector<db::Measure> out;
  for (const auto& t : tables) {
    auto rows = db::load_measures(store, t, run_id);
    out.insert(out.end(), std::make_move_iterator(rows.begin()),
               std::make_move_iterator(rows.end()));
  }
  return out;
}

}  // namespace

void add_compare_command(CLI::App& app) {
  struct Args {
    std::string base, next, threshold = "5%", table = "all", format = "text";
    double alpha = 0.01;
    bool repeats = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Compare NEW against BASE, noise-aware; exit 0 nothing regressed, 1 regressed, 2 bad input");
  cmd->add_option("BASE", a->base, "baseline: store FILE, or FILE:RUN (run id or uuid prefix)")
      ->required();
  cmd->add_option("NEW", a->next, "candidate: store FILE, or FILE:RUN")->required();
  cmd->add_option("--threshold", a->threshold,
                  "smallest change of the median that counts, in percent: 5% (default)");
  cmd->add_option("--alpha", a->alpha, "false-alarm rate over all pairs (Holm), default 0.01");
  cmd->add_flag("--repeats", a->repeats,
                "every run in a side's store measured the same build: the runs' own spread is "
                "the run-to-run noise (else the newest run of each row is compared)");
  cmd->add_option("--table", a->table,
                  "gemm, memory, collective, embedding, kernels, a comma list, or all (default)");
  cmd->add_option("--format", a->format, "text (default), md, json or junit");
  // -o/--output is every command's (output_file.h): written whole, through a rename.
  cmd->callback([a] {
    if (a->format != "text" && a->format != "md" && a->format != "json" && a->format != "junit")
      throw InputError(
          fmt::format("unknown --format '{}'; use text, md, json or junit", a->format));
    if (!(a->alpha > 0 && a->alpha < 1))
      throw InputError(fmt::format("--alpha {} is not in (0, 1); use e.g. 0.01", a->alpha));
    regress::CompareOptions options;
    options.threshold = parse_threshold(a->threshold);
    options.alpha = a->alpha;
    options.repeats = a->repeats;
    const auto tables = parse_tables(a->table);
    const Side base = parse_side(a->base, "BASE"), next = parse_side(a->next, "NEW");
    const regress::Comparison c =
        regress::compare(load_side(base, tables), load_side(next, tables), options);
    if (c.pairs.empty())
      throw InputError(fmt::format(
          "nothing to compare: no {}measurement of {} matches one of {} (they match by "
          "table, device name, shape or size, dtype, op and ranks); check the files and --table",
          a->table == "all" ? "" : a->table + " ", a->base, a->next));
    const CompareSides sides{a->base, a->next, a->table};
    std::string text;
    if (a->format == "md")
      text = compare_markdown(c, sides);
    else if (a->format == "json")
      text = compare_json(c, sides);
    else if (a->format == "junit")
      text = compare_junit(c, sides);
    else
      text = compare_text(c, sides);
    fmt::print("{}", text);
    std::fflush(stdout);
    // Exit 1 says a regression, or a slowdown the noise leaves undecided; stderr says how
    // many, whatever the format.
    const auto n = c.count(regress::Verdict::regressed);
    const auto unsure = c.inconclusive_slower();
    if (n > 0)
      fmt::print(stderr, "shardcost: {} of {} compared measurements regressed\n", n,
                 c.pairs.size());
    if (unsure > 0) {
      std::vector<double> noise;
      for (const auto& p : c.pairs)
        if (p.verdict == regress::Verdict::inconclusive && p.change > 0) noise.push_back(p.noise);
      fmt::print(stderr,
                 "shardcost: inconclusive: noise ±{:.1f}% (median of {} slower measurements) "
                 "exceeds the threshold {:g}%; {}\n",
                 regress::stats::median_of(noise) * 100, unsure, options.threshold * 100,
                 options.repeats ? "measure each side more times, or raise --threshold"
                                 : "measure each side several times into its store and pass "
                                   "--repeats, or raise --threshold");
    }
    if (n > 0 || unsure > 0) throw ExitStatus{1};
  });
}

}  // namespace shardcost::cli
