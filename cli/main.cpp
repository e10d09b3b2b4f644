// shardcost: measure kernels and collectives, price training strategies, catch regressions.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "commands.h"
#include "output_file.h"
#include "shardcost/db.h"
#include "shardcost/error.h"

int main(int argc, char** argv) {
  CLI::App app{"shardcost: what GPU kernels and collectives cost, and how to split a model"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(SHARDCOST_VERSION " (" SHARDCOST_GIT_REVISION ")"));
  shardcost::cli::add_catalog_command(app);
  shardcost::cli::add_plan_commands(app);
  shardcost::cli::add_validate_command(app);
  shardcost::cli::add_db_commands(app);
  shardcost::cli::add_import_command(
      app, "shardcost " SHARDCOST_VERSION " (" SHARDCOST_GIT_REVISION ")");
  shardcost::cli::add_export_command(app);
  shardcost::cli::add_trace_commands(
      app, "shardcost " SHARDCOST_VERSION " (" SHARDCOST_GIT_REVISION ")");
  shardcost::cli::add_bench_commands(app, SHARDCOST_VERSION, SHARDCOST_GIT_REVISION);
  shardcost::cli::add_devices_command(app);
  shardcost::cli::add_compare_command(app);
  shardcost::cli::add_report_command(app);
  shardcost::cli::add_predict_command(app);
  shardcost::cli::add_fit_command(app);
  // A command that waits for another writer says so at once.
  shardcost::db::set_lock_wait_notice([](const std::string& message) {
    std::fprintf(stderr, "shardcost: %s\n", message.c_str());
    std::fflush(stderr);
  });
  shardcost::cli::OutputFile output;
  output.add_to(app);
  app.parse_complete_callback([&output] { output.begin(); });
  try {
    app.parse(argc, argv);
    output.commit();
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const shardcost::cli::ExitStatus& e) {
    // The command ran and found something to report (a regression, nothing feasible): what
    // it printed is the answer, kept.
    try {
      output.commit();
    } catch (const shardcost::Error& w) {
      std::fprintf(stderr, "shardcost: %s\n", w.what());
      return 1;
    }
    return e.code;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "shardcost: %s (see --help)\n", e.what());
    return 2;
  } catch (const shardcost::Error& e) {
    std::fprintf(stderr, "shardcost: %s\n", e.what());
    return e.exit_code();
  } catch (const std::system_error& e) {
    // fmt::print's write failing (a full disk, a closed pipe): the output is incomplete.
    std::fprintf(stderr, "shardcost: cannot write the output: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardcost: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}
