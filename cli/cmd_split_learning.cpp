// split-learning: per-device cuts of an operator graph and uplink shares for parallel split
// learning at the edge (docs/operator-graphs.md).
#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "format.h"
#include "plan_args.h"
#include "shardcost/error.h"
#include "shardcost/planner_requests.h"

namespace shardcost::cli {
namespace {

std::string round_table(const SplitRound& r, bool shared, bool inference) {
  std::vector<std::string> h{"device",
                             "kind",
                             "cut",
                             "after",
                             inference ? "up MB" : "smashed MB",
                             "share",
                             "device s",
                             "upload s",
                             "wait s",
                             "server s",
                             "download s",
                             inference ? "latency s" : "finish s"};
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

void render(const SplitLearningReport& rep, Format format) {
  const OpGraph& g = rep.graph;
  const SplitSetup& setup = rep.setup;
  const SplitResult& r = rep.result;
  for (const std::string& note : g.notes)
    fmt::print(stderr, "shardcost: note: {}: {}\n", g.source, note);
  say_warnings(rep.warnings);
  if (format == Format::json) {
    fmt::print("{}\n", json_text(to_json(rep)));
    return;
  }
  const bool shared = setup.shared_uplink_Bps > 0;
  fmt::print(
      "{} ({}): {} places to cut; {} devices, server {}, {}{}\n\n", g.name, g.source, r.cuts,
      setup.clients.size(), rep.server.name, rep.request.precision,
      shared ? fmt::format(", shared uplink {:.0f} Mb/s", setup.shared_uplink_Bps * 8 / 1e6) : "");
  const bool inference = rep.request.inference;
  auto head = [&](const SplitRound& round) {
    if (!inference) return fmt::format("round {:.3f} s", round.round_s);
    return fmt::format(
        "a request batch on every device {:.3f} s end to end; {:.1f} samples/s with batches "
        "pipelined",
        round.round_s, round.samples_per_s);
  };
  fmt::print("{}: {}\n{}\n", r.best.method, head(r.best), round_table(r.best, shared, inference));
  if (!r.baseline.clients.empty())
    fmt::print("{}: {} ({:.2f}x)\n{}", r.baseline.method, head(r.baseline),
               r.baseline.round_s / r.best.round_s, round_table(r.baseline, shared, inference));
  if (inference)
    fmt::print(
        "\ninference: one forward pass per request batch; up MB: the cut's activation (the raw "
        "input where all runs on the server), download: the output (nothing where all runs on "
        "the device)\n");
}

}  // namespace

void add_split_learning_command(CLI::App& app) {
  auto a = std::make_shared<SplitLearningRequest>();
  auto format = std::make_shared<std::string>("text");
  auto* cmd = app.add_subcommand(
      "split-learning",
      "Split an operator graph between edge devices and a server: each device's cut and "
      "uplink share");
  cmd->add_option("--model", a->model, "operator graph FILE.onnx");
  cmd->add_option("--devices", a->devices,
                  "devices file: {\"shared_uplink_Mbps\": ..., \"devices\": [{\"name\", "
                  "\"device\", \"uplink_Mbps\", \"downlink_Mbps\", \"batch\"}, ...]}");
  cmd->add_option("--server", a->server, "the server's catalog device (a GPU)");
  cmd->add_option("--precision", a->precision, "fp32 (default), tf32, fp16 or bf16");
  cmd->add_option("--db", a->db, "price the server's GEMMs from this cost store");
  cmd->add_option("--format", *format, "text or json");
  cmd->add_flag("--inference", a->inference,
                "price inference instead of training: a forward pass per request batch (latency "
                "end to end, throughput pipelined), the cuts including all on the device and all "
                "on the server");
  auto request_file = std::make_shared<std::string>();
  cmd->add_option("--request", *request_file,
                  "run a saved request (JSON, {\"command\": \"split-learning\", ...}; "
                  "docs/python.md): options given beside it replace its keys");
  cmd->callback([a, format, request_file, cmd] {
    const Format f = parse_format(*format, {Format::text, Format::json});
    if (request_file->empty()) {
      require_options({{"--model", !a->model.empty()},
                       {"--devices", !a->devices.empty()},
                       {"--server", !a->server.empty()}});
      render(run_split_learning(*a), f);
      return;
    }
    render(
        run_split_learning(split_learning_request_from_json(
            planner_request(*cmd, *request_file, to_json(*a)), fmt::format("'{}'", *request_file))),
        f);
  });
}

}  // namespace shardcost::cli
