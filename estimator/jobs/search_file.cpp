// Search files: one hyperparameter search as JSON, read strictly (docs/scheduling.md).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "inputs/json_fields.h"
#include "shardcost/error.h"
#include "shardcost/search.h"

namespace shardcost {
namespace {

const std::vector<std::string_view> kFields = {"name",      "model",     "gbs",         "trials",
                                               "min_steps", "max_steps", "reduction",   "gpus",
                                               "resume",    "seed",      "step_seconds"};

int64_t whole_steps(const JsonFields& f, const char* key) {
  const double v = f.required_number(key, 1);
  if (v != std::floor(v) || v > 1e15) f.fail(key, "must be a whole number of steps");
  return static_cast<int64_t>(v);
}

}  // namespace

SearchSpec parse_search(std::string_view text, std::string_view origin) {
  const nlohmann::json j = parse_json_text(text, origin);
  const std::string where(origin);
  if (!j.is_object())
    throw InputError(fmt::format("{}: a search file is one JSON object of fields", where));
  JsonFields f(j, where);
  f.reject_unknown(kFields);
  SearchSpec s;
  s.name = f.optional_string("name").value_or("search");
  s.trials = f.required_int("trials", 1, kMaxSearchTrials);
  s.min_steps = whole_steps(f, "min_steps");
  s.max_steps = whole_steps(f, "max_steps");
  if (s.max_steps < s.min_steps)
    f.fail("max_steps", fmt::format("must be at least min_steps ({})", s.min_steps));
  s.reduction = f.optional_int("reduction", 2, 1000).value_or(3);
  s.resume = f.optional_bool("resume").value_or(true);
  if (const auto seed = f.optional_int("seed", 0)) s.seed = static_cast<uint64_t>(*seed);
  if (const auto* g = f.optional_array("gpus")) {
    for (const auto& v : *g) {
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > (1 << 24))
        f.fail("gpus", "must be an array of GPU counts per trial, each at least 1 ([1, 2, 4, 8])");
      s.gpu_counts.push_back(static_cast<int>(v.get<int64_t>()));
    }
    std::sort(s.gpu_counts.begin(), s.gpu_counts.end());
    s.gpu_counts.erase(std::unique(s.gpu_counts.begin(), s.gpu_counts.end()), s.gpu_counts.end());
    if (s.gpu_counts.empty()) f.fail("gpus", "must name at least one GPU count");
  }
  if (const auto* t = f.optional_object("step_seconds")) {
    for (const auto& [key, v] : t->items()) {
      int gpus = 0;
      const auto [p, ec] = std::from_chars(key.data(), key.data() + key.size(), gpus);
      if (ec != std::errc() || p != key.data() + key.size() || gpus < 1 || gpus > (1 << 24))
        f.fail("step_seconds", fmt::format("key '{}' is not a GPU count", key));
      if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
        f.fail("step_seconds", fmt::format("'{}' must map to seconds above 0", key));
      s.step_seconds[gpus] = v.get<double>();
    }
    if (s.step_seconds.empty()) f.fail("step_seconds", "must give at least one GPU count");
  }
  const auto model = f.optional_string("model");
  if (model.has_value() == !s.step_seconds.empty())
    throw InputError(
        fmt::format("{}: give either model (with gbs: the estimator prices each trial's step) or "
                    "step_seconds (a trial's step time by GPUs per trial)",
                    where));
  if (model) {
    s.model = *model;
    s.global_batch = f.required_int("gbs", 1, 1 << 24);
  } else if (j.contains("gbs")) {
    f.fail("gbs", "goes with model; step_seconds already prices each trial's step");
  } else if (!s.gpu_counts.empty()) {
    f.fail("gpus", "goes with model; step_seconds names the GPU counts");
  }
  // One trial at least reaches the full budget: every rung keeps 1 in `reduction`.
  const auto rungs = s.budgets().size();
  double needed = 1;
  for (size_t k = 1; k < rungs; ++k) needed *= s.reduction;
  if (s.trials < needed)
    f.fail("trials", fmt::format("{} rungs at reduction {} keep one trial in {:.0f}: give at least "
                                 "{:.0f} trials, or fewer rungs (a larger min_steps)",
                                 rungs, s.reduction, needed, needed));
  return s;
}

SearchSpec load_search(std::string_view path) {
  return parse_search(read_text_file(path, "search file"), fmt::format("search file '{}'", path));
}

}  // namespace shardcost
