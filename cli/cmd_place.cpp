// place: optimal placement of an operator graph's operators onto a cluster's devices for
// pipelined training (docs/operator-graphs.md, "Device placement").
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "format.h"
#include "shardcost/device_placement.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/layerwise.h"
#include "shardcost/request.h"

namespace shardcost::cli {
namespace {

struct Args {
  std::string model, cluster, precision = "fp32", optimizer = "sgd", format = "text", db;
  std::string solver = "ideals";
  std::optional<int> gpus;
  int micro_batch = 1, micro_batches = 0;
  int64_t max_ideals = 20000;
  double solver_time_s = 10;
};

std::string operators_text(const std::vector<std::string>& ops) {
  if (ops.size() == 1) return ops[0];
  return fmt::format("{} .. {} ({})", ops.front(), ops.back(), ops.size());
}

void run(const Args& a) {
  const Format format = parse_format(a.format, {Format::text, Format::json});
  const OpGraph g = load_onnx(a.model);
  for (const std::string& note : g.notes)
    fmt::print(stderr, "shardcost: note: {}: {}\n", g.source, note);
  const Cluster c = load_cluster(a.cluster, a.gpus);
  PlacementOptions o;
  o.micro_batch = a.micro_batch;
  o.micro_batches = a.micro_batches;
  o.precision = parse_dtype(a.precision);
  o.optimizer = a.optimizer;
  if (a.micro_batches < 0)
    throw InputError("--micro-batches: give a positive count (or 0: 4 x the GPUs)");
  if (a.solver != "ideals" && a.solver != "mip")
    throw InputError(
        fmt::format("--solver {}: use ideals (the program over ideals, the integer program past "
                    "--max-ideals) or mip (the integer program alone)",
                    a.solver));
  if (a.max_ideals < 1) throw InputError("--max-ideals: give at least 1");
  if (!(a.solver_time_s > 0) || a.solver_time_s > 3600)
    throw InputError("--solver-time: give seconds above 0, at most 3600");
  o.solver =
      a.solver == "mip" ? PlacementOptions::Solver::program : PlacementOptions::Solver::automatic;
  o.max_ideals = a.max_ideals;
  o.program_time_s = a.solver_time_s;
  for (const NodeGroup& grp : c.groups)
    if (is_quantized(o.precision) || grp.device.peak_flops[static_cast<int>(o.precision)] <= 0)
      throw InputError(
          fmt::format("--precision {}: {} has no such peak; use fp32, tf32, fp16 or "
                      "bf16 where every device has one",
                      a.precision, grp.device.name));
  const auto costs = load_cost_sources(a.db);
  say_warnings(costs->warnings);
  o.costs = costs->source();
  const DevicePlacement p = place_graph(g, c, o);
  // The layer-wise search on the same GPUs and global batch, where they are of one kind.
  std::optional<GraphPlan> layerwise;
  const int global = a.micro_batch * (p.micro_batches > 0 ? p.micro_batches : 1);
  if (c.groups.size() == 1 && p.feasible) {
    LayerwiseOptions lo;
    lo.global_batch = global;
    lo.precision = o.precision;
    lo.optimizer = o.optimizer;
    lo.costs = o.costs;
    try {
      layerwise = plan_layerwise(g, c, lo).best;
    } catch (const InputError&) {  // a batch no split of these GPUs divides: nothing to compare
    }
  }
  if (format == Format::json) {
    nlohmann::json stages = nlohmann::json::array();
    for (const PlacedStage& s : p.stages)
      stages.push_back({{"group", s.group},
                        {"device", s.device},
                        {"operators", s.operators},
                        {"compute_s", s.compute_s},
                        {"comm_s", s.comm_s},
                        {"memory_bytes", s.memory_bytes},
                        {"capacity_bytes", s.capacity_bytes}});
    nlohmann::json j = {{"model", g.name},
                        {"cluster", c.name},
                        {"gpus", c.total_gpus()},
                        {"micro_batch", a.micro_batch},
                        {"micro_batches", p.micro_batches},
                        {"precision", a.precision},
                        {"feasible", p.feasible},
                        {"exact", p.exact},
                        {"ideals", p.ideals},
                        {"integer_programs", p.programs},
                        {"stage_s", p.stage_s},
                        {"step_s", p.step_s},
                        {"stages", stages}};
    if (!p.note.empty()) j["note"] = p.note;
    if (!p.reason.empty()) j["reason"] = p.reason;
    if (layerwise && layerwise->feasible)
      j["layerwise"] = {{"strategy", layerwise->strategy}, {"step_s", layerwise->step_s}};
    fmt::print("{}\n", json_text(j));
  } else {
    fmt::print("{} ({}) on {}: {} GPUs, micro-batch {}, {}\n", g.name, g.source, c.name,
               c.total_gpus(), a.micro_batch, a.precision);
    if (p.feasible) {
      // How it was placed: over every ideal, or as the note says.
      const std::string how =
          p.note.empty()
              ? fmt::format("exact over {} ideals", thousands(static_cast<double>(p.ideals)))
              : fmt::format("{} ({})", p.exact ? "exact" : "not proven optimal", p.note);
      fmt::print(
          "{}; {} stages, slowest {:.4f} s a micro-batch; step of {} micro-batches {:.4f} s "
          "(1F1B)\n\n",
          how, p.stages.size(), p.stage_s, p.micro_batches, p.step_s);
      Table t({"stage", "group", "device", "operators", "compute s", "comm s", "stage s", "GiB",
               "of GiB"},
              {true, false, false, false, true, true, true, true, true});
      int i = 0;
      for (const PlacedStage& s : p.stages)
        t.add({std::to_string(++i), s.group, s.device, operators_text(s.operators),
               fmt::format("{:.4f}", s.compute_s), fmt::format("{:.4f}", s.comm_s),
               fmt::format("{:.4f}", s.seconds()), fmt::format("{:.2f}", s.memory_bytes / kGiB),
               fmt::format("{:.1f}", s.capacity_bytes / kGiB)});
      fmt::print("{}", t.render());
      if (layerwise && layerwise->feasible)
        fmt::print("\nlayer-wise search, same GPUs, global batch {}: {} {:.4f} s a step\n", global,
                   layerwise->strategy, layerwise->step_s);
      else if (c.groups.size() > 1)
        fmt::print(
            "\n(layer-wise plans need one kind of device: none to compare on a mixed "
            "cluster)\n");
    }
  }
  if (!p.feasible) {
    std::fflush(stdout);
    fmt::print(stderr, "shardcost: no placement fits: {}\n", p.reason);
    throw ExitStatus{1};
  }
}

}  // namespace

void add_place_command(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "place", "Place an operator graph's operators on a cluster's devices for pipelined training");
  cmd->add_option("--model", a->model, "operator graph FILE.onnx")->required();
  cmd->add_option("--cluster", a->cluster,
                  "catalog system name or cluster JSON file (mixed groups too)")
      ->required();
  cmd->add_option("--gpus", a->gpus, "GPU count (whole nodes, or part of one node); at most 64");
  cmd->add_option("--micro-batch", a->micro_batch, "samples per micro-batch (default 1)");
  cmd->add_option("--micro-batches", a->micro_batches, "per step (default: 4 x the GPUs)");
  cmd->add_option("--precision", a->precision, "fp32 (default), tf32, fp16 or bf16");
  cmd->add_option("--optimizer", a->optimizer, "sgd (default) or adam, for memory");
  cmd->add_option("--db", a->db, "price from the measurements in this cost store");
  cmd->add_option("--solver", a->solver,
                  "ideals (default: the exact program over the graph's ideals; past --max-ideals "
                  "the integer program beside prefixes) or mip (the integer program alone, GLPK)");
  cmd->add_option("--max-ideals", a->max_ideals, "ideals the exact program takes (default 20000)");
  cmd->add_option("--solver-time", a->solver_time_s,
                  "seconds the integer program may take, all stage counts together (default 10)");
  cmd->add_option("--format", a->format, "text or json");
  cmd->callback([a] { run(*a); });
}

}  // namespace shardcost::cli
