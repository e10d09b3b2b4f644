// shardcost: measure kernels and collectives, price training strategies, catch regressions.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "commands.h"
#include "format.h"
#include "output_file.h"
#include "shardcost/closest.h"
#include "shardcost/db.h"
#include "shardcost/error.h"

namespace {

// A mistyped command is named, with the closest one ("shardcost db infoo": did you mean
// 'info'?), instead of CLI11's "A subcommand is required". Empty: the words name commands.
std::string unknown_command(CLI::App& app, int argc, char** argv) {
  CLI::App* at = &app;
  std::string path = "shardcost";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') return "";
    const auto subs = at->get_subcommands([](CLI::App*) { return true; });
    if (subs.empty()) return "";
    // A command that also takes words of its own (trace's program) reads them itself.
    for (const CLI::Option* o : at->get_options())
      if (o->get_positional()) return "";
    std::vector<std::string> names;
    for (CLI::App* sub : subs) names.push_back(sub->get_name());
    auto it = std::find(names.begin(), names.end(), word);
    if (it != names.end()) {
      at = subs[static_cast<size_t>(it - names.begin())];
      path += " " + word;
      continue;
    }
    const std::vector<std::string_view> views(names.begin(), names.end());
    const std::string closest = shardcost::closest_name(word, views);
    return fmt::format("unknown command '{}' for '{}'{}; the commands are {} (see {} --help)",
                       word.size() > 40 ? word.substr(0, 40) + "..." : word, path,
                       closest.empty() ? "" : fmt::format(" (did you mean '{}'?)", closest),
                       fmt::join(names, ", "), path);
  }
  return "";
}

}  // namespace

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
  shardcost::cli::add_shard_tables_command(app);
  shardcost::cli::add_split_learning_command(app);
  shardcost::cli::add_place_command(app);
  shardcost::cli::add_schedule_command(
      app, "shardcost " SHARDCOST_VERSION " (" SHARDCOST_GIT_REVISION ")");
  // A command that waits for another writer says so at once.
  shardcost::db::set_lock_wait_notice([](const std::string& message) {
    std::fprintf(stderr, "shardcost: %s\n", message.c_str());
    std::fflush(stderr);
  });
  if (const std::string why = unknown_command(app, argc, argv); !why.empty()) {
    std::fprintf(stderr, "shardcost: %s\n", why.c_str());
    return 2;
  }
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
    // One line, whatever the file it quotes holds.
    std::fprintf(stderr, "shardcost: %s\n", shardcost::cli::printable(e.what()).c_str());
    return e.exit_code();
  } catch (const std::system_error& e) {
    // fmt::print's write failing (a full disk, a closed pipe): the output is incomplete.
    // The system's reason alone ("No space left on device"), not fmt's wording around it.
    std::fprintf(stderr, "shardcost: cannot write the output: %s\n", e.code().message().c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardcost: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}
