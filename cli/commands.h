#pragma once
// Each command group registers its subcommands on the app; main.cpp only wires them up.
#include <CLI/CLI.hpp>

namespace shardcost::cli {

void add_catalog_command(CLI::App& app);
void add_plan_commands(CLI::App& app);  // estimate, rank
void add_validate_command(CLI::App& app);

}  // namespace shardcost::cli
