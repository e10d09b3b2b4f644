// estimate and rank of operator graphs (--model FILE.onnx) as text: the layer-wise planner's
// plans (docs/operator-graphs.md); the report and its JSON come from shardcost/request.h.
#include "graph_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "format.h"

namespace shardcost::cli {
namespace {

std::string header(const OpGraph& g, const Cluster& c, const std::string& software,
                   const LayerwiseOptions& o) {
  std::string out = fmt::format(
      "{} ({}): {:.1f}M parameters, {:.2f} GFLOP per sample forward, {} operators\n", g.name,
      g.source, g.parameters() / 1e6, g.flops_per_sample() / 1e9, g.nodes.size());
  const NodeGroup& grp = c.groups.at(0);
  std::string precision(to_string(o.precision));
  // fp32 on a part with TF32 tensor cores: what the stack runs each kind of GEMM as.
  if (o.precision == DType::fp32 && grp.device.peak_flops[static_cast<int>(DType::tf32)] > 0)
    precision += fmt::format(" (convolutions {}, matmuls {})", o.tf32_conv ? "on TF32" : "in fp32",
                             o.tf32_matmul ? "on TF32" : "in fp32");
  out += fmt::format("{} GPUs: {} node{} x {} {}; global batch {}, {}, software {}\n",
                     c.total_gpus(), grp.nodes, grp.nodes == 1 ? "" : "s", grp.gpus_per_node,
                     grp.device.name, o.global_batch, precision, software);
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
  // The GPU waiting for the host's launches: said where a plan does.
  const bool host = std::any_of(plans.begin(), plans.end(),
                                [](const GraphPlan* p) { return p->host_launch_s > 0; });
  if (host) h.insert(h.end() - 1, "host s"), right.push_back(true);
  // --data-loading: what each plan waits for its loaders (in step s too).
  const bool input = std::any_of(plans.begin(), plans.end(),
                                 [](const GraphPlan* p) { return p->input.has_value(); });
  if (input) h.emplace_back("input wait s"), right.push_back(true);
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
    if (host) row.insert(row.end() - 1, fmt::format("{:.4f}", p->host_launch_s));
    if (input) row.push_back(p->input ? fmt::format("{:.4f}", p->input->wait_s) : "-");
    t.add(row);
  }
  std::string out = t.render();
  for (const GraphPlan* p : plans)
    if (!p->feasible) out += fmt::format("  {}: {}\n", p->strategy, p->reason);
  if (input && plans.front()->input) {
    const InputBudget& b = *plans.front()->input;
    out += fmt::format(
        "input of plan 1: {} loader{} ({} core{} x {:g} samples/s each), {:g} samples each per "
        "step: "
        "{:.4f} s; {}\n",
        b.loaders, b.loaders == 1 ? "" : "s", b.loading.cores_per_rank,
        b.loading.cores_per_rank == 1 ? "" : "s", b.loading.samples_per_s_per_core,
        b.samples_per_loader, b.load_s,
        b.input_bound()
            ? fmt::format("input-bound ({:.1f} cores per loader would keep up)", b.cores_to_keep_up)
            : fmt::format("keeps up ({:.1f} cores per loader would do)", b.cores_to_keep_up));
  }
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

}  // namespace

std::string graph_estimate_text(const GraphReport& r, const Cluster& c,
                                const std::string& software) {
  const LayerwiseOptions& o = r.options;
  return fmt::format("{}\n{}\nsplit per operator\n{}", header(r.graph, c, software, o),
                     plans_table({&*r.plan}, o.epoch_samples > 0), splits_text(*r.plan));
}

std::string graph_rank_text(const GraphReport& r, const Cluster& c, const std::string& software) {
  const LayerwiseOptions& o = r.options;
  const LayerwiseResult& s = *r.search;
  std::vector<const GraphPlan*> plans{&s.best};
  for (const GraphPlan& u : s.uniform)
    if (static_cast<int>(plans.size()) < std::max(1, r.top)) plans.push_back(&u);
  return fmt::format(
      "{}layer-wise search: {} operator splits priced\n\n{}\nbest layer-wise plan, "
      "split per operator (s sample, h spatial, f filter, c channel, r replicas)\n{}",
      header(r.graph, c, software, o), thousands(static_cast<double>(s.configurations)),
      plans_table(plans, o.epoch_samples > 0), splits_text(s.best));
}

}  // namespace shardcost::cli
