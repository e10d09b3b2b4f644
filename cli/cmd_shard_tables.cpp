// shard-tables: embedding tables sharded over a cluster's GPUs, the search's plan beside
// TorchRec's greedy baseline.
#include <fmt/format.h>

#include <limits>
#include <memory>
#include <optional>

#include "commands.h"
#include "format.h"
#include "plan_args.h"
#include "predict_inputs.h"
#include "progress.h"
#include "shardcost/error.h"
#include "shardcost/planner_requests.h"

namespace shardcost::cli {
namespace {

struct ShardArgs {
  ShardTablesRequest request;
  std::vector<std::string> dense_mlps;  // "13,512,256,128" each
  std::string format = "text";
};

std::vector<std::string> plan_row(const std::string& name, const ShardingPlan& p) {
  std::vector<std::string> row{name,
                               fmt::format("{:.3f}", 1e3 * p.step_s),
                               fmt::format("{:.3f}", 1e3 * p.slowest_compute_s),
                               fmt::format("{:.3f}", 1e3 * p.mean_compute_s),
                               fmt::format("{:.3f}", p.balance()),
                               fmt::format("{:.3f}", 1e3 * p.comm_s)};
  for (ShardingType t :
       {ShardingType::table_wise, ShardingType::column_wise, ShardingType::row_wise,
        ShardingType::table_row_wise, ShardingType::data_parallel})
    row.push_back(std::to_string(p.count(t)));
  return row;
}

}  // namespace

void add_shard_tables_command(CLI::App& app) {
  auto a = std::make_shared<ShardArgs>();
  auto* cmd = app.add_subcommand(
      "shard-tables", "Shard embedding tables over a cluster's GPUs (TorchRec's sharding types)");
  ShardTablesRequest& q = a->request;
  cmd->add_option("--tables", q.tables, "tables file: JSON or CSV (docs/embeddings.md)");
  cmd->add_option("--cluster", q.cluster, "catalog system name or cluster JSON file");
  cmd->add_option("--gpus", q.gpus, "GPU count of the cluster (whole nodes)");
  cmd->add_option("--batch", q.batch, "global batch, samples");
  cmd->add_option("--optimizer", q.optimizer, "rowwise_adagrad (default), adam or sgd");
  cmd->add_option("--beam", q.beam, "partial plans the search keeps (default 8)");
  cmd->add_option("--dense-mlp", a->dense_mlps,
                  "a dense MLP on every GPU, its layer widths (DLRM's bottom 13,512,256,128, top "
                  "479,1024,1024,512,256,1); repeatable");
  cmd->add_option("--dense-precision", q.dense_precision, "fp32 (default), tf32 or bf16");
  cmd->add_option("--format", a->format, "text or json");
  cmd->add_option("--db", q.db,
                  "price from this store's measurements and models: fitted embedding lookups (fit "
                  "--table embedding), else its memory read bandwidth; collectives");
  auto request_file = std::make_shared<std::string>();
  cmd->add_option("--request", *request_file,
                  "run a saved request (JSON, {\"command\": \"shard-tables\", ...}; "
                  "docs/python.md): options given beside it replace its keys");
  cmd->callback([a, request_file, cmd] {
    const Format format = parse_format(a->format, {Format::text, Format::json});
    ShardTablesRequest request = a->request;
    for (const auto& spec : a->dense_mlps) {
      std::vector<int> widths;
      for (const auto& w : split_commas(spec)) {
        const int64_t width = positive_int(w, "--dense-mlp");
        if (width > std::numeric_limits<int>::max())
          throw InputError(fmt::format("--dense-mlp {}: a layer width of {}; give at most {}", spec,
                                       width, std::numeric_limits<int>::max()));
        widths.push_back(static_cast<int>(width));
      }
      request.dense_mlps.push_back(widths);
    }
    if (request_file->empty())
      require_options({{"--tables", !request.tables.empty()},
                       {"--cluster", !request.cluster.empty()},
                       {"--batch", cmd->get_option("--batch")->count() > 0}});
    else
      request =
          shard_tables_request_from_json(planner_request(*cmd, *request_file, to_json(request)),
                                         fmt::format("'{}'", *request_file));
    request.progress = progress_lines("shard-tables");
    const ShardTablesReport rep = run_shard_tables(request);
    say_warnings(rep.warnings);
    if (format == Format::json) {
      fmt::print("{}\n", json_text(to_json(rep)));
      return;
    }
    const ShardingResult& r = rep.result;
    const ShardingOptions& o = rep.options;
    const auto& tables = rep.tables;
    const Cluster& c = rep.cluster;
    // Every table once (a data-parallel one is on every GPU).
    double bytes = 0;
    for (const TablePlacement& t : r.plan.tables)
      bytes += t.type == ShardingType::data_parallel
                   ? t.memory_bytes / static_cast<double>(t.gpus.size())
                   : t.memory_bytes;
    fmt::print("{} tables ({:.1f} GiB with optimizer state) on {} ({} GPUs), batch {}, {}\n",
               tables.size(), bytes / kGiB, c.name, c.total_gpus(), request.batch,
               request.optimizer);
    fmt::print("search: beam {}, {} candidates; lookups priced by the {}\n\n", o.beam,
               thousands(static_cast<double>(r.evaluated)),
               r.lookup_costs == "catalog" ? "catalog's streaming rate"
               : r.lookup_costs == "store read bandwidth"
                   ? "store's measured read bandwidth"
                   : fmt::format("store's fitted lookup model ({})", r.lookup_costs));
    if (!o.dense_mlps.empty())
      fmt::print(
          "dense part: {} MLP{}, {:.2f} M parameters, {:.2f} GiB on every GPU; {:.3f} ms of "
          "GEMMs and a {:.3f} ms gradient all-reduce in each plan's step\n\n",
          o.dense_mlps.size(), o.dense_mlps.size() == 1 ? "" : "s", r.dense.parameters / 1e6,
          r.dense.memory_bytes / kGiB, 1e3 * r.dense.compute_s, 1e3 * r.dense.all_reduce_s);
    Table t({"plan", "step ms", "slowest ms", "mean ms", "balance", "comm ms", "table-wise",
             "column-wise", "row-wise", "table-row-wise", "data-parallel"},
            {false, true, true, true, true, true, true, true, true, true, true});
    t.add(plan_row("search", r.plan));
    if (r.greedy_failed.empty()) t.add(plan_row("greedy (TorchRec)", r.greedy));
    fmt::print("{}", t.render());
    if (r.greedy_failed.empty())
      fmt::print("\nthe search's step is {:.1f} % shorter than the greedy one's\n\n",
                 100 * (1 - r.plan.step_s / r.greedy.step_s));
    else
      fmt::print("\nthe greedy baseline finds no room for table '{}'; the search's plan fits\n\n",
                 r.greedy_failed);
    Table g({"gpu", "shards", "compute ms", "memory GiB", "sends MiB"},
            {true, true, true, true, true});
    for (size_t i = 0; i < r.plan.gpus.size(); ++i) {
      const GpuLoad& l = r.plan.gpus[i];
      g.add({std::to_string(i), std::to_string(l.shards), fmt::format("{:.3f}", 1e3 * l.compute_s),
             fmt::format("{:.2f}", l.memory_bytes / kGiB),
             fmt::format("{:.1f}", l.send_bytes / (1 << 20))});
    }
    fmt::print("{}", g.render());
    std::fflush(stdout);
    fmt::print(stderr, "planned in {:.2f} s\n", r.elapsed_s);
  });
}

}  // namespace shardcost::cli
