// fit: learned cost models on the store's measurements, saved in the store, with their
// cross-validated errors.
#include <fmt/format.h>

#include <optional>

#include "commands.h"
#include "format.h"
#include "shardcost/calibration.h"
#include "shardcost/error.h"
#include "shardcost/learned.h"
#include "shardcost/request.h"
#include "shardcost/units.h"

namespace shardcost::cli {
namespace {

struct FitArgs {
  std::string db;
  std::string table = "all";
  std::string device;
  std::string format = "text";
  int threads = 0;
};

std::string percent(double x) {
  return fmt::format("{:.1f} %", 100 * x);
}

// One calibration as lines a reader can check: what the estimate alone missed by, what the
// calibration misses by held out, and each factor in words.
std::string describe(const StepCalibration& c) {
  std::string out =
      fmt::format("{}, {}: {} run{} of {} model{}, up to {} GPUs\n",
                  c.device.empty() ? "every device (pooled)" : c.device, c.software, c.runs,
                  c.runs == 1 ? "" : "s", c.models, c.models == 1 ? "" : "s", c.max_gpus);
  out += fmt::format("  step error     analytic {}, calibrated {} fitted",
                     percent(c.analytic_error), percent(c.fitted_error));
  if (c.configuration_cv_error)
    out += fmt::format(", {} a configuration held out", percent(*c.configuration_cv_error));
  if (c.model_cv_error) out += fmt::format(", {} a model held out", percent(*c.model_cv_error));
  out += "\n";
  for (const auto& f : c.factors)
    out += fmt::format("  {:<15}x {:.3f} of the estimate's time ({} run{})\n", f.part, f.value,
                       f.runs, f.runs == 1 ? "" : "s");
  out += fmt::format("  {:<15}{:.3f} s a step\n", "overhead", c.overhead_s);
  if (c.memory_allowance_bytes)
    out += fmt::format(
        "  {:<15}{:.2f} GiB a GPU beyond the modelled state and activations "
        "({} run{} with a logged peak)\n",
        "memory", *c.memory_allowance_bytes / units::kGiB, c.memory_runs,
        c.memory_runs == 1 ? "" : "s");
  for (const auto& n : c.notes) out += fmt::format("  note: {}\n", n);
  return out;
}

void run_fit_steps(const FitArgs& a, Format format) {
  if (!a.device.empty())
    throw InputError("--device does not apply to --table step: it fits every device's runs");
  const auto costs = load_cost_sources(a.db);
  say_warnings(costs->warnings);
  std::vector<std::string> skipped;
  const auto fits = fit_step_calibrations(a.db, costs->source(), &skipped);
  if (format == Format::json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& c : fits) {
      nlohmann::json m = {{"device", c.device},
                          {"software", c.software},
                          {"runs", c.runs},
                          {"models", c.models},
                          {"max_gpus", c.max_gpus},
                          {"analytic_error", c.analytic_error},
                          {"fitted_error", c.fitted_error},
                          {"overhead_s", c.overhead_s},
                          {"lambda", c.lambda},
                          {"notes", c.notes}};
      if (c.configuration_cv_error) m["configuration_cv_error"] = *c.configuration_cv_error;
      if (c.model_cv_error) m["model_cv_error"] = *c.model_cv_error;
      if (c.memory_allowance_bytes) m["memory_allowance_bytes"] = *c.memory_allowance_bytes;
      for (const auto& f : c.factors)
        m["factors"].push_back({{"part", f.part}, {"value", f.value}, {"runs", f.runs}});
      j.push_back(m);
    }
    fmt::print("{}\n", json_text(nlohmann::json{{"store", a.db}, {"calibrations", j}}));
  } else {
    fmt::print("{} step calibration{} fitted in {}\n", fits.size(), fits.size() == 1 ? "" : "s",
               a.db);
    for (const auto& c : fits) fmt::print("\n{}", describe(c));
  }
  for (const auto& s : skipped) fmt::print(stderr, "shardcost: run skipped: {}\n", s);
  if (fits.empty()) {
    fmt::print(stderr,
               "shardcost: {} holds no device and stack with 4 or more measured runs to calibrate "
               "on; import runs with 'shardcost import runs'\n",
               a.db);
    throw ExitStatus{1};
  }
}

void run_fit(const FitArgs& a) {
  const Format format = parse_format(a.format, {Format::text, Format::json});
  if (a.table == "step") return run_fit_steps(a, format);
  const auto reports = fit_store(
      a.db, a.table, a.device.empty() ? std::nullopt : std::optional(a.device), a.threads);
  int fitted = 0;
  for (const auto& r : reports) fitted += r.skipped.empty() ? 1 : 0;
  if (format == Format::json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : reports) {
      nlohmann::json m = {{"kind", r.kind}, {"device", r.device}, {"key", r.key}, {"rows", r.rows}};
      if (!r.skipped.empty()) m["skipped"] = r.skipped;
      if (!r.notes.empty()) m["notes"] = r.notes;
      for (const auto& v : r.cross_validation)
        m["cross_validation"].push_back(
            {{"split", v.split}, {"rows", v.rows}, {"median", v.median}, {"p90", v.p90}});
      j.push_back(m);
    }
    fmt::print("{}\n", json_text(nlohmann::json{{"store", a.db}, {"models", j}}));
  } else {
    // One line per model and cross-validation (held-out rows, split as named).
    Table t({"model", "device", "key", "rows", "held out", "median", "p90"},
            {false, false, false, true, false, true, true});
    for (const auto& r : reports) {
      if (!r.skipped.empty()) continue;
      const std::vector<std::string> id{r.kind, r.device, r.key,
                                        thousands(static_cast<double>(r.rows))};
      if (r.cross_validation.empty()) {
        auto row = id;
        row.insert(row.end(), {"-", "-", "-"});
        t.add(row);
      }
      for (size_t i = 0; i < r.cross_validation.size(); ++i) {
        const auto& v = r.cross_validation[i];
        std::vector<std::string> row = i == 0 ? id : std::vector<std::string>{"", "", "", ""};
        row.insert(row.end(), {v.split, percent(v.median), percent(v.p90)});
        t.add(row);
      }
    }
    fmt::print("{} model{} fitted in {}\n\n{}", fitted, fitted == 1 ? "" : "s", a.db, t.render());
  }
  for (const auto& r : reports) {
    if (!r.skipped.empty())
      fmt::print(stderr, "shardcost: {} {} {} skipped: {}\n", r.kind, r.device, r.key, r.skipped);
    for (const auto& n : r.notes)
      fmt::print(stderr, "shardcost: note: {} {} {}: {}\n", r.kind, r.device, r.key, n);
  }
  if (fitted == 0) {
    if (reports.empty())
      fmt::print(stderr, "shardcost: {} holds no rows to fit a model on\n", a.db);
    throw ExitStatus{1};
  }
}

}  // namespace

void add_fit_command(CLI::App& app) {
  auto a = std::make_shared<FitArgs>();
  auto* cmd =
      app.add_subcommand("fit", "Fit cost models on the store's measurements and save them there");
  cmd->add_option("--db", a->db, "cost store (read, and written: fitted_model)")->required();
  cmd->add_option("--table", a->table,
                  "gemm, collective, memory, kernels, embedding, all (default: those), or step "
                  "(a calibration of whole steps on the store's measured runs)");
  cmd->add_option("--device", a->device, "only this catalog device's rows");
  cmd->add_option("--format", a->format, "text (default) or json");
  cmd->add_option("--threads", a->threads,
                  "GEMM fits run at once (default 0: one per core; the models do not depend on "
                  "it)");
  cmd->callback([a] { run_fit(*a); });
}

}  // namespace shardcost::cli
