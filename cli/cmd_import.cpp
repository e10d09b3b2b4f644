// import nccl-tests | kineto | nsys | runs | megatron-log | torchtitan-log | nemo-log | csv: bring
// in results people already have.
#include <fmt/format.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "commands.h"
#include "shardcost/calibration.h"
#include "shardcost/db.h"
#include "shardcost/error.h"
#include "shardcost/importers.h"

namespace shardcost::cli {
namespace {

struct ImportArgs {
  std::string db = "shardcost.db";
  std::vector<std::string> files;
  std::string op;
  // Measured runs (logs, traces): what the file does not say of its run.
  LogImport run;
  int64_t batch_rows = 50000;
  bool one_run = false;  // kineto: the files are the ranks of one job
  int threads = 0;       // kineto --one-run: files read at once; 0 = one per core
  std::string step_prefix = "ProfilerStep#";  // nsys: NVTX ranges that are steps
  std::string config;                         // torchtitan-log: the job config file
};

std::string describe(const db::Measurements& m) {
  std::vector<std::string> parts;
  if (!m.collectives.empty())
    parts.push_back(fmt::format("{} collective rows", m.collectives.size()));
  if (!m.gemms.empty()) parts.push_back(fmt::format("{} gemm rows", m.gemms.size()));
  if (!m.memory.empty()) parts.push_back(fmt::format("{} memory rows", m.memory.size()));
  if (!m.kernels.empty()) parts.push_back(fmt::format("{} kernel events", m.kernels.size()));
  if (m.measured)
    return parts.empty() ? fmt::format("a measured run, {} on {} {}", m.measured->model_name,
                                       m.measured->gpus, m.measured->device)
                         : fmt::format("{}, and its measured step", fmt::join(parts, ", "));
  return fmt::format("{}, {} device{}", fmt::join(parts, ", "), m.devices.size(),
                     m.devices.size() == 1 ? "" : "s");
}

// kineto: a configuration given makes the traced run a measured run.
bool traced(const LogImport& run) {
  return !run.model.empty() || !run.strategy.empty() || run.gpus || !run.cluster.empty();
}

// Writes one run and says what became of it, under `what` (the file, or "N rank traces").
void store_run(db::Store& store, db::Measurements& m, const ImportArgs& a,
               const std::string& recorded_by, const std::string& what) {
  m.run.recorded_by = recorded_by;
  for (const auto& w : m.warnings) fmt::print(stderr, "shardcost: warning: {}\n", w);
  const db::WriteResult r = store.write(m, a.batch_rows);
  if (r.duplicate && m.adds_to_run)
    fmt::print("{}: run {} holds these rows already; nothing added\n", what, r.run_id);
  else if (r.duplicate)
    fmt::print("{}: already imported as run {}; nothing added\n", what, r.run_id);
  else if (r.extended)
    fmt::print("{}: run {}: {} (added to the run)\n", what, r.run_id, describe(m));
  else if (r.replaced)
    fmt::print("{}: run {}: {} (an earlier import of it had not finished; replaced)\n", what,
               r.run_id, describe(m));
  else
    fmt::print("{}: run {}: {}\n", what, r.run_id, describe(m));
}

void add_kind(CLI::App* parent, const std::string& name, const std::string& help,
              const std::string& recorded_by,
              std::vector<db::Measurements> (*parse)(const ImportArgs&, const std::string& path)) {
  auto a = std::make_shared<ImportArgs>();
  auto* cmd = parent->add_subcommand(name, help);
  cmd->add_option("--db", a->db, "store file (created when missing; default shardcost.db)");
  cmd->add_option("--batch-rows", a->batch_rows, "rows per transaction (default 50000)")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  if (name == "nccl-tests")
    cmd->add_option("--op", a->op,
                    "collective, when neither the file nor its name says (all_reduce, ...)");
  if (name == "nsys")
    cmd->add_option("--step-prefix", a->step_prefix,
                    "NVTX ranges named PREFIX<number> are steps (default ProfilerStep#)");
  const bool log = name == "megatron-log" || name == "torchtitan-log" || name == "nemo-log";
  if (log || name == "kineto" || name == "nsys") {
    auto* cluster = cmd->add_option("--cluster", a->run.cluster,
                                    "catalog system or cluster JSON file the run ran on");
    if (log) cluster->required();
    a->run.software = name == "torchtitan-log" ? "torchtitan"
                      : name == "nemo-log"     ? "nemo"
                                               : "megatron-core";
    cmd->add_option("--software", a->run.software,
                    fmt::format("the stack, preset[:key=value,...] (default {})", a->run.software));
  }
  if (name == "torchtitan-log" || name == "nemo-log" || name == "kineto" || name == "nsys") {
    cmd->add_option("--gpus", a->run.gpus, "the GPUs the run used")->check(CLI::Range(1, 1 << 20));
    cmd->add_option("--model", a->run.model,
                    name == "torchtitan-log"
                        ? "catalog model or model file, where the config's name and flavor are "
                          "not a catalog model"
                        : "catalog model or model file the run trained");
  }
  if (name == "nemo-log" || name == "kineto" || name == "nsys")
    cmd->add_option("--strategy", a->run.strategy,
                    "the run's plan, as estimate --strategy takes it");
  if (name == "torchtitan-log")
    cmd->add_option("--config", a->config, "the run's torchtitan job config (TOML)")->required();
  if (name == "kineto") {
    cmd->add_flag("--one-run", a->one_run,
                  "the files are the ranks of one job (a trace per rank): read in parallel, "
                  "stored as one run");
    cmd->add_option("--threads", a->threads,
                    "--one-run: files read at once (default: one per core)")
        ->check(CLI::Range(1, 1024));
  }
  cmd->add_option("FILE", a->files, "files to import")->required();
  cmd->callback([a, parse, recorded_by] {
    // The store is opened (and made, where it is new) once there is something to write: a
    // file refused at the door leaves no empty store behind.
    std::optional<db::Store> store;
    auto opened = [&]() -> db::Store& {
      if (!store) store.emplace(db::Store::open(a->db, db::Store::Mode::read_write));
      return *store;
    };
    if (a->one_run) {
      const int threads =
          a->threads > 0 ? a->threads : static_cast<int>(std::thread::hardware_concurrency());
      db::Measurements m = db::import_kineto_ranks(a->files, threads);
      if (traced(a->run)) add_traced_run(m, a->files.front(), a->run);
      store_run(opened(), m, *a, recorded_by, fmt::format("{} rank traces", a->files.size()));
      return;
    }
    for (const auto& file : a->files) {
      // Every run of a file is read before any is written: a bad one stores nothing.
      std::vector<db::Measurements> runs = parse(*a, file);
      for (auto& m : runs) store_run(opened(), m, *a, recorded_by, file);
    }
  });
}

}  // namespace

void add_import_command(CLI::App& app, const std::string& recorded_by) {
  auto* imp = app.add_subcommand(
      "import",
      "Import nccl-tests output, Kineto traces, Nsight Systems exports, logs or CSV tables");
  imp->require_subcommand(1);
  add_kind(imp, "nccl-tests",
           "nccl-tests stdout (any *_perf, old or new layout) or its -J JSON file", recorded_by,
           [](const ImportArgs& a, const std::string& file) {
             return db::import_nccl_tests_runs(db::read_input_file(file), file, a.op);
           });
  // Streamed: a trace of gigabytes never sits in memory.
  add_kind(imp, "kineto", "PyTorch profiler / Kineto Chrome-trace JSON (GPU kernels, copies, sets)",
           recorded_by, [](const ImportArgs& a, const std::string& file) {
             db::Measurements m = db::import_kineto_file(file);
             // With its configuration, the traced run is a measured run too.
             if (traced(a.run)) add_traced_run(m, file, a.run);
             return std::vector<db::Measurements>{std::move(m)};
           });
  add_kind(imp, "nsys",
           "an Nsight Systems report exported to SQLite (nsys export --type sqlite): GPU kernels, "
           "copies, sets, NVTX step ranges",
           recorded_by, [](const ImportArgs& a, const std::string& file) {
             db::Measurements m = db::import_nsys_file(file, a.step_prefix);
             if (traced(a.run)) add_traced_run(m, file, a.run);
             return std::vector<db::Measurements>{std::move(m)};
           });
  add_kind(imp, "runs",
           "measured training runs: a CSV or JSON table of model, cluster, gpus, strategy, "
           "software, step_time_s (docs/calibration.md)",
           recorded_by, [](const ImportArgs&, const std::string& file) {
             return import_runs_table(db::read_input_file(file), file);
           });
  add_kind(imp, "megatron-log",
           "a Megatron-LM / Megatron-core training log: its arguments dump and iteration times "
           "as measured runs (docs/calibration.md)",
           recorded_by, [](const ImportArgs& a, const std::string& file) {
             return import_megatron_log(db::read_input_file(file), file, a.run.cluster,
                                        a.run.software);
           });
  add_kind(imp, "torchtitan-log",
           "a torchtitan training log with its job config (--config): the steps and peak memory "
           "of its metric lines as measured runs (docs/calibration.md)",
           recorded_by, [](const ImportArgs& a, const std::string& file) {
             LogImport run = a.run;
             run.config_text = db::read_input_file(a.config);
             run.config_source = a.config;
             return import_torchtitan_log(db::read_input_file(file), file, run);
           });
  add_kind(imp, "nemo-log",
           "a NeMo 2 / Megatron-Bridge training log: its train_step_timing lines as measured "
           "runs of the recipe given (--model, --gpus, --strategy; docs/calibration.md)",
           recorded_by, [](const ImportArgs& a, const std::string& file) {
             return import_nemo_log(db::read_input_file(file), file, a.run);
           });
  add_kind(imp, "csv", "a cost table written by 'shardcost export --format csv'", recorded_by,
           [](const ImportArgs&, const std::string& file) {
             return db::import_cost_csv_runs(db::read_input_file(file), file);
           });
}

}  // namespace shardcost::cli
