// report: the store as one self-contained HTML page of plots (and, given a model and a
// cluster, the ranked strategies priced from the store).
#include <fmt/format.h>

#include <fstream>

#include "commands.h"
#include "format.h"
#include "output_file.h"
#include "report_html.h"
#include "shardcost/db.h"
#include "shardcost/error.h"
#include "shardcost/learned.h"
#include "shardcost/request.h"
#include "shardcost/varlen.h"
#include "varlen_print.h"

namespace shardcost::cli {
namespace {

// The store's rows, each table read once and only when a model needs it.
class StorePoints {
 public:
  explicit StorePoints(const db::Store& s) : store_(s) {}
  const std::vector<db::GemmPoint>& gemm() {
    return once(gemm_, [&] { return store_.gemm_points(); });
  }
  const std::vector<db::CollectivePoint>& collective() {
    return once(collective_, [&] { return store_.collective_points(); });
  }
  const std::vector<db::MemoryPoint>& memory() {
    return once(memory_, [&] { return store_.memory_points(); });
  }
  const std::vector<db::KernelPoint>& kernels() {
    return once(kernels_, [&] { return store_.kernel_points(); });
  }

 private:
  template <class T, class Read>
  static const T& once(std::optional<T>& slot, Read read) {
    if (!slot) slot = read();
    return *slot;
  }
  const db::Store& store_;
  std::optional<std::vector<db::GemmPoint>> gemm_;
  std::optional<std::vector<db::CollectivePoint>> collective_;
  std::optional<std::vector<db::MemoryPoint>> memory_;
  std::optional<std::vector<db::KernelPoint>> kernels_;
};

// A fitted model's held-out predictions (its first cross-validation's), or else its predictions
// for the rows it was fitted on (nullopt: neither, a pooled prior of an older record).
std::optional<FittedModelPlot> fitted_plot(const FitReport& m, const LearnedCosts& learned,
                                           StorePoints& store) {
  FittedModelPlot plot{m, {}};
  // What the model predicted for rows it had not seen, where its record keeps them.
  if (!m.cross_validation.empty() && !m.cross_validation.front().held_out.empty()) {
    plot.measured_predicted_s = m.cross_validation.front().held_out;
    plot.held_out = true;
    return plot;
  }
  // Kernel and memory models may be of a device the catalog lacks (a host CPU).
  const bool catalog = m.kind != "kernel_classes" && m.kind != "memory_curve";
  Device device = catalog ? find_device(m.device) : Device{};
  device.name = m.device;
  if (m.kind == "gemm_efficiency") {
    const DType dtype = parse_dtype(m.key);
    for (const auto& g : store.gemm()) {
      if (parse_store_dtype(g.dtype) != dtype || !same_device_name(g.device, m.device)) continue;
      if (const auto priced = learned.gemm(device, dtype, {g.m, g.n, g.k, g.batch}))
        plot.measured_predicted_s.emplace_back(g.time_ns * 1e-9, priced->seconds);
    }
  } else if (m.kind == "collective_curves") {  // key: "op level" or "op inter_node N/node"
    const size_t space = m.key.find(' ');
    const auto op = parse_collective_op(m.key.substr(0, space));
    const size_t end = space == std::string::npos ? space : m.key.find(' ', space + 1);
    const std::string level_name =
        space == std::string::npos ? "" : m.key.substr(space + 1, end - space - 1);
    const FabricLevel level =
        level_name == "inter_node" ? FabricLevel::inter_node : FabricLevel::intra_node;
    for (const auto& c : store.collective()) {
      if (parse_collective_op(c.op) != op || c.fabric_level != level_name ||
          !same_device_name(c.device, m.device))
        continue;
      if (const auto priced = learned.collective(device, *op, static_cast<double>(c.bytes),
                                                 GroupShape::measured(c.ranks, c.nodes, level)))
        plot.measured_predicted_s.emplace_back(c.time_ns * 1e-9, priced->seconds);
    }
  } else if (m.kind == "memory_curve") {
    for (const auto& p : store.memory()) {
      if (p.kind != m.key || !same_device_name(p.device, m.device)) continue;
      if (const auto priced = learned.memory(device, p.kind, static_cast<double>(p.bytes)))
        plot.measured_predicted_s.emplace_back(p.time_ns * 1e-9, priced->seconds);
    }
  } else if (m.kind == "kernel_classes") {  // each launch by its class's fit, not looked up
    for (const auto& k : store.kernels()) {
      if (k.device != m.device && !same_device_name(k.device, m.device)) continue;
      if (const auto priced = learned.kernel(k.device, k.name, k.launch.threads(), false))
        plot.measured_predicted_s.emplace_back(k.mean_ns * 1e-9, priced->seconds);
    }
  } else {
    return std::nullopt;
  }
  return plot;
}

}  // namespace

void add_report_command(CLI::App& app) {
  struct Args {
    std::string db, out = "report.html", model, cluster, strategy;
    int gpus = 0, gbs = 0, top = 300;
    VarlenRequest varlen;
  };
  auto a = std::make_shared<Args>();
  auto* cmd =
      app.add_subcommand("report", "Write one self-contained HTML page of plots of a cost store");
  cmd->add_option("--db", a->db, "store file")->required();
  cmd->add_option("--output,-o,--out", a->out, "HTML file to write (default report.html)");
  cmd->add_option("--model", a->model,
                  "also rank strategies for this model (catalog name or JSON file)");
  cmd->add_option("--cluster", a->cluster, "... on this cluster (catalog name or JSON file)");
  cmd->add_option("--gpus", a->gpus, "... of this many GPUs (default: the whole cluster)");
  cmd->add_option("--gbs", a->gbs, "... with this global batch (sequences)");
  cmd->add_option("--top", a->top, "strategies to draw (default 300)");
  cmd->add_option(
      "--strategy", a->strategy,
      "with --model, --cluster and --seq-lengths (or --seq-dist): the plan whose predicted step "
      "times are drawn beside the store's measured steps");
  add_varlen_options(cmd, a->varlen);
  cmd->callback([a] {
    check_output_path(a->out, "--output");
    if (a->model.empty() != a->cluster.empty())
      throw InputError(
          "--model and --cluster go together; give both to plot ranked strategies, or neither");
    if (a->strategy.empty() != !a->varlen.given())
      throw InputError(
          "--strategy and --seq-lengths (or --seq-dist) go together: the plan to predict step "
          "times for "
          "and the data it runs on");
    if (!a->strategy.empty() && a->model.empty())
      throw InputError("--strategy needs --model and --cluster");
    if (!a->model.empty() && a->strategy.empty() && a->gbs <= 0)
      throw InputError("--gbs is required with --model; give the global batch, e.g. --gbs 512");
    if (a->top < 1) throw InputError("--top must be at least 1");
    const db::Store store = db::Store::open(a->db, db::Store::Mode::read_only);
    ReportInputs in;
    in.info = store.info();
    in.gemm = store.table("gemm");
    in.memory = store.table("memory");
    in.collective = store.table("collective");
    in.kernels = store.table("kernels");
    in.steps = store.step_points();
    in.schedules = store.job_schedules();
    in.calibrations = load_step_calibrations(a->db);
    // Each fitted model against the rows it was fitted on (predicted by the model, not looked
    // up: the store's own sources would answer with the measurement).
    // The store's costs, read once: the fitted models' plots and the ranked and predicted plans
    // below all price from them.
    const auto costs = load_cost_sources(a->db);
    say_warnings(costs->warnings);
    const LearnedCosts& learned = *costs->learned;
    StorePoints points(store);
    for (const auto& m : learned.describe())
      if (auto plot = fitted_plot(m, learned, points)) in.models.push_back(std::move(*plot));
    // With --model: the plans ranked and the plan's steps predicted, as rank and estimate
    // price them from the store.
    PlanRequest request;
    request.model = a->model;
    request.cluster = a->cluster;
    if (a->gpus > 0) request.gpus = a->gpus;
    request.db = a->db;
    if (!a->strategy.empty()) {
      PlanRequest q = request;
      q.strategy = a->strategy;
      q.varlen = a->varlen;
      const EstimateReport e = run_estimate(q, costs.get());
      PredictedSteps p{
          fmt::format("{} on {}, {}", e.model.name, e.cluster.name, to_string(e.plan.strategy)),
          e.varlen->step_times_s,
          {}};
      std::mt19937_64 rng(e.varlen_options->seed);
      for (int i = 0; i < 100000; ++i) p.lengths.push_back(e.varlen_options->lengths.draw(rng));
      in.predicted = std::move(p);
    }
    if (!a->model.empty() && a->gbs > 0) {
      PlanRequest q = request;
      q.command = "rank";
      q.gbs = a->gbs;
      q.top = a->top;
      const RankReport r = run_rank(q, costs.get());
      RankedPlans p;
      p.model = r.model.name;
      p.cluster = r.cluster.name;
      p.gpus = r.cluster.total_gpus();
      p.global_batch = a->gbs;
      p.capacity_bytes = r.cluster.groups.front().device.memory_bytes;
      p.result = *r.fixed;
      in.plans = std::move(p);
    }
    const std::string html = report_html(in);
    write_whole(a->out, html);
    fmt::print("{}: report of {} runs ({} KiB)\n", a->out, in.info.runs.size(),
               (html.size() + 1023) / 1024);
  });
}

}  // namespace shardcost::cli
