#pragma once
// Each command group registers its subcommands on the app; main.cpp only wires them up.
#include <CLI/CLI.hpp>
#include <string>

namespace shardcost::cli {

void add_catalog_command(CLI::App& app);
void add_plan_commands(CLI::App& app);  // estimate, rank
void add_validate_command(CLI::App& app);
void add_db_commands(CLI::App& app);  // db info, merge, migrate, check
// recorded_by: "shardcost VERSION (REVISION)", kept with every imported run.
void add_import_command(CLI::App& app, const std::string& recorded_by);
void add_export_command(CLI::App& app);
void add_bench_commands(CLI::App& app, const std::string& version, const std::string& revision);
void add_devices_command(CLI::App& app);
// trace -- CMD, trace summary, trace export; recorded_by as for import.
void add_trace_commands(CLI::App& app, const std::string& recorded_by);
void add_compare_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_predict_command(CLI::App& app);  // predict gemm, collective, memory
void add_fit_command(CLI::App& app);
void add_shard_tables_command(CLI::App& app);    // embedding tables over GPUs
void add_split_learning_command(CLI::App& app);  // operator graphs over edge devices
void add_place_command(CLI::App& app);           // operator graphs placed on devices
// schedule: many jobs on one cluster; recorded_by as for import (schedule --db).
void add_schedule_command(CLI::App& app, const std::string& recorded_by);

// Thrown by a command that has printed its result and must end with a non-zero code that is
// not an error (compare: 1 when something regressed); main returns the code, printing nothing.
struct ExitStatus {
  int code = 0;
};

}  // namespace shardcost::cli
