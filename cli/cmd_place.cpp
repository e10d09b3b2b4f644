// place: optimal placement of an operator graph's operators onto a cluster's devices for
// pipelined training (docs/operator-graphs.md, "Device placement").
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "format.h"
#include "plan_args.h"  // end_with
#include "progress.h"
#include "shardcost/error.h"
#include "shardcost/planner_requests.h"

namespace shardcost::cli {
namespace {

std::string operators_text(const std::vector<std::string>& ops) {
  if (ops.size() == 1) return ops[0];
  return fmt::format("{} .. {} ({})", ops.front(), ops.back(), ops.size());
}

void render(const PlaceReport& r, Format format) {
  const OpGraph& g = r.graph;
  const Cluster& c = r.cluster;
  const DevicePlacement& p = r.placement;
  const PlaceRequest& a = r.request;
  for (const std::string& note : g.notes)
    fmt::print(stderr, "shardcost: note: {}: {}\n", g.source, note);
  say_warnings(r.warnings);
  if (format == Format::json) {
    fmt::print("{}\n", json_text(to_json(r)));
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
      if (r.layerwise && r.layerwise->feasible)
        fmt::print("\nlayer-wise search, same GPUs, global batch {}: {} {:.4f} s a step\n",
                   r.global_batch, r.layerwise->strategy, r.layerwise->step_s);
      else if (c.groups.size() > 1)
        fmt::print(
            "\n(layer-wise plans need one kind of device: none to compare on a mixed "
            "cluster)\n");
    }
  }
  end_with(r.verdict);
}

}  // namespace

void add_place_command(CLI::App& app) {
  auto a = std::make_shared<PlaceRequest>();
  auto format = std::make_shared<std::string>("text");
  auto* cmd = app.add_subcommand(
      "place", "Place an operator graph's operators on a cluster's devices for pipelined training");
  cmd->add_option("--model", a->model, "operator graph FILE.onnx");
  cmd->add_option("--cluster", a->cluster,
                  "catalog system name or cluster JSON file (mixed groups too)");
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
  cmd->add_option("--format", *format, "text or json");
  auto request_file = std::make_shared<std::string>();
  cmd->add_option("--request", *request_file,
                  "run a saved request (JSON, {\"command\": \"place\", ...}; docs/python.md): "
                  "options given beside it replace its keys");
  cmd->callback([a, format, request_file, cmd] {
    const Format f = parse_format(*format, {Format::text, Format::json});
    if (request_file->empty())
      require_options({{"--model", !a->model.empty()}, {"--cluster", !a->cluster.empty()}});
    PlaceRequest request =
        request_file->empty()
            ? *a
            : place_request_from_json(planner_request(*cmd, *request_file, to_json(*a)),
                                      fmt::format("'{}'", *request_file));
    request.progress = progress_lines("place");
    render(run_place(request), f);
  });
}

}  // namespace shardcost::cli
