// predict: price single GEMMs, collectives and memory operations on one device, from the
// store's measurements where it has them and the catalog elsewhere, each row with its source.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "commands.h"
#include "format.h"
#include "predict_inputs.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/learned.h"
#include "shardcost/predict.h"
#include "shardcost/profiler.h"
#include "shardcost/request.h"
#include "shardcost/store_costs.h"

namespace shardcost::cli {
namespace {

struct PredictArgs {
  std::string device;
  std::string db;
  std::string format = "text";
  // gemm
  std::vector<std::string> shapes;
  std::string shapes_file;
  std::string dtype = "bf16";
  // collective, memory
  std::string op;
  int ranks = 0;
  int nodes = 1;
  std::string begin, end, factor = "2";
  std::string sizes_file;
  std::string cluster;
  // embedding
  EmbeddingGrid grid{"", "", "1", "", "0", ""};
  std::string passes = "forward,backward", optimizer = "rowwise_adagrad";
};

struct Row {
  std::vector<std::string> inputs;  // as the header names them
  double seconds = 0;
  CostOrigin origin = CostOrigin::catalog;
  std::optional<PriceBasis> basis;  // collectives: what the answer rests on
};

// A column's name as a CSV header or JSON key: "per node" is per_node.
std::string key_of(std::string name) {
  std::replace(name.begin(), name.end(), ' ', '_');
  return name;
}

std::string percent(double v) {
  return fmt::format("{:.1f}", v * 100);
}

// The sources of one command: the store's, measured before interpolated; the catalog last.
std::unique_ptr<CostSources> load_sources(const PredictArgs& a) {
  auto s = load_cost_sources(a.db);
  say_warnings(s->warnings);
  return s;
}

// The catalog's device, or with --db a device as the store names it (a host CPU).
Predictor predictor_of(const PredictArgs& a, const CostSources& s) {
  try {
    return Predictor(find_device(a.device), std::nullopt, s.source());
  } catch (const InputError&) {
    if (a.db.empty()) throw;
  }
  return Predictor::store_device(a.device, s.source());
}

std::vector<int64_t> sizes_of(const PredictArgs& a) {
  if (!a.sizes_file.empty()) {
    if (!a.begin.empty() || !a.end.empty())
      throw InputError("give sizes once: -b/-e/-f or --sizes FILE.csv");
    return read_sizes_csv(a.sizes_file);
  }
  return size_sweep_of(a.begin, a.end, a.factor, "1M", "1G");
}

void print(const PredictArgs& a, const std::string& what, const std::vector<std::string>& header,
           const std::vector<Row>& rows) {
  const Format format = parse_format(a.format, {Format::text, Format::csv, Format::json});
  const bool bases = !rows.empty() && rows.front().basis;
  if (format == Format::csv) {
    for (const auto& h : header) fmt::print("{},", key_of(h));
    fmt::print("time_ns,source{}\n", bases ? ",basis,cv_split,cv_median,cv_p90" : "");
    for (const auto& r : rows) {
      for (const auto& v : r.inputs) fmt::print("{},", csv_escape(v));
      fmt::print("{:.0f},{}", r.seconds * 1e9, to_string(r.origin));
      if (bases) {
        const PriceBasis& b = *r.basis;
        fmt::print(",{},{}", csv_escape(b.how), csv_escape(b.split));
        if (b.split.empty() || b.held_out == 0)
          fmt::print(",,");
        else
          fmt::print(",{:.4f},{:.4f}", b.median, b.p90);
      }
      fmt::print("\n");
    }
    return;
  }
  if (format == Format::json) {
    nlohmann::json j;
    j["device"] = a.device;
    j["what"] = what;
    j["rows"] = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json row;
      for (size_t i = 0; i < header.size(); ++i) {
        const std::string& v = r.inputs[i];
        const bool number = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
        row[key_of(header[i])] = number ? nlohmann::json(std::stoll(v)) : nlohmann::json(v);
      }
      row["time_ns"] = r.seconds * 1e9;
      row["source"] = std::string(to_string(r.origin));
      if (r.basis) {
        row["basis"] = r.basis->how;
        if (!r.basis->split.empty() && r.basis->held_out > 0)
          row["cross_validation"] = {{"split", r.basis->split},
                                     {"median", r.basis->median},
                                     {"p90", r.basis->p90},
                                     {"held_out", r.basis->held_out}};
      }
      j["rows"].push_back(row);
    }
    fmt::print("{}\n", json_text(j));
    return;
  }
  fmt::print("{} on {}{}\n\n", what, a.device,
             a.db.empty() ? " (catalog)" : ", store " + a.db + " then the catalog");
  std::vector<std::string> cols = header;
  cols.push_back("time us");
  cols.push_back("source");
  std::vector<bool> right(header.size(), true);
  right.push_back(true);
  right.push_back(false);
  // Collectives: each distinct basis once below the table, numbered; a row names its own and,
  // for a learned answer, the cross-validated median / p90 error of its kind.
  std::vector<std::string> notes;
  if (bases) {
    cols.push_back("cv error");
    cols.push_back("basis");
    right.push_back(true);
    right.push_back(true);
  }
  Table t(cols, right);
  for (const auto& r : rows) {
    auto cells = r.inputs;
    cells.push_back(fmt::format("{:.2f}", r.seconds * 1e6));
    cells.push_back(std::string(to_string(r.origin)));
    if (bases) {
      const PriceBasis& b = *r.basis;
      cells.push_back(b.held_out > 0 ? fmt::format("{} / {} %", percent(b.median), percent(b.p90))
                                     : "-");
      std::string note = b.how;
      if (!b.split.empty())
        note += b.held_out > 0 ? fmt::format("; {}: {} % median, {} % p90 over {} points", b.split,
                                             percent(b.median), percent(b.p90), b.held_out)
                               : "; " + b.split;
      auto at = std::find(notes.begin(), notes.end(), note);
      if (at == notes.end()) at = notes.insert(notes.end(), note);
      cells.push_back(fmt::format("[{}]", at - notes.begin() + 1));
    }
    t.add(cells);
  }
  fmt::print("{}", t.render());
  if (!notes.empty()) fmt::print("\n");
  for (size_t i = 0; i < notes.size(); ++i) fmt::print("[{}] {}\n", i + 1, notes[i]);
}

void run_gemm(const PredictArgs& a) {
  const auto sources = load_sources(a);
  const Predictor p = predictor_of(a, *sources);
  const DType dtype = parse_dtype(a.dtype);
  std::vector<GemmShape> shapes;
  for (const auto& s : a.shapes) shapes.push_back(parse_shape(s));
  if (!a.shapes_file.empty())
    for (const auto& s : read_shapes_csv(a.shapes_file)) shapes.push_back(s);
  if (shapes.empty())
    throw InputError("no GEMM shapes: give --shape MxNxK (repeatable) or --shapes FILE.csv");
  std::vector<Row> rows;
  for (const auto& s : shapes) {
    const Priced x = p.gemm(s, dtype);
    rows.push_back({{std::to_string(s.m), std::to_string(s.n), std::to_string(s.k),
                     std::to_string(s.batch), a.dtype},
                    x.seconds,
                    x.origin,
                    std::nullopt});
  }
  print(a, "GEMM", {"m", "n", "k", "batch", "dtype"}, rows);
}

std::optional<Cluster> system_of(const PredictArgs& a) {
  if (!a.cluster.empty()) return load_cluster(a.cluster);
  if (const auto name = catalog_system_for(a.device)) return load_cluster(*name);
  return std::nullopt;
}

void run_collective(const PredictArgs& a) {
  const auto op = parse_collective_op(a.op);
  if (!op)
    throw InputError(
        fmt::format("unknown collective '{}'; use all_reduce, all_gather, "
                    "reduce_scatter, all_to_all, broadcast, reduce or send_recv",
                    a.op));
  const auto sources = load_sources(a);
  const Predictor p(find_device(a.device), system_of(a), sources->source());
  std::vector<Row> rows;
  for (const int64_t bytes : sizes_of(a)) {
    const CollectiveAnswer x = p.collective(*op, static_cast<double>(bytes), a.ranks, a.nodes);
    const std::string per_node = x.most_per_node == x.fewest_per_node
                                     ? std::to_string(x.most_per_node)
                                     : fmt::format("{}-{}", x.fewest_per_node, x.most_per_node);
    rows.push_back(
        {{a.op, std::to_string(a.ranks), std::to_string(a.nodes), per_node, std::to_string(bytes)},
         x.priced.seconds,
         x.priced.origin,
         x.basis});
  }
  print(a, "collective", {"op", "ranks", "nodes", "per node", "bytes"}, rows);
}

void run_memory(const PredictArgs& a) {
  const auto sources = load_sources(a);
  const Predictor p = predictor_of(a, *sources);
  std::vector<Row> rows;
  for (const int64_t bytes : sizes_of(a)) {
    const Priced x = p.memory(a.op, static_cast<double>(bytes));
    rows.push_back({{a.op, std::to_string(bytes)}, x.seconds, x.origin, std::nullopt});
  }
  print(a, "memory", {"op", "bytes"}, rows);
}

// Embedding-bag passes: the store's fitted lookup model of the device (a catalog device, or a
// device as the store names it, such as a host CPU); without one, a catalog device's streaming
// rate over the pass's bytes.
void run_embedding(const PredictArgs& a) {
  const auto sources = load_sources(a);
  const auto catalog = [&]() -> std::optional<Device> {
    try {
      return find_device(a.device);
    } catch (const InputError&) {
      return std::nullopt;
    }
  }();
  if (!catalog && !sources->learned)
    throw InputError(fmt::format(
        "--device {} is not a catalog device; to price a device by its store name give --db "
        "with a fitted lookup model (bench embedding, then fit --table embedding)",
        a.device));
  const int bytes = a.dtype == "fp32" ? 4 : a.dtype == "fp16" || a.dtype == "bf16" ? 2 : 0;
  if (bytes == 0) throw InputError(fmt::format("--dtype {}: give fp32, bf16 or fp16", a.dtype));
  if (a.optimizer != "rowwise_adagrad" && a.optimizer != "sgd" && a.optimizer != "adam")
    throw InputError(fmt::format("--optimizer {}: give rowwise_adagrad, sgd or adam", a.optimizer));
  std::vector<bool> passes;
  for (const auto& p : split_commas(a.passes)) {
    if (p != "forward" && p != "backward")
      throw InputError(fmt::format("--pass {}: give forward, backward or both", p));
    passes.push_back(p == "backward");
  }
  if (a.grid.tables.empty() && (a.grid.rows.empty() || a.grid.dim.empty()))
    throw InputError("give --rows and --dim (lists or ranges), or --tables FILE");
  std::optional<Predictor> p;
  if (catalog) p.emplace(*catalog, std::nullopt, sources->source());
  std::vector<Row> rows;
  for (const auto& s : embedding_grid(a.grid)) {
    for (bool backward : passes) {
      const EmbeddingPass pass{backward,
                               bytes,
                               a.optimizer,
                               static_cast<double>(s.rows),
                               static_cast<double>(s.dim),
                               s.pooling,
                               static_cast<double>(s.batch),
                               s.zipf,
                               s.histogram};
      Priced x;
      if (p) {
        x = p->embedding(pass);
      } else if (auto priced = sources->learned->embedding(std::string_view(a.device), pass)) {
        x = priced->priced;
      } else {
        throw InputError(fmt::format(
            "{} has no fitted {} lookup model of '{}' ({} weights{}); run bench embedding on it, "
            "then fit --table embedding",
            a.db, backward ? "backward" : "forward", a.device, a.dtype,
            backward ? ", " + a.optimizer : ""));
      }
      rows.push_back(
          {{backward ? "backward" : "forward", std::to_string(s.rows), std::to_string(s.dim),
            fmt::format("{:g}", s.pooling), std::to_string(s.batch), fmt::format("{:g}", s.zipf)},
           x.seconds,
           x.origin,
           std::nullopt});
    }
  }
  print(a, "embedding", {"pass", "rows", "dim", "pooling", "batch", "zipf"}, rows);
}

void common(CLI::App* c, PredictArgs& a) {
  c->add_option("--device", a.device, "catalog device (shardcost catalog)")->required();
  c->add_option("--db", a.db, "cost store whose measurements come first");
  c->add_option("--format", a.format, "text (default), csv or json");
}

void sizes(CLI::App* c, PredictArgs& a) {
  c->add_option("-b", a.begin, "smallest size in bytes (K/M/G suffixes; default 1M)");
  c->add_option("-e", a.end, "largest size (default 1G)");
  c->add_option("-f", a.factor, "factor between sizes (default 2)");
  c->add_option("--sizes", a.sizes_file, "CSV file with a bytes column, instead of -b/-e/-f");
}

}  // namespace

void add_predict_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "predict", "Price GEMMs, collectives, memory operations or embedding bags on one device");
  cmd->require_subcommand(1);

  auto g = std::make_shared<PredictArgs>();
  auto* gemm = cmd->add_subcommand("gemm", "GEMM times, in the order given");
  common(gemm, *g);
  gemm->add_option("--shape", g->shapes, "MxNxK or MxNxKxBATCH; repeatable");
  gemm->add_option("--shapes", g->shapes_file, "CSV file with columns m,n,k[,batch]");
  gemm->add_option("--dtype", g->dtype, "fp32, tf32, bf16 (default), fp16 or fp8");
  gemm->callback([g] { run_gemm(*g); });

  auto c = std::make_shared<PredictArgs>();
  auto* coll =
      cmd->add_subcommand("collective", "Collective times over a size sweep or a sizes file");
  common(coll, *c);
  coll->add_option(
          "--op", c->op,
          "all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv")
      ->required();
  coll->add_option("--ranks", c->ranks, "ranks in the collective")->required();
  coll->add_option("--nodes", c->nodes, "nodes they span (default 1)");
  coll->add_option(
      "--cluster", c->cluster,
      "system whose fabrics the catalog prices (default: the device's catalog system)");
  sizes(coll, *c);
  coll->callback([c] { run_collective(*c); });

  auto m = std::make_shared<PredictArgs>();
  auto* mem =
      cmd->add_subcommand("memory", "Memory-operation times over a size sweep or a sizes file");
  common(mem, *m);
  mem->add_option(
         "--op", m->op,
         "copy_d2d, copy_h2d, copy_d2h, memset, read or write (as bench memory names them)")
      ->required();
  sizes(mem, *m);
  mem->callback([m] { run_memory(*m); });

  auto e = std::make_shared<PredictArgs>();
  auto* emb = cmd->add_subcommand(
      "embedding", "Embedding-bag passes of tables or configurations (bench embedding's)");
  common(emb, *e);
  emb->add_option("--rows", e->grid.rows, "table rows: a list or a range 64K:4M:4");
  emb->add_option("--dim", e->grid.dim, "columns");
  emb->add_option("--pooling", e->grid.pooling, "mean lookups per bag (default 1)");
  emb->add_option("--batch", e->grid.batch, "bags per batch")->required();
  emb->add_option("--zipf", e->grid.zipf, "access skew exponents (default 0, uniform)");
  emb->add_option("--tables", e->grid.tables, "a tables file: each table, not --rows/--dim");
  emb->add_option("--dtype", e->dtype, "weights: fp32 (default), bf16 or fp16");
  emb->add_option("--optimizer", e->optimizer,
                  "the backward's sparse update: rowwise_adagrad (default), sgd or adam");
  emb->add_option("--pass", e->passes, "forward,backward (default both)");
  e->dtype = "fp32";
  emb->callback([e] { run_embedding(*e); });
}

}  // namespace shardcost::cli
