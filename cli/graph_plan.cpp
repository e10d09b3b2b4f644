// estimate and rank of operator graphs (--model FILE.onnx): the layer-wise planner's plans,
// records first and printed last (docs/operator-graphs.md).
#include "graph_plan.h"

#include <fmt/format.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "format.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/layerwise.h"

namespace shardcost::cli {
namespace {

// What a graph's keys say: "NAME,gbs=N[,precision=T]" (estimate --strategy) or
// "[precision=T]" (rank --fix, the batch given by --gbs).
struct Keys {
  std::string name;
  int gbs = 0;
  std::optional<DType> precision;
};
Keys parse_keys(std::string_view text, bool named) {
  Keys k;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item(text.substr(start, end - start));
    start = end + 1;
    if (item.empty()) continue;
    if (item.rfind("precision=", 0) == 0) {
      k.precision = parse_dtype(item.substr(10));
    } else if (named && item.rfind("gbs=", 0) == 0) {
      const auto [ptr, ec] = std::from_chars(item.data() + 4, item.data() + item.size(), k.gbs);
      if (ec != std::errc() || ptr != item.data() + item.size() || k.gbs < 1)
        throw InputError(fmt::format("--strategy {}: gbs must be a positive whole number", item));
    } else if (named && k.name.empty() && item.find('=') == std::string::npos) {
      k.name = item;
    } else {
      throw InputError(fmt::format(
          "'{}': operator graphs take {}precision=fp32|tf32|fp16|bf16 (tp, pp, dp and the other "
          "keys are transformer strategies)",
          item,
          named ? "a strategy name (data, spatial, filter, channel, pipeline, data+spatial, "
                  "data+filter, data+channel, data+pipeline), gbs= and "
                : ""));
    }
  }
  if (named && k.gbs < 1)
    throw InputError("--strategy: give the global batch, e.g. \"data,gbs=256\"");
  if (named && k.name.empty())
    throw InputError("--strategy: name a uniform strategy, e.g. data or data+filter");
  return k;
}

LayerwiseOptions layerwise_options(const GraphArgs& a, const Cluster& c,
                                   std::optional<DType> precision) {
  const Software sw = software_preset(a.software);
  Strategy st;
  st.precision = precision;
  std::string why;
  const auto type = resolved_precision(st, sw, c.groups.at(0).device, &why);
  if (!type) throw InputError(why);
  if (is_quantized(*type))
    throw InputError(
        fmt::format("precision={} is priced for transformers; use fp32, tf32, fp16 "
                    "or bf16",
                    to_string(*type)));
  LayerwiseOptions o;
  o.precision = *type;
  o.global_batch = a.global_batch;
  o.epoch_samples = a.epoch_samples;
  o.optimizer = a.optimizer;
  o.costs = a.costs;
  o.overlap_grad_reduce = sw.overlap_grad_reduce;
  if (sw.grad_bucket_params > 0) o.grad_bucket_bytes = sw.grad_bucket_params * 4;
  return o;
}

std::string header(const OpGraph& g, const Cluster& c, const GraphArgs& a,
                   const LayerwiseOptions& o) {
  std::string out = fmt::format(
      "{} ({}): {:.1f}M parameters, {:.2f} GFLOP per sample forward, {} operators\n", g.name,
      g.source, g.parameters() / 1e6, g.flops_per_sample() / 1e9, g.nodes.size());
  const NodeGroup& grp = c.groups.at(0);
  out += fmt::format("{} GPUs: {} node{} x {} {}; global batch {}, {}, software {}\n",
                     c.total_gpus(), grp.nodes, grp.nodes == 1 ? "" : "s", grp.gpus_per_node,
                     grp.device.name, o.global_batch, to_string(o.precision), a.software);
  for (const auto& [op, n] : g.unknown_ops())
    out += fmt::format("note: {} x {} not known to shardcost, priced as memory passes\n", n, op);
  for (const std::string& note : g.notes) out += fmt::format("note: {}\n", note);
  return out;
}

std::string plans_table(const std::vector<const GraphPlan*>& plans, bool epoch) {
  std::vector<std::string> h{"#",      "strategy",  "step s", "samples/s", "compute s",
                             "comm s", "reshard s", "sync s", "bubble s",  "GiB"};
  std::vector<bool> right{true, false, true, true, true, true, true, true, true, true};
  if (epoch) h.insert(h.begin() + 3, "epoch s"), right.insert(right.begin() + 3, true);
  Table t(h, right);
  int i = 0;
  for (const GraphPlan* p : plans) {
    std::vector<std::string> row{std::to_string(++i),
                                 p->strategy,
                                 p->feasible ? fmt::format("{:.4f}", p->step_s) : "-",
                                 p->feasible ? fmt::format("{:.0f}", p->samples_per_s) : "-",
                                 fmt::format("{:.4f}", p->compute_s),
                                 fmt::format("{:.4f}", p->comm_s),
                                 fmt::format("{:.4f}", p->reshard_s),
                                 fmt::format("{:.4f}", p->sync_exposed_s),
                                 fmt::format("{:.4f}", p->bubble_s),
                                 fmt::format("{:.2f}", p->memory_bytes / kGiB)};
    if (epoch) row.insert(row.begin() + 3, p->feasible ? fmt::format("{:.0f}", p->epoch_s) : "-");
    t.add(row);
  }
  std::string out = t.render();
  for (const GraphPlan* p : plans)
    if (!p->feasible) out += fmt::format("  {}: {}\n", p->strategy, p->reason);
  return out;
}

// Runs of consecutive operators with one split: "1-49 conv_2 .. relu_98  s64".
std::string splits_text(const GraphPlan& p) {
  std::string out;
  if (p.stages > 1)
    return fmt::format("  {} stages, {} micro-batches (each stage data-parallel)\n", p.stages,
                       p.micro_batches);
  size_t i = 0;
  while (i < p.layers.size()) {
    size_t j = i;
    while (j + 1 < p.layers.size() && p.layers[j + 1].split == p.layers[i].split) ++j;
    out += fmt::format(
        "  {:>9}  {:<40} {}\n",
        i == j ? fmt::format("{}", i + 1) : fmt::format("{}-{}", i + 1, j + 1),
        i == j ? p.layers[i].node : fmt::format("{} .. {}", p.layers[i].node, p.layers[j].node),
        to_string(p.layers[i].split));
    i = j + 1;
  }
  return out;
}

nlohmann::json plan_json(const GraphPlan& p) {
  nlohmann::json j = {{"strategy", p.strategy},   {"feasible", p.feasible},
                      {"step_time_s", p.step_s},  {"samples_per_s", p.samples_per_s},
                      {"compute_s", p.compute_s}, {"comm_s", p.comm_s},
                      {"reshard_s", p.reshard_s}, {"sync_exposed_s", p.sync_exposed_s},
                      {"bubble_s", p.bubble_s},   {"memory_per_gpu_bytes", p.memory_bytes},
                      {"stages", p.stages},       {"micro_batches", p.micro_batches}};
  if (p.epoch_s > 0) j["epoch_s"] = p.epoch_s;
  if (!p.feasible) j["reason"] = p.reason;
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerCost& l : p.layers)
    layers.push_back({{"node", l.node},
                      {"op", l.op},
                      {"split",
                       {{"sample", l.split.sample},
                        {"spatial", l.split.spatial},
                        {"filter", l.split.filter},
                        {"channel", l.split.channel},
                        {"replicas", l.split.replicas}}},
                      {"compute_s", l.compute_s},
                      {"comm_s", l.comm_s},
                      {"reshard_s", l.reshard_s}});
  j["operators"] = layers;
  return j;
}

nlohmann::json inputs_json(const OpGraph& g, const Cluster& c, const GraphArgs& a,
                           const LayerwiseOptions& o) {
  nlohmann::json unknown = nlohmann::json::object();
  for (const auto& [op, n] : g.unknown_ops()) unknown[op] = n;
  return {{"model", g.name},
          {"notes", g.notes},
          {"file", g.source},
          {"parameters", g.parameters()},
          {"flops_per_sample", g.flops_per_sample()},
          {"cluster", c.name},
          {"gpus", c.total_gpus()},
          {"global_batch", o.global_batch},
          {"precision", std::string(to_string(o.precision))},
          {"software", a.software},
          {"unknown_operators", unknown}};
}

}  // namespace

void run_graph_estimate(const GraphArgs& given, const std::string& strategy_text) {
  const Format format = parse_format(given.format, {Format::text, Format::json});
  const Keys keys = parse_keys(strategy_text, true);
  GraphArgs a = given;
  a.global_batch = keys.gbs;
  const OpGraph g = load_onnx(a.model);
  const Cluster c = load_cluster(a.cluster, a.gpus);
  const LayerwiseOptions o = layerwise_options(a, c, keys.precision);
  const GraphPlan p = price_uniform(g, c, o, keys.name);
  if (format == Format::json) {
    nlohmann::json j = inputs_json(g, c, a, o);
    j["plan"] = plan_json(p);
    fmt::print("{}\n", json_text(j));
  } else {
    fmt::print("{}\n{}\nsplit per operator\n{}", header(g, c, a, o),
               plans_table({&p}, o.epoch_samples > 0), splits_text(p));
  }
  if (!p.feasible) {
    std::fflush(stdout);
    fmt::print(stderr, "shardcost: the strategy does not fit: {}\n", p.reason);
    throw ExitStatus{1};
  }
}

void run_graph_rank(const GraphArgs& a, const std::string& fixed, int top) {
  const Format format = parse_format(a.format, {Format::text, Format::json});
  const OpGraph g = load_onnx(a.model);
  const Cluster c = load_cluster(a.cluster, a.gpus);
  const LayerwiseOptions o = layerwise_options(a, c, parse_keys(fixed, false).precision);
  const LayerwiseResult r = plan_layerwise(g, c, o);
  std::vector<const GraphPlan*> plans{&r.best};
  for (const GraphPlan& u : r.uniform)
    if (static_cast<int>(plans.size()) < std::max(1, top)) plans.push_back(&u);
  if (format == Format::json) {
    nlohmann::json j = inputs_json(g, c, a, o);
    j["configurations"] = r.configurations;
    j["elapsed_s"] = r.elapsed_s;
    j["best"] = plan_json(r.best);
    j["uniform"] = nlohmann::json::array();
    for (const GraphPlan& u : r.uniform) j["uniform"].push_back(plan_json(u));
    fmt::print("{}\n", json_text(j));
  } else {
    fmt::print(
        "{}layer-wise search: {} operator splits priced\n\n{}\nbest layer-wise plan, "
        "split per operator (s sample, h spatial, f filter, c channel, r replicas)\n{}",
        header(g, c, a, o), thousands(static_cast<double>(r.configurations)),
        plans_table(plans, o.epoch_samples > 0), splits_text(r.best));
  }
  if (!r.best.feasible) {
    std::fflush(stdout);
    fmt::print(stderr, "shardcost: no plan fits {} on {} GPUs: {}\n", g.name, c.total_gpus(),
               r.best.reason);
    throw ExitStatus{1};
  }
}

}  // namespace shardcost::cli
