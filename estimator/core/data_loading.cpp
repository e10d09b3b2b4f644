// A rank's data loader, and what it costs a step.
#include "shardcost/data_loading.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "shardcost/error.h"

namespace shardcost {

namespace {

constexpr std::string_view kForm = "give cores=N,rate=R (R: samples per second per core)";

double number_of(std::string_view key, std::string_view value) {
  double v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() ||
      !std::isfinite(v) || v <= 0)
    throw InputError(
        fmt::format("--data-loading {}={}: not a positive number; {}", key, value, kForm));
  return v;
}

}  // namespace

DataLoading parse_data_loading(std::string_view text) {
  DataLoading d;
  bool cores = false, rate = false;
  size_t i = 0;
  while (i <= text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string_view::npos) j = text.size();
    const std::string_view item = text.substr(i, j - i);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw InputError(
          fmt::format("--data-loading '{}': '{}' is not key=value; {}", text, item, kForm));
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "cores") {
      const double v = number_of(key, value);
      if (v != std::floor(v) || v > 4096)
        throw InputError(fmt::format(
            "--data-loading cores={}: give a whole number of cores per rank, 1-4096", value));
      d.cores_per_rank = static_cast<int>(v);
      cores = true;
    } else if (key == "rate") {
      d.samples_per_s_per_core = number_of(key, value);
      rate = true;
    } else {
      throw InputError(fmt::format("--data-loading: unknown key '{}'; {}", key, kForm));
    }
    i = j + 1;
  }
  if (!cores || !rate)
    throw InputError(fmt::format("--data-loading '{}': {} is missing; {}", text,
                                 cores ? "rate" : "cores", kForm));
  return d;
}

std::string to_string(const DataLoading& d) {
  return fmt::format("cores={},rate={:g}", d.cores_per_rank, d.samples_per_s_per_core);
}

InputBudget input_budget(const DataLoading& d, double samples, int loaders, double compute_s) {
  InputBudget b;
  b.loading = d;
  b.loaders = std::max(1, loaders);
  b.samples_per_loader = samples / b.loaders;
  const double per_core = b.samples_per_loader / d.samples_per_s_per_core;  // core-seconds
  b.load_s = per_core / d.cores_per_rank;
  b.compute_s = compute_s;
  b.wait_s = std::max(0.0, b.load_s - compute_s);
  b.cores_to_keep_up = compute_s > 0 ? per_core / compute_s : 0;
  return b;
}

}  // namespace shardcost
