// split-learning: per-device cuts of an operator graph and uplink shares for parallel split
// learning at the edge (docs/operator-graphs.md).
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "format.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/request.h"
#include "shardcost/split_learning.h"

namespace shardcost::cli {
namespace {

struct Args {
  std::string model, devices, server, precision = "fp32", format = "text", db;
};

std::string round_table(const SplitRound& r, bool shared) {
  std::vector<std::string> h{"device",     "kind",     "cut",        "after",
                             "smashed MB", "share",    "device s",   "upload s",
                             "wait s",     "server s", "download s", "finish s"};
  Table t(h, {false, false, true, false, true, true, true, true, true, true, true, true});
  for (const ClientRound& c : r.clients)
    t.add({c.name, c.device, std::to_string(c.cut), c.cut_after,
           fmt::format("{:.2f}", c.smashed_bytes / 1e6),
           shared ? fmt::format("{:.1f} %", 100 * c.share) : "-", fmt::format("{:.3f}", c.device_s),
           fmt::format("{:.3f}", c.upload_s), fmt::format("{:.3f}", c.wait_s),
           fmt::format("{:.3f}", c.server_s), fmt::format("{:.3f}", c.download_s),
           fmt::format("{:.3f}", c.finish_s)});
  return t.render();
}

nlohmann::json round_json(const SplitRound& r) {
  nlohmann::json clients = nlohmann::json::array();
  for (const ClientRound& c : r.clients)
    clients.push_back({{"name", c.name},
                       {"device", c.device},
                       {"cut", c.cut},
                       {"cut_after", c.cut_after},
                       {"smashed_bytes", c.smashed_bytes},
                       {"share", c.share},
                       {"device_s", c.device_s},
                       {"upload_s", c.upload_s},
                       {"wait_s", c.wait_s},
                       {"server_s", c.server_s},
                       {"download_s", c.download_s},
                       {"finish_s", c.finish_s},
                       {"device_memory_bytes", c.device_memory_bytes}});
  return {{"method", r.method}, {"round_s", r.round_s}, {"devices", clients}};
}

void run(const Args& a) {
  const Format format = parse_format(a.format, {Format::text, Format::json});
  const OpGraph g = load_onnx(a.model);
  for (const std::string& note : g.notes)
    fmt::print(stderr, "shardcost: note: {}: {}\n", g.source, note);
  const SplitSetup setup = load_split_devices(a.devices);
  const Device server = find_device(a.server);
  SplitOptions o;
  o.precision = parse_dtype(a.precision);
  if (is_quantized(o.precision) || server.peak_flops[static_cast<int>(o.precision)] <= 0)
    throw InputError(
        fmt::format("--precision {}: {} has no such peak; use fp32, tf32, fp16 or "
                    "bf16 where it has one",
                    a.precision, server.name));
  const auto costs = load_cost_sources(a.db);
  say_warnings(costs->warnings);
  o.costs = costs->source();
  const SplitResult r = plan_split_learning(g, server, setup, o);
  const bool shared = setup.shared_uplink_Bps > 0;
  if (format == Format::json) {
    nlohmann::json j = {{"model", g.name},
                        {"file", g.source},
                        {"server", server.name},
                        {"precision", a.precision},
                        {"shared_uplink_Mbps", setup.shared_uplink_Bps * 8 / 1e6},
                        {"cuts", r.cuts},
                        {"best", round_json(r.best)},
                        {"baseline", round_json(r.baseline)}};
    fmt::print("{}\n", json_text(j));
    return;
  }
  fmt::print(
      "{} ({}): {} places to cut; {} devices, server {}, {}{}\n\n", g.name, g.source, r.cuts,
      setup.clients.size(), server.name, a.precision,
      shared ? fmt::format(", shared uplink {:.0f} Mb/s", setup.shared_uplink_Bps * 8 / 1e6) : "");
  fmt::print("{}: round {:.3f} s\n{}\n", r.best.method, r.best.round_s,
             round_table(r.best, shared));
  if (!r.baseline.clients.empty())
    fmt::print("{}: round {:.3f} s ({:.2f}x)\n{}", r.baseline.method, r.baseline.round_s,
               r.baseline.round_s / r.best.round_s, round_table(r.baseline, shared));
}

}  // namespace

void add_split_learning_command(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "split-learning",
      "Split an operator graph between edge devices and a server: each device's cut and "
      "uplink share");
  cmd->add_option("--model", a->model, "operator graph FILE.onnx")->required();
  cmd->add_option("--devices", a->devices,
                  "devices file: {\"shared_uplink_Mbps\": ..., \"devices\": [{\"name\", "
                  "\"device\", \"uplink_Mbps\", \"downlink_Mbps\", \"batch\"}, ...]}")
      ->required();
  cmd->add_option("--server", a->server, "the server's catalog device (a GPU)")->required();
  cmd->add_option("--precision", a->precision, "fp32 (default), tf32, fp16 or bf16");
  cmd->add_option("--db", a->db, "price the server's GEMMs from this cost store");
  cmd->add_option("--format", a->format, "text or json");
  cmd->callback([a] { run(*a); });
}

}  // namespace shardcost::cli
