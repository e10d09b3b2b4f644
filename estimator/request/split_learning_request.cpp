// split-learning: the edge devices, the server and the cuts the planner chooses, with the
// baseline it is compared with (docs/operator-graphs.md).
#include <fmt/format.h>

#include "shardcost/error.h"
#include "shardcost/planner_requests.h"

namespace shardcost {
namespace {

nlohmann::json round_json(const SplitRound& r) {
  nlohmann::json clients = nlohmann::json::array();
  for (const ClientRound& c : r.clients)
    clients.push_back({{"name", c.name},
                       {"device", c.device},
                       {"cut", c.cut},
                       {"cut_after", c.cut_after},
                       {"smashed_bytes", c.smashed_bytes},
                       {"result_bytes", c.result_bytes},
                       {"share", c.share},
                       {"device_s", c.device_s},
                       {"upload_s", c.upload_s},
                       {"wait_s", c.wait_s},
                       {"server_s", c.server_s},
                       {"download_s", c.download_s},
                       {"finish_s", c.finish_s},
                       {"device_memory_bytes", c.device_memory_bytes}});
  nlohmann::json j = {{"method", r.method}, {"round_s", r.round_s}, {"devices", clients}};
  if (r.samples_per_s > 0) j["samples_per_s"] = r.samples_per_s;
  return j;
}

}  // namespace

SplitLearningReport run_split_learning(const SplitLearningRequest& a) {
  SplitLearningReport r;
  r.request = a;
  r.graph = load_onnx(a.model);
  r.setup = load_split_devices(a.devices);
  r.server = find_device(a.server);
  SplitOptions o;
  o.precision = parse_dtype(a.precision);
  if (is_quantized(o.precision) || r.server.peak_flops[static_cast<int>(o.precision)] <= 0)
    throw InputError(
        fmt::format("--precision {}: {} has no such peak; use fp32, tf32, fp16 or "
                    "bf16 where it has one",
                    a.precision, r.server.name));
  const auto costs = load_cost_sources(a.db);
  r.warnings = costs->warnings;
  o.costs = costs->source();
  o.inference = a.inference;
  r.result = plan_split_learning(r.graph, r.server, r.setup, o);
  return r;
}

nlohmann::json to_json(const SplitLearningReport& r) {
  return {{"model", r.graph.name},
          {"file", r.graph.source},
          {"server", r.server.name},
          {"precision", r.request.precision},
          {"inference", r.request.inference},
          {"shared_uplink_Mbps", r.setup.shared_uplink_Bps * 8 / 1e6},
          {"cuts", r.result.cuts},
          {"best", round_json(r.result.best)},
          {"baseline", round_json(r.result.baseline)}};
}

}  // namespace shardcost
