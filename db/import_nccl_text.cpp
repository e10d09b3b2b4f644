// nccl-tests stdout. The table is read by its header line, so every layout parses the same
// way: "size count type redop root time algbw busbw #wrong ..." (2.10 and later, root since
// 2.12), "size count type redop time algbw busbw error ..." (older), and the per-iteration
// and timestamp variants, whose extra columns are skipped.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "import_nccl.h"
#include "import_util.h"
#include "shardcost/error.h"
#include "shardcost/importers.h"

namespace shardcost::db {
namespace {

// The largest message a row may name: 256 TiB, past any GPU's memory.
constexpr int64_t kMaxCollectiveBytes = int64_t{1} << 48;

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
  if (*time == 0)
    throw InputError(fmt::format(
        "{}: time 0 us is not a measurement (nccl-tests prints at least its timer's resolution)",
        where));
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

// NCCL's own log lines ("10.0.0.1:2345:2345 [0] NCCL INFO ...", from hosts named by address)
// start with a digit too, and are never results.
bool is_row(std::string_view line) {
  line = trim(line);
  // A leading minus is a (negative) size, refused below, not a line to pass over.
  if (line.size() > 1 && line.front() == '-' && line[1] >= '0' && line[1] <= '9')
    line.remove_prefix(1);
  return !line.empty() && line.front() >= '0' && line.front() <= '9' &&
         line.find(" NCCL INFO") == std::string_view::npos &&
         line.find(" NCCL WARN") == std::string_view::npos;
}

// The collective a program line names: a token such as "./build/all_gather_perf" or
// "all_reduce_perf_mpi" on a line that is not nccl-tests' own ("$ mpirun ... ./all_gather_perf
// -b 8", as logs of several programs hold them); "" where none.
std::string program_op(std::string_view line) {
  line = trim(line);
  if (line.empty() || line.front() == '#') return "";
  for (std::string_view token : split_ws(line)) {
    if (token.find("_perf") == std::string_view::npos) continue;
    const size_t slash = token.find_last_of('/');
    if (slash != std::string_view::npos) token = token.substr(slash + 1);
    if (std::string op = nccl_op_name(token); !op.empty()) return op;
  }
  return "";
}

// mpirun --tag-output prefixes each line with "[job,rank]<stdout>:" (or <stderr>:); the same
// text without them, line for line.
std::string untagged(std::string_view text) {
  static const std::regex tag(R"(^\[\d+,\d+\]<std(?:out|err)>:)");
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    std::match_results<std::string_view::const_iterator> m;
    if (!line.empty() && line.front() == '[' && std::regex_search(line.begin(), line.end(), m, tag))
      line.remove_prefix(static_cast<size_t>(m.length(0)));
    out.append(line);
    if (end < text.size()) out += '\n';
    pos = end + 1;
  }
  return out;
}

bool tagged(std::string_view text) {
  return text.find("]<stdout>:") != std::string_view::npos ||
         text.find("]<stderr>:") != std::string_view::npos;
}

// A section holds a results table: a '#' line with the size and time columns.
bool has_results_header(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(pos, end - pos));
    if (!line.empty() && line.front() == '#' && read_header(split_ws(trim(line.substr(1)))).ok())
      return true;
    pos = end + 1;
  }
  return false;
}

}  // namespace

namespace {

// first_line: the section's first line's number in the file, for errors. op_from_flag: set
// when the collective came from --op, the file saying none.
Measurements import_text_section(std::string_view text, std::string_view source,
                                 std::string_view op, int first_line, bool* op_from_flag = nullptr);

}  // namespace

Measurements import_nccl_tests_text(std::string_view text, std::string_view source,
                                    std::string_view op) {
  if (tagged(text)) return import_text_section(untagged(text), source, op, 1);
  return import_text_section(text, source, op, 1);
}

namespace {

Measurements import_text_section(std::string_view text, std::string_view source,
                                 std::string_view op, int first_line, bool* op_from_flag) {
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
  std::string named;                   // the collective a program line names
  int64_t out_of_bounds = 0;           // "# Out of bounds values : N FAILED"
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if (line.empty()) continue;
    const std::string where = fmt::format("{}:{}", source, line_no);
    if (named.empty() && run.rows.empty()) named = program_op(line);
    if (line.front() == '#') {
      const std::string_view body = trim(line.substr(1));
      const auto tokens = split_ws(body);
      summary = summary || body.rfind("Avg bus bandwidth", 0) == 0;
      if (body.rfind("Out of bounds values", 0) == 0 && body.find("FAILED") != std::string::npos)
        for (const auto tok : tokens)
          if (const auto n = parse_int(tok)) out_of_bounds = std::max(out_of_bounds, *n);
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
        summary = false;  // a new table: its rows are results again
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
    // After the closing summary, a digit-led line ("3 jobs finished") is the log's, not a result.
    if (!cols.ok() || !is_row(line) || summary) continue;
    if (!parse_int(t[0]) || t.size() < static_cast<size_t>(cols.time[0]) + 1) {
      if (skipped++ == 0) first_skipped = line_no;
      continue;
    }
    // A row holds a value under every column of its header: fewer is a row cut short, more a
    // header that does not name the rows' columns (one without '#wrong' over rows with it would
    // read the in-place time from the wrong column).
    if (t.size() != cols.tokens)
      throw InputError(fmt::format(
          "{}: {} values under a header of {} columns ({}); is the file complete and its header "
          "the one nccl-tests printed for these rows?",
          where, t.size(), cols.tokens,
          t.size() < cols.tokens ? "a row cut short" : "more values than the header names"));
    NcclRow row;
    auto token = [&](int i) {
      return i >= 0 && static_cast<size_t>(i) < t.size() ? t[static_cast<size_t>(i)]
                                                         : std::string_view();
    };
    row.bytes = *parse_int(token(cols.size));
    if (row.bytes < 0) throw InputError(fmt::format("{}: size {} is negative", where, row.bytes));
    if (row.bytes > kMaxCollectiveBytes)
      throw InputError(fmt::format("{}: size {} bytes is beyond any GPU's buffers (at most 2^48)",
                                   where, row.bytes));
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
  // The file's own op first, then the program line's, then its name, then --op.
  if (run.op.empty()) run.op = named;
  if (run.op.empty()) run.op = nccl_op_from_path(source);
  if (run.op.empty()) {
    run.op = fallback_op(op);
    if (op_from_flag) *op_from_flag = !run.op.empty();
  }
  if (run.rank_lines.empty()) run.ranks = gpus_per_process;
  nccl_records(run, source, m);
  if (skipped > 0)
    m.warnings.push_back(fmt::format(
        "{}:{}: {} line{} under the results header {} not a whole result row (too few columns, "
        "or a size that is not a number) and {} skipped; is the file complete?",
        source, first_skipped, skipped, skipped == 1 ? "" : "s", skipped == 1 ? "is" : "are",
        skipped == 1 ? "was" : "were"));
  if (out_of_bounds > 0)
    m.warnings.push_back(fmt::format(
        "{}: nccl-tests found {} out-of-bounds value{} ('Out of bounds values ... FAILED'): the "
        "results were stored, but a run that writes past its buffers is not one to trust",
        source, out_of_bounds, out_of_bounds == 1 ? "" : "s"));
  if (!summary)
    m.warnings.push_back(fmt::format(
        "{}: no closing '# Avg bus bandwidth' line: the output may have been cut short ({} "
        "results read)",
        source, run.rows.size()));
  return m;
}

}  // namespace

std::vector<Measurements> import_nccl_tests_runs(std::string_view whole, std::string_view source,
                                                 std::string_view op) {
  fallback_op(op);  // a --op that is not a collective is refused whatever the file says
  if (const size_t nul = whole.find('\0'); nul != std::string_view::npos)
    throw InputError(fmt::format(
        "{}:{}: a NUL byte (binary data); nccl-tests writes text: is this the log?", source,
        1 + std::count(whole.begin(), whole.begin() + static_cast<long>(nul), '\n')));
  const std::string_view body = trim(whole);
  if (!body.empty() && body.front() == '{') return {import_nccl_tests_json(whole, source, op)};
  std::string cleaned;
  if (tagged(whole)) cleaned = untagged(whole);
  const std::string_view text = tagged(whole) ? std::string_view(cleaned) : whole;
  // A new run starts after a program's "Collective test concluded" line, or where a program's
  // header comes after result rows (a log cut without its closing line).
  // A program line ("$ ./all_gather_perf -b 8 ...") after a run's rows opens the next run.
  std::vector<std::pair<size_t, int>> starts{{0, 1}};  // byte offset, line number
  bool rows = false, concluded = false;
  std::pair<size_t, int> program{std::string_view::npos, 0};
  int line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    ++line_no;
    if ((concluded || (starts_program(line) && rows)) && !trim(line).empty()) {
      starts.push_back(program.first != std::string_view::npos && !concluded
                           ? program
                           : std::pair<size_t, int>{pos, line_no});
      rows = concluded = false;
      program = {std::string_view::npos, 0};
    }
    if (rows && !program_op(line).empty()) program = {pos, line_no};
    rows = rows || is_row(line);
    const std::string_view t = trim(line);
    concluded = concluded || (t.rfind("#", 0) == 0 &&
                              trim(t.substr(1)).rfind("Collective test concluded", 0) == 0);
    pos = end + 1;
  }
  // Lines after the last program's end that hold no results (trailing log lines) are no run.
  if (starts.size() > 1 && !rows) starts.pop_back();
  // A stretch with no results table (log lines before the first program, a numbered list
  // after the last) is no run, where another stretch is one.
  std::vector<std::pair<std::string_view, int>> sections;
  for (size_t i = 0; i < starts.size(); ++i) {
    const size_t from = starts[i].first;
    const size_t to = i + 1 < starts.size() ? starts[i + 1].first : text.size();
    sections.push_back({text.substr(from, to - from), starts[i].second});
  }
  if (std::any_of(sections.begin(), sections.end(),
                  [](const auto& s) { return has_results_header(s.first); }))
    sections.erase(std::remove_if(sections.begin(), sections.end(),
                                  [](const auto& s) { return !has_results_header(s.first); }),
                   sections.end());
  std::vector<Measurements> out;
  int from_flag = 0;
  for (const auto& [section, first_line] : sections) {
    bool flagged = false;
    out.push_back(import_text_section(section, source, op, first_line, &flagged));
    from_flag += flagged ? 1 : 0;
  }
  // One --op cannot name the collectives of several programs.
  if (from_flag > 0 && out.size() > 1)
    throw InputError(fmt::format(
        "{}: --op {} would label {} of its {} runs, but a log of several programs need not be of "
        "one collective; import each program's output on its own with its --op, or keep the "
        "command lines (./all_gather_perf ...) or 'Collective test starting' lines in the log",
        source, op, from_flag, out.size()));
  return out;
}

Measurements import_nccl_tests(std::string_view text, std::string_view source,
                               std::string_view op) {
  const std::string_view body = trim(text);
  if (!body.empty() && body.front() == '{') return import_nccl_tests_json(text, source, op);
  return import_nccl_tests_text(text, source, op);
}

}  // namespace shardcost::db
