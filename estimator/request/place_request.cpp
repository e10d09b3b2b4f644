// place: the placement program over an operator graph's ideals (or the integer program), and
// the layer-wise search on the same GPUs to compare with (docs/operator-graphs.md).
#include <fmt/format.h>

#include "shardcost/error.h"
#include "shardcost/planner_requests.h"

namespace shardcost {

PlaceReport run_place(const PlaceRequest& a) {
  PlaceReport r;
  r.request = a;
  r.graph = load_onnx(a.model);
  const OpGraph& g = r.graph;
  r.cluster = load_cluster(a.cluster, a.gpus);
  const Cluster& c = r.cluster;
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
  // Each ideal is a set of the graph's operators, kept until the program ends: past a few
  // million they are gigabytes (2^31-1 took 2.1 GB), and the integer program takes over.
  constexpr int64_t kMaxIdeals = 5'000'000;
  if (a.max_ideals < 1 || a.max_ideals > kMaxIdeals)
    throw InputError(fmt::format(
        "--max-ideals {}: give 1 to 5,000,000 (past it the integer program places the graph: "
        "--solver mip)",
        a.max_ideals));
  if (!(a.solver_time_s > 0) || a.solver_time_s > 3600)
    throw InputError("--solver-time: give seconds above 0, at most 3600");
  o.solver =
      a.solver == "mip" ? PlacementOptions::Solver::program : PlacementOptions::Solver::automatic;
  o.max_ideals = a.max_ideals;
  o.program_time_s = a.solver_time_s;
  o.progress = a.progress;
  for (const NodeGroup& grp : c.groups)
    if (is_quantized(o.precision) || grp.device.peak_flops[static_cast<int>(o.precision)] <= 0)
      throw InputError(
          fmt::format("--precision {}: {} has no such peak; use fp32, tf32, fp16 or "
                      "bf16 where every device has one",
                      a.precision, grp.device.name));
  const auto costs = load_cost_sources(a.db);
  r.warnings = costs->warnings;
  o.costs = costs->source();
  r.placement = place_graph(g, c, o);
  const DevicePlacement& p = r.placement;
  r.global_batch = a.micro_batch * (p.micro_batches > 0 ? p.micro_batches : 1);
  if (c.groups.size() == 1 && p.feasible) {
    LayerwiseOptions lo;
    lo.global_batch = r.global_batch;
    lo.precision = o.precision;
    lo.optimizer = o.optimizer;
    lo.costs = o.costs;
    try {
      r.layerwise = plan_layerwise(g, c, lo).best;
    } catch (const InputError&) {  // a batch no split of these GPUs divides: nothing to compare
    }
  }
  if (!p.feasible) r.verdict = {1, fmt::format("no placement fits: {}", p.reason)};
  return r;
}

nlohmann::json to_json(const PlaceReport& r) {
  const DevicePlacement& p = r.placement;
  nlohmann::json stages = nlohmann::json::array();
  for (const PlacedStage& s : p.stages)
    stages.push_back({{"group", s.group},
                      {"device", s.device},
                      {"operators", s.operators},
                      {"compute_s", s.compute_s},
                      {"comm_s", s.comm_s},
                      {"memory_bytes", s.memory_bytes},
                      {"capacity_bytes", s.capacity_bytes}});
  nlohmann::json j = {{"model", r.graph.name},
                      {"cluster", r.cluster.name},
                      {"gpus", r.cluster.total_gpus()},
                      {"micro_batch", r.request.micro_batch},
                      {"micro_batches", p.micro_batches},
                      {"precision", r.request.precision},
                      {"feasible", p.feasible},
                      {"exact", p.exact},
                      {"ideals", p.ideals},
                      {"integer_programs", p.programs},
                      {"stage_s", p.stage_s},
                      {"step_s", p.step_s},
                      {"stages", stages}};
  if (!p.note.empty()) j["note"] = p.note;
  if (!p.reason.empty()) j["reason"] = p.reason;
  if (r.layerwise && r.layerwise->feasible)
    j["layerwise"] = {{"strategy", r.layerwise->strategy}, {"step_s", r.layerwise->step_s}};
  return j;
}

}  // namespace shardcost
