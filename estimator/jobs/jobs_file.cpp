// Jobs files: JSON ({"jobs": [...]}) or CSV with the same columns, read strictly.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "inputs/json_fields.h"
#include "inputs/records_text.h"
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

// A CSV row: the same fields as JSON's, gpus as 8/16/32.
JobSpec job_of_csv(const std::map<std::string, std::string>& row, const std::string& where,
                   size_t index) {
  JobSpec j;
  j.name = fmt::format("job{}", index);
  auto at_least = [&](const std::string& v, const char* column, double min_value) {
    const double x = csv_number(v, where, column);
    if (!(x >= min_value))
      throw InputError(
          fmt::format("{}: {} '{}' is not a number of at least {}", where, column, v, min_value));
    return x;
  };
  bool steps = false, tokens = false;
  for (const auto& [h, v] : row) {
    if (h == "name") j.name = v;
    if (h == "model") j.model = v;
    if (h == "gbs") {
      const double g = at_least(v, "gbs", 1);
      if (g != std::floor(g) || g > (1 << 24))
        throw InputError(fmt::format("{}: gbs '{}' is not a whole number of sequences", where, v));
      j.global_batch = static_cast<int>(g);
    }
    if (h == "steps") {
      const double s = at_least(v, "steps", 1);
      if (s != std::floor(s) || s > 1e15)
        throw InputError(fmt::format("{}: steps '{}' is not a whole number", where, v));
      j.steps = static_cast<int64_t>(s), steps = true;
    }
    if (h == "tokens") j.tokens = at_least(v, "tokens", 1), tokens = true;
    if (h == "priority") {
      j.priority = at_least(v, "priority", 0);
      if (!(j.priority > 0)) throw InputError(fmt::format("{}: priority must be above 0", where));
    }
    if (h == "deadline_hours") {
      const double d = at_least(v, "deadline_hours", 0);
      if (!(d > 0)) throw InputError(fmt::format("{}: deadline_hours must be above 0", where));
      j.deadline_s = d * 3600;
    }
    if (h == "gpus") j.gpu_counts = parse_counts(v, where);
  }
  if (j.global_batch < 1) throw InputError(fmt::format("{}: gbs is missing", where));
  check(j, where, steps, tokens);
  return j;
}

}  // namespace

std::vector<JobSpec> parse_jobs(std::string_view text, std::string_view origin) {
  const std::string where(origin);
  std::vector<JobSpec> out;
  read_records(text, origin, "jobs", kFields, {"model", "gbs"},
               {[&](const nlohmann::json& o, const std::string& at, size_t i) {
                  out.push_back(job_of_json(o, at, i));
                },
                [&](const std::map<std::string, std::string>& row, const std::string& at,
                    size_t i) { out.push_back(job_of_csv(row, at, i)); }});
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
