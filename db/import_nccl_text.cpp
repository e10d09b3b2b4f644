// nccl-tests stdout. The table is read by its header line, so every layout parses the same
// way: "size count type redop root time algbw busbw #wrong ..." (2.10 and later, root since
// 2.12), "size count type redop time algbw busbw error ..." (older), and the per-iteration
// and timestamp variants, whose extra columns are skipped.
#include <fmt/format.h>

#include <cmath>
#include <regex>

#include "import_nccl.h"
#include "import_util.h"
#include "shardcost/error.h"
#include "shardcost/importers.h"

namespace shardcost::db {
namespace {

struct Columns {
  int size = -1, count = -1, type = -1, redop = -1, root = -1;
  int time[2] = {-1, -1}, check[2] = {-1, -1};
  bool wrong_count = false;  // #wrong (a count) rather than error (a deviation)
  size_t tokens = 0;
  bool ok() const { return size >= 0 && time[0] >= 0; }
};

Columns read_header(const std::vector<std::string_view>& t) {
  Columns c;
  int times = 0, checks = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const std::string_view w = t[i];
    const int at = static_cast<int>(i);
    if (w == "size" || w == "bytes")
      c.size = at;
    else if (w == "count" || w == "N")
      c.count = at;
    else if (w == "type")
      c.type = at;
    else if (w == "redop" || w == "op")
      c.redop = at;
    else if (w == "root")
      c.root = at;
    else if ((w == "time" || w == "cputime") && times < 2)
      c.time[times++] = at;
    else if ((w == "#wrong" || w == "error" || w == "res") && checks < 2) {
      c.check[checks++] = at;
      c.wrong_count = w == "#wrong";
    }
  }
  c.tokens = t.size();
  return c;
}

std::optional<NcclHalf> read_half(const std::vector<std::string_view>& t, const Columns& c, int h,
                                  std::string_view where) {
  const int ti = c.time[h];
  if (ti < 0 || static_cast<size_t>(ti) >= t.size() || t[static_cast<size_t>(ti)] == "N/A")
    return std::nullopt;
  const auto time = parse_real(t[static_cast<size_t>(ti)]);
  if (!time)
    throw InputError(fmt::format("{}: time '{}' is not a number; is the file complete?", where,
                                 t[static_cast<size_t>(ti)]));
  // A time must be one: finite, not negative, under a day (in µs).
  if (!is_duration_us(*time))
    throw InputError(fmt::format("{}: time '{}' is not a time in microseconds", where,
                                 t[static_cast<size_t>(ti)]));
  NcclHalf half;
  half.time_us = *time;
  const int ci = c.check[h];
  if (ci >= 0 && static_cast<size_t>(ci) < t.size() && t[static_cast<size_t>(ci)] != "N/A") {
    const std::string_view check = t[static_cast<size_t>(ci)];  // "N/A": not checked
    if (c.wrong_count) {
      const auto n = parse_int(check);
      if (!n || *n < 0)
        throw InputError(
            fmt::format("{}: #wrong '{}' is not a whole number of elements", where, check));
      half.wrong = *n;
    } else {
      const auto v = parse_real(check);
      if (!v || !std::isfinite(*v) || *v < 0)
        throw InputError(
            fmt::format("{}: error '{}' is not a deviation (a number >= 0)", where, check));
      half.max_error = *v;
    }
  }
  return half;
}

bool starts_program(std::string_view line) {
  line = trim(line);
  if (line.empty() || line.front() != '#') return false;
  const std::string_view body = trim(line.substr(1));
  return body.rfind("nccl-tests version", 0) == 0 || body.rfind("nThread", 0) == 0;
}

bool is_row(std::string_view line) {
  line = trim(line);
  return !line.empty() && line.front() >= '0' && line.front() <= '9';
}

}  // namespace

namespace {

// first_line: the section's first line's number in the file, for errors.
Measurements import_text_section(std::string_view text, std::string_view source,
                                 std::string_view op, int first_line);

}  // namespace

Measurements import_nccl_tests_text(std::string_view text, std::string_view source,
                                    std::string_view op) {
  return import_text_section(text, source, op, 1);
}

namespace {

Measurements import_text_section(std::string_view text, std::string_view source,
                                 std::string_view op, int first_line) {
  static const std::regex rank_re(
      R"(Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s+(.*\S))");
  Measurements m;
  m.run.tool = "nccl-tests";
  m.run.source = std::string(source);
  m.run.uuid = content_uuid("nccl-tests", text);
  NcclRun run;
  Columns cols;
  int gpus_per_process = 0;
  int line_no = first_line - 1;
  int skipped = 0, first_skipped = 0;  // row-like lines that are not rows
  bool summary = false;                // nccl-tests' closing "# Avg bus bandwidth" line
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if (line.empty()) continue;
    const std::string where = fmt::format("{}:{}", source, line_no);
    if (line.front() == '#') {
      const std::string_view body = trim(line.substr(1));
      const auto tokens = split_ws(body);
      summary = summary || body.rfind("Avg bus bandwidth", 0) == 0;
      std::match_results<std::string_view::const_iterator> mr;
      if (body.rfind("nccl-tests version", 0) == 0 && tokens.size() >= 3) {
        m.run.tool_version = std::string(tokens[2]);
        for (auto t : tokens)
          if (t.rfind("nccl-library=", 0) == 0)
            m.run.library_versions =
                "nccl=" + nccl_version_text(parse_int(t.substr(13)).value_or(0));
      } else if (body.rfind("Collective test starting:", 0) == 0) {
        run.op = nccl_op_name(trim(body.substr(25)));
      } else if (body.rfind("nThread", 0) == 0) {
        m.run.command_line = std::string(body);
        for (size_t i = 0; i + 1 < tokens.size(); ++i)
          if (tokens[i] == "nGpus")
            gpus_per_process = static_cast<int>(parse_int(tokens[i + 1]).value_or(0));
        for (size_t i = 0; i + 1 < tokens.size(); ++i)
          if (tokens[i] == "nThread")
            gpus_per_process *= static_cast<int>(parse_int(tokens[i + 1]).value_or(1));
        for (size_t i = 1; i + 1 < tokens.size(); ++i)
          if (tokens[i] == "iters:" && tokens[i - 1] != "warmup" && tokens[i - 1] != "agg")
            run.iterations = parse_int(tokens[i + 1]).value_or(0);
      } else if (std::regex_search(body.begin(), body.end(), mr, rank_re)) {
        // Rank and device numbers past any machine are a damaged line, said as one.
        const auto rank = parse_int(mr[1].str()), device = parse_int(mr[3].str());
        if (!rank || !device || *rank > (1 << 24) || *device > (1 << 16))
          throw InputError(
              fmt::format("{}:{}: rank line '{}' holds a rank or device number "
                          "out of range; is the file intact?",
                          source, line_no, std::string(body.substr(0, 80))));
        run.rank_lines.push_back({static_cast<int>(*rank), mr[2].str(), static_cast<int>(*device),
                                  mr[4].str(), mr[5].str()});
      } else if (Columns c = read_header(tokens); c.ok() && c.time[0] >= 0) {
        cols = c;
      }
      continue;
    }
    const auto t = split_ws(line);
    // A row whose size is digits that do not fit is a wrong number, not another program's line.
    if (cols.ok() && !t.empty() && !parse_int(t[0]) &&
        t[0].find_first_not_of("0123456789") == std::string_view::npos)
      throw InputError(fmt::format("{}: size '{}' does not fit in 64 bits", where, t[0]));
    // Under the header, a line that starts like a row but cannot be one (too few columns: a
    // file cut short; a size that is not a decimal number) is skipped and counted, never
    // silently. Anything else (NCCL INFO lines, warnings) is not ours to read.
    if (!cols.ok() || !is_row(line)) continue;
    if (!parse_int(t[0]) || t.size() < static_cast<size_t>(cols.time[0]) + 1) {
      if (skipped++ == 0) first_skipped = line_no;
      continue;
    }
    NcclRow row;
    auto token = [&](int i) {
      return i >= 0 && static_cast<size_t>(i) < t.size() ? t[static_cast<size_t>(i)]
                                                         : std::string_view();
    };
    row.bytes = *parse_int(token(cols.size));
    if (row.bytes < 0) throw InputError(fmt::format("{}: size {} is negative", where, row.bytes));
    row.elements = parse_int(token(cols.count)).value_or(0);
    if (row.elements < 0)
      throw InputError(fmt::format("{}: count {} is negative", where, row.elements));
    row.dtype = std::string(token(cols.type));
    if (cols.redop >= 0) row.redop = std::string(token(cols.redop));
    if (cols.root >= 0) row.root = static_cast<int>(parse_int(token(cols.root)).value_or(-1));
    row.out_of_place = read_half(t, cols, 0, where);
    row.in_place = read_half(t, cols, 1, where);
    run.rows.push_back(std::move(row));
  }
  if (run.rows.empty())
    throw InputError(std::string(source) +
                     ": no nccl-tests result rows found (expected a "
                     "'# size count type ... time algbw busbw' header and rows under it); is this "
                     "nccl-tests output?");
  // The file's own op first, then its name, then --op.
  if (run.op.empty()) run.op = nccl_op_from_path(source);
  if (run.op.empty()) run.op = fallback_op(op);
  if (run.rank_lines.empty()) run.ranks = gpus_per_process;
  nccl_records(run, source, m);
  if (skipped > 0)
    m.warnings.push_back(fmt::format(
        "{}:{}: {} line{} under the results header {} not a whole result row (too few columns, "
        "or a size that is not a number) and {} skipped; is the file complete?",
        source, first_skipped, skipped, skipped == 1 ? "" : "s", skipped == 1 ? "is" : "are",
        skipped == 1 ? "was" : "were"));
  if (!summary)
    m.warnings.push_back(fmt::format(
        "{}: no closing '# Avg bus bandwidth' line: the output may have been cut short ({} "
        "results read)",
        source, run.rows.size()));
  return m;
}

}  // namespace

std::vector<Measurements> import_nccl_tests_runs(std::string_view text, std::string_view source,
                                                 std::string_view op) {
  const std::string_view body = trim(text);
  if (!body.empty() && body.front() == '{') return {import_nccl_tests_json(text, source, op)};
  // A new run starts after a program's "Collective test concluded" line, or where a program's
  // header comes after result rows (a log cut without its closing line).
  std::vector<std::pair<size_t, int>> starts{{0, 1}};  // byte offset, line number
  bool rows = false, concluded = false;
  int line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    ++line_no;
    if ((concluded || (starts_program(line) && rows)) && !trim(line).empty()) {
      starts.push_back({pos, line_no});
      rows = concluded = false;
    }
    rows = rows || is_row(line);
    const std::string_view t = trim(line);
    concluded = concluded || (t.rfind("#", 0) == 0 &&
                              trim(t.substr(1)).rfind("Collective test concluded", 0) == 0);
    pos = end + 1;
  }
  // Lines after the last program's end that hold no results (trailing log lines) are no run.
  if (starts.size() > 1 && !rows) starts.pop_back();
  std::vector<Measurements> out;
  for (size_t i = 0; i < starts.size(); ++i) {
    const size_t from = starts[i].first;
    const size_t to = i + 1 < starts.size() ? starts[i + 1].first : text.size();
    out.push_back(import_text_section(text.substr(from, to - from), source, op, starts[i].second));
  }
  return out;
}

Measurements import_nccl_tests(std::string_view text, std::string_view source,
                               std::string_view op) {
  const std::string_view body = trim(text);
  if (!body.empty() && body.front() == '{') return import_nccl_tests_json(text, source, op);
  return import_nccl_tests_text(text, source, op);
}

}  // namespace shardcost::db
