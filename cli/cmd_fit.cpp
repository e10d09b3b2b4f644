// fit: learned cost models on the store's measurements, saved in the store, with their
// cross-validated errors.
#include <fmt/format.h>

#include <optional>

#include "commands.h"
#include "format.h"
#include "shardcost/error.h"
#include "shardcost/learned.h"

namespace shardcost::cli {
namespace {

struct FitArgs {
  std::string db;
  std::string table = "all";
  std::string device;
  std::string format = "text";
};

std::string percent(double x) {
  return fmt::format("{:.1f} %", 100 * x);
}

void run_fit(const FitArgs& a) {
  const Format format = parse_format(a.format, {Format::text, Format::json});
  const auto reports =
      fit_store(a.db, a.table, a.device.empty() ? std::nullopt : std::optional(a.device));
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
  cmd->add_option("--table", a->table, "gemm, collective, memory, kernels or all (default)");
  cmd->add_option("--device", a->device, "only this catalog device's rows");
  cmd->add_option("--format", a->format, "text (default) or json");
  cmd->callback([a] { run_fit(*a); });
}

}  // namespace shardcost::cli
