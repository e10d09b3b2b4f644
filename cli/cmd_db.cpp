// db info / merge / migrate / check: look after store files.
#include <fmt/format.h>

#include <ctime>
#include <filesystem>

#include "commands.h"
#include "format.h"
#include "shardcost/db.h"
#include "shardcost/error.h"

namespace shardcost::cli {
namespace {

using db::Store;

std::string utc_text(int64_t ns) {
  if (ns <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void print_info_text(const db::StoreInfo& info) {
  fmt::print("store    {}\nschema   version {} (SQLite {})\n", info.path, info.schema_version,
             info.sqlite_version);
  std::string counts;
  for (const auto& c : info.counts)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", c.table, c.rows);
  fmt::print("rows     {}\n\n", counts);
  Table runs({"run", "uuid", "tool", "version", "libraries", "host", "status", "started", "source"},
             {true, false, false, false, false, false, false, false, false});
  for (const auto& r : info.runs) {
    runs.add({fmt::format("{}", r.id), r.uuid, r.tool,
              r.tool_version.empty() ? "-" : r.tool_version,
              r.library_versions.empty() ? "-" : r.library_versions, r.host.empty() ? "-" : r.host,
              r.status, utc_text(r.start_time_ns), r.source.empty() ? "-" : r.source});
  }
  Table devices({"device", "name", "host", "index", "pci", "memory GiB", "cc"},
                {true, false, false, true, false, true, false});
  for (const auto& d : info.devices) {
    devices.add({fmt::format("{}", d.id), d.name, d.host.empty() ? "-" : d.host,
                 d.index < 0 ? "-" : fmt::format("{}", d.index),
                 d.pci_bus.empty() ? "-" : d.pci_bus,
                 d.memory_bytes ? fmt::format("{:.1f}", d.memory_bytes / kGiB) : "-",
                 d.compute_capability.empty() ? "-" : d.compute_capability});
  }
  fmt::print("{}\n{}", runs.render(), devices.render());
}

nlohmann::json info_json(const db::StoreInfo& info) {
  nlohmann::json j;
  j["path"] = info.path;
  j["schema_version"] = info.schema_version;
  j["sqlite_version"] = info.sqlite_version;
  for (const auto& c : info.counts) j["rows"][c.table] = c.rows;
  j["runs"] = nlohmann::json::array();
  for (const auto& r : info.runs) {
    j["runs"].push_back({{"id", r.id},
                         {"uuid", r.uuid},
                         {"tool", r.tool},
                         {"tool_version", r.tool_version},
                         {"git_revision", r.git_revision},
                         {"host", r.host},
                         {"command_line", r.command_line},
                         {"start_time_ns", r.start_time_ns},
                         {"end_time_ns", r.end_time_ns},
                         {"status", r.status},
                         {"source", r.source},
                         {"recorded_by", r.recorded_by},
                         {"library_versions", r.library_versions}});
  }
  j["devices"] = nlohmann::json::array();
  for (const auto& d : info.devices) {
    j["devices"].push_back({{"id", d.id},
                            {"name", d.name},
                            {"uuid", d.uuid},
                            {"host", d.host},
                            {"index", d.index},
                            {"pci_bus", d.pci_bus},
                            {"memory_bytes", d.memory_bytes},
                            {"compute_capability", d.compute_capability}});
  }
  return j;
}

void run_check(const std::string& path) {
  const Store store = Store::open(path, Store::Mode::read_only);
  const db::CheckResult r = store.check();
  if (!r.ok) {
    throw Error(fmt::format(
        "{} fails the check: {}{}; restore it from a copy or re-import", path, r.problems.front(),
        r.problems.size() > 1 ? fmt::format(" (and {} more)", r.problems.size() - 1) : ""));
  }
  fmt::print("{}: ok (integrity, foreign keys, schema version {})\n", path, db::kSchemaVersion);
  if (r.incomplete_runs > 0)
    fmt::print(
        "{}: {} run{} did not complete (killed or still running); the batches committed "
        "before it stopped are kept\n",
        path, r.incomplete_runs, r.incomplete_runs == 1 ? "" : "s");
}

}  // namespace

void add_db_commands(CLI::App& app) {
  auto* dbc = app.add_subcommand(
      "db", "Look after cost-store files: info, merge, migrate, check, delete-run");
  dbc->require_subcommand(1);

  auto info_file = std::make_shared<std::string>();
  auto info_format = std::make_shared<std::string>("text");
  auto* info = dbc->add_subcommand("info", "Runs, devices, row counts per table and versions");
  info->add_option("FILE", *info_file, "store file")->required();
  info->add_option("--format", *info_format, "text or json");
  info->callback([info_file, info_format] {
    const Format f = parse_format(*info_format, {Format::text, Format::json});
    const db::StoreInfo i = Store::open(*info_file, Store::Mode::read_only).info();
    if (f == Format::json)
      fmt::print("{}\n", json_text(info_json(i)));
    else
      print_info_text(i);
  });

  auto out = std::make_shared<std::string>();
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto* merge = dbc->add_subcommand(
      "merge", "Fold per-rank or per-node files into one (runs are never duplicated)");
  merge->add_option("OUT", *out, "store to merge into (created when missing)")->required();
  merge->add_option("IN", *inputs, "stores to read")->required();
  merge->callback([out, inputs] {
    // Every input is checked, whole, before the output is touched: a damaged input is said as
    // its own (SQLite would name the store it reads into) and nothing is merged, so a failed
    // merge leaves neither a new, empty store nor one holding some of the inputs.
    for (const auto& in : *inputs) {
      const db::CheckResult c = Store::open(in, Store::Mode::read_only).check();
      if (!c.ok)
        throw InputError(fmt::format(
            "{} is damaged ({}); nothing was merged: run 'shardcost db check {}' and restore it "
            "from a copy, or leave it out",
            in, c.problems.front(), in));
    }
    Store store = Store::open(*out, Store::Mode::read_write);
    for (const auto& in : *inputs) {
      const db::MergeResult r = store.merge_from(in);
      fmt::print("{}: added {} run{} ({} rows), {}skipped {} already present\n", in, r.runs_added,
                 r.runs_added == 1 ? "" : "s", r.rows_added,
                 r.runs_extended ? fmt::format("gave {} present run{} the tables they lacked, ",
                                               r.runs_extended, r.runs_extended == 1 ? "" : "s")
                                 : "",
                 r.runs_skipped);
    }
  });

  auto migrate_file = std::make_shared<std::string>();
  auto* migrate =
      dbc->add_subcommand("migrate", "Bring a store to this shardcost's schema version");
  migrate->add_option("FILE", *migrate_file, "store file")->required();
  migrate->callback([migrate_file] {
    Store store = Store::open(*migrate_file, Store::Mode::migrate);
    const int from = store.migrate();
    if (from == db::kSchemaVersion)
      fmt::print("{}: already at schema version {}\n", *migrate_file, from);
    else
      fmt::print("{}: schema version {} -> {}\n", *migrate_file, from, db::kSchemaVersion);
  });

  auto delete_file = std::make_shared<std::string>();
  auto delete_run = std::make_shared<std::string>();
  auto* del = dbc->add_subcommand("delete-run", "Remove one run and every row it holds");
  del->add_option("FILE", *delete_file, "store file")->required();
  del->add_option("RUN", *delete_run, "run id or uuid ('db info FILE' lists them)")->required();
  del->callback([delete_file, delete_run] {
    // A store that is not there has no run to delete: said, and not made empty.
    if (!std::filesystem::exists(*delete_file))
      throw InputError(fmt::format("store {} does not exist; check the path", *delete_file));
    Store store = Store::open(*delete_file, Store::Mode::read_write);
    int64_t models = 0;
    const int64_t rows = store.delete_run(*delete_run, &models);
    fmt::print("{}: run {} removed ({} rows{})\n", *delete_file, *delete_run, rows,
               models ? fmt::format("; {} fitted model{} built on it removed too: run 'shardcost "
                                    "fit' again",
                                    models, models == 1 ? "" : "s")
                      : "");
  });

  auto check_file = std::make_shared<std::string>();
  auto* check = dbc->add_subcommand("check", "Integrity and schema check; non-zero exit on damage");
  check->add_option("FILE", *check_file, "store file")->required();
  check->callback([check_file] { run_check(*check_file); });
}

}  // namespace shardcost::cli
