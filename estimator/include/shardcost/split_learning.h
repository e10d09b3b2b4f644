#pragma once
// Parallel split learning at the edge (EdgeSplit: Zhang et al., "Resource-efficient Parallel
// Split Learning in Heterogeneous Edge Computing", 2024): every device trains the first layers
// of an operator graph on its own batch, sends the activation at its cut ("smashed data") up
// to a server that trains the rest, and gets the gradient back. Each device's cut and its
// share of a shared uplink are chosen to minimise the round time. docs/operator-graphs.md.
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/costs.h"
#include "shardcost/hardware.h"
#include "shardcost/opgraph.h"

namespace shardcost {

// A device at the edge, priced by a roofline: its peaks times measured fractions
// (data/catalog/edge_devices.json, every figure sourced).
struct EdgeDevice {
  std::string name, description;
  double fp32_flops = 0, fp16_flops = 0;  // peaks; fp16 0: runs 16-bit work at the fp32 rate
  double memory_bytes = 0, memory_bandwidth_Bps = 0;
  double compute_efficiency = 0, compute_fp16_efficiency = 0, memory_efficiency = 0;
};
std::vector<EdgeDevice> edge_devices();  // the catalog's
EdgeDevice find_edge_device(std::string_view name);

struct SplitClient {
  std::string name;
  EdgeDevice device;
  double uplink_Bps = 0, downlink_Bps = 0;  // the device's own links
  int batch = 0;                            // samples per round
};

// A devices file: {"shared_uplink_Mbps": 300, "devices": [{"name": "cam-1", "device":
// "jetson-nano", "uplink_Mbps": 100, "downlink_Mbps": 300, "batch": 32}, ...]}. The shared
// uplink (optional: an access point's, split among the devices) caps the sum of their rates.
struct SplitSetup {
  std::vector<SplitClient> clients;
  double shared_uplink_Bps = 0;  // 0: none, each device's own uplink only
};
SplitSetup parse_split_devices_json(std::string_view text, std::string_view origin);
SplitSetup load_split_devices(std::string_view path);

struct SplitOptions {
  DType precision = DType::fp32;
  const CostSource* costs = nullptr;  // the server's GEMMs
  // Inference (issue 39, item 3): one forward pass per request batch, the result sent back;
  // nothing is trained or kept for a backward. The cuts then include both ends: everything on
  // the device (nothing sent) and everything on the server (the raw input sent).
  bool inference = false;
};

// One device's part of a round.
struct ClientRound {
  std::string name, device;
  int cut = 0;            // operators on the device (priced ones, in graph order)
  std::string cut_after;  // the last of them
  double smashed_bytes = 0;
  double result_bytes = 0;  // inference: the output sent back down (training: the gradient)
  double share = 0;         // of the shared uplink (0 without one)
  double device_s = 0;      // forward, backward and optimizer step on the device
  double upload_s = 0, server_s = 0, wait_s = 0, download_s = 0;
  double finish_s = 0;
  double device_memory_bytes = 0;
};

struct SplitRound {
  std::string method;  // "per-device cuts" or "one cut for all, equal shares"
  double round_s = 0;  // inference: one request batch of every device, end to end
  // Inference: samples a second in the steady state, successive batches pipelined through
  // each device's compute, uplink and downlink and the server (which takes every device's
  // work in turn): the devices' batches over the slowest of those stages.
  double samples_per_s = 0;
  std::vector<ClientRound> clients;
};

struct SplitResult {
  SplitRound best;
  SplitRound baseline;  // the best cut common to every device, the uplink shared equally
  int cuts = 0;         // places the graph can be cut (one tensor crosses)
};

// Throws InputError when no cut fits some device's memory, or the graph has no place where a
// single tensor crosses.
SplitResult plan_split_learning(const OpGraph&, const Device& server, const SplitSetup&,
                                const SplitOptions&);

}  // namespace shardcost
