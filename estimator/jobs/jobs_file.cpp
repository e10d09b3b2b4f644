// Jobs files: JSON ({"jobs": [...]}) or CSV with the same columns, read strictly.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "inputs/json_fields.h"
#include "shardcost/error.h"
#include "shardcost/jobs.h"

namespace shardcost {
namespace {

const std::vector<std::string_view> kFields = {
    "name", "model", "gbs", "steps", "tokens", "priority", "deadline_hours", "gpus"};

// "8/16/32" or "8"; every count at least 1.
std::vector<int> parse_counts(std::string_view text, const std::string& where) {
  std::vector<int> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = std::min(text.find('/', at), text.size());
    const std::string_view item = text.substr(at, end - at);
    int v = 0;
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || v < 1)
      throw InputError(fmt::format(
          "{}: gpus '{}' is not a list of GPU counts; give whole numbers joined by '/' (8/16/32)",
          where, text));
    out.push_back(v);
    at = end + 1;
  }
  return out;
}

// The checks every job takes, whichever format it came in.
void check(JobSpec& j, const std::string& where, bool has_steps, bool has_tokens) {
  if (j.model.empty())
    throw InputError(
        fmt::format("{}: model is missing; give a catalog model "
                    "name or a model file",
                    where));
  if (has_steps == has_tokens)
    throw InputError(
        fmt::format("{}: give either steps or tokens (the length of its training)", where));
  std::sort(j.gpu_counts.begin(), j.gpu_counts.end());
  j.gpu_counts.erase(std::unique(j.gpu_counts.begin(), j.gpu_counts.end()), j.gpu_counts.end());
}

JobSpec job_of_json(const nlohmann::json& o, const std::string& where, size_t index) {
  if (!o.is_object()) throw InputError(fmt::format("{}: a job is an object of fields", where));
  JsonFields f(o, where);
  f.reject_unknown(kFields);
  JobSpec j;
  j.name = f.optional_string("name").value_or(fmt::format("job{}", index));
  j.model = f.required_string("model");
  j.global_batch = f.required_int("gbs", 1);
  const auto steps = f.optional_number("steps", 1);
  const auto tokens = f.optional_number("tokens", 1);
  if (steps) {
    if (*steps != std::floor(*steps) || *steps > 1e15)
      f.fail("steps", "must be a whole number of steps");
    j.steps = static_cast<int64_t>(*steps);
  }
  if (tokens) j.tokens = *tokens;
  j.priority = f.optional_number("priority", 0).value_or(1);
  if (!(j.priority > 0)) f.fail("priority", "must be above 0 (its weight in the completion time)");
  if (const auto d = f.optional_number("deadline_hours", 0)) {
    if (!(*d > 0)) f.fail("deadline_hours", "must be above 0");
    j.deadline_s = *d * 3600;
  }
  if (const auto* g = f.optional_array("gpus")) {
    for (const auto& v : *g) {
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > (1 << 24))
        f.fail("gpus", "must be an array of GPU counts, each at least 1 ([8, 16, 32])");
      j.gpu_counts.push_back(static_cast<int>(v.get<int64_t>()));
    }
  } else if (const auto s = f.optional_string("gpus")) {
    j.gpu_counts = parse_counts(*s, where);
  }
  check(j, where, steps.has_value(), tokens.has_value());
  return j;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) {
    const size_t a = cell.find_first_not_of(" \t\r"), b = cell.find_last_not_of(" \t\r");
    out.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
  }
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

double csv_number(const std::string& text, const std::string& where, const char* column,
                  double min_value) {
  double v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || !(v >= min_value) ||
      !std::isfinite(v))
    throw InputError(
        fmt::format("{}: {} '{}' is not a number of at least {}", where, column, text, min_value));
  return v;
}

std::vector<JobSpec> parse_csv(std::string_view text, const std::string& origin) {
  std::istringstream in{std::string(text)};
  std::string line;
  std::vector<std::string> header;
  std::vector<JobSpec> out;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[0] == '#') continue;
    const auto cells = split_csv_line(line);
    if (header.empty()) {
      header = cells;
      for (const auto& h : header)
        if (std::find(kFields.begin(), kFields.end(), h) == kFields.end())
          throw InputError(
              fmt::format("{} line {}: unknown column '{}'; the columns are name, "
                          "model, gbs, steps, tokens, priority, deadline_hours, gpus",
                          origin, line_no, h));
      continue;
    }
    const std::string where = fmt::format("{} line {}", origin, line_no);
    if (cells.size() != header.size())
      throw InputError(
          fmt::format("{}: {} cells where the header has {}", where, cells.size(), header.size()));
    JobSpec j;
    j.name = fmt::format("job{}", out.size());
    bool steps = false, tokens = false;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string& h = header[c];
      const std::string& v = cells[c];
      if (v.empty()) continue;
      if (h == "name") j.name = v;
      if (h == "model") j.model = v;
      if (h == "gbs") {
        const double g = csv_number(v, where, "gbs", 1);
        if (g != std::floor(g) || g > (1 << 24))
          throw InputError(
              fmt::format("{}: gbs '{}' is not a whole number of sequences", where, v));
        j.global_batch = static_cast<int>(g);
      }
      if (h == "steps") {
        const double s = csv_number(v, where, "steps", 1);
        if (s != std::floor(s) || s > 1e15)
          throw InputError(fmt::format("{}: steps '{}' is not a whole number", where, v));
        j.steps = static_cast<int64_t>(s), steps = true;
      }
      if (h == "tokens") j.tokens = csv_number(v, where, "tokens", 1), tokens = true;
      if (h == "priority") {
        j.priority = csv_number(v, where, "priority", 0);
        if (!(j.priority > 0)) throw InputError(fmt::format("{}: priority must be above 0", where));
      }
      if (h == "deadline_hours") {
        const double d = csv_number(v, where, "deadline_hours", 0);
        if (!(d > 0)) throw InputError(fmt::format("{}: deadline_hours must be above 0", where));
        j.deadline_s = d * 3600;
      }
      if (h == "gpus") j.gpu_counts = parse_counts(v, where);
    }
    if (j.global_batch < 1) throw InputError(fmt::format("{}: gbs is missing", where));
    check(j, where, steps, tokens);
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

std::vector<JobSpec> parse_jobs(std::string_view text, std::string_view origin) {
  const std::string where(origin);
  const size_t first = text.find_first_not_of(" \t\r\n");
  std::vector<JobSpec> out;
  if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[')) {
    const auto j = parse_json_text(text, origin);
    const nlohmann::json* list = &j;
    if (j.is_object()) {
      JsonFields f(j, where);
      f.reject_unknown({"jobs"});
      list = f.optional_array("jobs");
      if (!list) f.fail("jobs", "is missing; give {\"jobs\": [{\"model\": ..., \"gbs\": ...}]}");
    }
    if (!list->is_array()) throw InputError(where + ": give an array of jobs");
    for (size_t i = 0; i < list->size(); ++i)
      out.push_back(job_of_json((*list)[i], fmt::format("{} jobs[{}]", where, i), i));
  } else {
    out = parse_csv(text, where);
  }
  if (out.empty()) throw InputError(where + " holds no jobs");
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t k = 0; k < i; ++k)
      if (out[i].name == out[k].name)
        throw InputError(
            fmt::format("{}: two jobs are named '{}'; give each its own name", where, out[i].name));
  return out;
}

std::vector<JobSpec> load_jobs(std::string_view path) {
  return parse_jobs(read_text_file(path, "jobs file"), fmt::format("jobs file '{}'", path));
}

}  // namespace shardcost
