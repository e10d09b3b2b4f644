// Cost tables as `shardcost export --format csv` writes them. The table is told by its
// columns; derived columns (rates) are ignored and recomputed; optional ones may be missing.
#include <fmt/format.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>

#include "import_util.h"
#include "shardcost/error.h"
#include "shardcost/importers.h"
#include "table_io.h"

namespace shardcost::db {
namespace {

struct Row {
  const CsvText& csv;
  const std::map<std::string, size_t>& index;
  size_t r;
  std::string_view source;

  std::string where() const { return fmt::format("{}:{}", source, csv.row_lines[r]); }
  bool has(const std::string& col) const {
    auto it = index.find(col);
    return it != index.end() && !csv.rows[r][it->second].empty();
  }
  std::string str(const std::string& col, std::string fallback = "") const {
    return has(col) ? csv.rows[r][index.at(col)] : fallback;
  }
  std::optional<int64_t> opt_int(const std::string& col) const {
    if (!has(col)) return std::nullopt;
    auto v = parse_int(str(col));
    if (!v)
      throw InputError(fmt::format("{}: column {} holds '{}', not an integer; fix the value",
                                   where(), col, str(col)));
    // Times, sizes and counts are never negative (a root of -1 means none).
    if (*v < 0 && col != "root")
      throw InputError(fmt::format("{}: column {} holds {}, which is negative; fix the value",
                                   where(), col, *v));
    return v;
  }
  // A measured time and its percentiles: positive (0 ns is no measurement: a bandwidth of
  // infinity), and p10 <= time <= p90 where they are given.
  int64_t time_ns() const {
    const int64_t t = integer("time_ns");
    if (t < 1)
      throw InputError(
          fmt::format("{}: time_ns is {}, not a measured time; fix the value", where(), t));
    const auto p10 = opt_int("time_p10_ns"), p90 = opt_int("time_p90_ns");
    if ((p10 && *p10 > t) || (p90 && *p90 < t) || (p10 && p90 && *p10 > *p90))
      throw InputError(fmt::format(
          "{}: time_p10_ns {}, time_ns {} and time_p90_ns {} are not in order (p10 <= median "
          "<= p90); fix the values",
          where(), p10 ? std::to_string(*p10) : "-", t, p90 ? std::to_string(*p90) : "-"));
    return t;
  }
  // samples_ns: per-iteration times, separated by spaces or semicolons; empty when absent.
  std::vector<int64_t> samples() const {
    std::vector<int64_t> out;
    const std::string text = str("samples_ns");
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find_first_of(" ;", start);
      if (end == std::string::npos) end = text.size();
      if (end > start) {
        const std::string item = text.substr(start, end - start);
        auto v = parse_int(item);
        if (!v || *v < 0)
          throw InputError(
              fmt::format("{}: samples_ns holds '{}', not a time in ns; write "
                          "non-negative integers separated by spaces",
                          where(), item));
        out.push_back(*v);
      }
      start = end + 1;
    }
    return out;
  }
  // grid_x_blocks ... block_z_threads: all six or none.
  LaunchConfig launch() const {
    static const char* const kColumns[] = {"grid_x_blocks",   "grid_y_blocks",   "grid_z_blocks",
                                           "block_x_threads", "block_y_threads", "block_z_threads"};
    int32_t dims[6] = {};
    int present = 0;
    for (int i = 0; i < 6; ++i) {
      const auto v = opt_int(kColumns[i]);
      if (!v) continue;
      if (*v < 1 || *v > INT32_MAX)
        throw InputError(fmt::format("{}: {} is {}; launch dimensions are positive integers",
                                     where(), kColumns[i], *v));
      dims[i] = static_cast<int32_t>(*v);
      ++present;
    }
    if (present != 0 && present != 6)
      throw InputError(
          fmt::format("{}: {} of the 6 launch columns (grid_x_blocks ... "
                      "block_z_threads) are filled; fill all or none",
                      where(), present));
    return {dims[0], dims[1], dims[2], dims[3], dims[4], dims[5]};
  }
  // A finite number (pooling factors and skews are means, not counts).
  double real(const std::string& col) const {
    const auto v = parse_real(str(col));
    if (!v || !std::isfinite(*v))
      throw InputError(fmt::format("{}: column {} holds '{}', not a number; fix the value", where(),
                                   col, str(col)));
    return *v;
  }
  int64_t integer(const std::string& col, std::optional<int64_t> fallback = std::nullopt) const {
    if (auto v = opt_int(col)) return *v;
    if (fallback) return *fallback;
    throw InputError(fmt::format("{}: column {} is empty; it is required", where(), col));
  }
};

const std::map<std::string, std::vector<std::string>>& required_columns() {
  static const std::map<std::string, std::vector<std::string>> r = {
      {"kernels", {"device", "kind", "name", "start_ns", "duration_ns"}},
      {"collective", {"device", "op", "bytes", "ranks", "time_ns"}},
      {"gemm", {"device", "dtype", "m", "n", "k", "time_ns"}},
      {"memory", {"device", "kind", "bytes", "time_ns"}},
      {"embedding", {"device", "pass", "rows", "dim", "pooling", "batch", "time_ns"}},
      {"measured", {"model_json", "cluster", "gpus", "strategy", "software", "step_time_ns"}},
  };
  return r;
}

std::string which_table(const std::map<std::string, size_t>& index, std::string_view source) {
  for (const char* name : {"measured", "kernels", "collective", "gemm", "embedding", "memory"}) {
    bool all = true;
    for (const auto& col : required_columns().at(name)) all = all && index.count(col);
    if (all) return name;
  }
  throw InputError(std::string(source) +
                   ": the columns match no cost table (gemm needs device, "
                   "dtype, m, n, k, time_ns; collective needs device, op, bytes, ranks, time_ns; "
                   "memory needs device, kind, bytes, time_ns; embedding needs device, pass, "
                   "rows, dim, pooling, batch, time_ns; kernels needs device, kind, name, "
                   "start_ns, duration_ns; measured needs model_json, cluster, gpus, strategy, "
                   "software, step_time_ns); write it with 'shardcost export --format csv' (a "
                   "table of measured runs by hand: 'shardcost import runs')");
}

EventKind event_kind(const Row& row) {
  const std::string k = row.str("kind");
  if (k == "kernel") return EventKind::kernel;
  if (k == "memcpy") return EventKind::memcpy;
  if (k == "memset") return EventKind::memset;
  if (k == "sync") return EventKind::sync;
  throw InputError(
      fmt::format("{}: kind '{}' is not kernel, memcpy, memset or sync", row.where(), k));
}

// A measured run as `export --table measured` writes it: already resolved and canonical, so
// it is taken as it stands (import runs reads tables written by hand).
MeasuredStepRecord measured(const Row& row) {
  MeasuredStepRecord r;
  r.label = row.str("label");
  r.model_json = row.str("model_json");
  r.model_name = row.str("model_name");
  r.cluster = row.str("cluster");
  r.gpus = row.integer("gpus");
  r.strategy = row.str("strategy");
  r.software = row.str("software");
  r.device = row.str("device");
  r.precision = row.str("precision");
  r.seq_len = row.integer("seq_len", 0);
  r.step_time_ns = row.integer("step_time_ns");
  r.step_time_p10_ns = row.opt_int("step_time_p10_ns");
  r.step_time_p90_ns = row.opt_int("step_time_p90_ns");
  r.steps = row.integer("steps", 0);
  if (row.has("tokens_per_s")) {
    const double v = row.real("tokens_per_s");
    if (!(v > 0))
      throw InputError(fmt::format("{}: tokens_per_s is {}; give a positive rate or leave it empty",
                                   row.where(), v));
    r.tokens_per_s = v;
  }
  r.peak_memory_bytes = row.opt_int("peak_memory_bytes");
  r.source_kind = row.str("source_kind", "csv");
  r.content_hash = row.str("content_hash");
  if (r.model_json.empty() || r.cluster.empty() || r.strategy.empty() || r.software.empty())
    throw InputError(fmt::format(
        "{}: model_json, cluster, strategy and software must not be empty; export the table "
        "again, or import a table of runs by hand with 'shardcost import runs'",
        row.where()));
  if (r.gpus < 1 || r.step_time_ns < 1)
    throw InputError(fmt::format("{}: gpus and step_time_ns must be positive", row.where()));
  return r;
}

// One run's rows as they are read: its devices by name, host and (kernels) ordinal, so two
// GPUs of one model on one host stay two, and its interned kernel names.
struct RunRows {
  Measurements m;
  std::map<std::tuple<std::string, std::string, std::string>, int> devices;
  std::unordered_map<std::string, int32_t> names;

  void add(const Row& row, const std::string& table) {
    if (table == "measured") {
      if (m.measured)
        throw InputError(fmt::format("{}: run {} holds a measured step already; a run holds one",
                                     row.where(), row.str("run_uuid")));
      m.measured = measured(row);
      return;
    }
    const auto key = std::make_tuple(row.str("device"), row.str("host"), row.str("device_index"));
    auto [it, added] = devices.emplace(key, static_cast<int>(m.devices.size()));
    if (added) {
      DeviceRecord d;
      d.name = std::get<0>(key);
      d.host = std::get<1>(key);
      if (auto ordinal = row.opt_int("device_index")) d.index = static_cast<int>(*ordinal);
      m.devices.push_back(d);
    }
    const int device = it->second;
    if (table == "gemm") {
      m.gemms.push_back({device, row.str("dtype"), row.integer("m"), row.integer("n"),
                         row.integer("k"), row.integer("batch", 1), row.time_ns(),
                         row.opt_int("time_p10_ns"), row.opt_int("time_p90_ns"),
                         row.integer("iterations", 0), row.samples()});
    } else if (table == "memory") {
      m.memory.push_back({device, row.str("kind"), row.integer("bytes"), row.time_ns(),
                          row.opt_int("time_p10_ns"), row.opt_int("time_p90_ns"),
                          row.integer("iterations", 0), row.samples()});
    } else if (table == "collective") {
      CollectiveRecord c;
      c.device = device;
      c.op = row.str("op");
      c.dtype = row.str("dtype");
      c.redop = row.str("redop", "none");
      c.root = static_cast<int>(row.integer("root", -1));
      c.bytes = row.integer("bytes");
      c.elements = row.integer("elements", 0);
      c.ranks = static_cast<int>(row.integer("ranks"));
      c.nodes = static_cast<int>(row.integer("nodes", 1));
      c.fabric_level = row.str("fabric_level", c.nodes > 1 ? "inter_node" : "intra_node");
      if (c.fabric_level != "intra_node" && c.fabric_level != "inter_node")
        throw InputError(fmt::format("{}: fabric_level '{}' is not intra_node or inter_node",
                                     row.where(), c.fabric_level));
      c.in_place = row.integer("in_place", 0) != 0;
      c.time_ns = row.time_ns();
      c.time_p10_ns = row.opt_int("time_p10_ns");
      c.time_p90_ns = row.opt_int("time_p90_ns");
      c.wrong_elements = row.opt_int("wrong_elements");
      if (row.has("max_error")) c.max_error = parse_real(row.str("max_error"));
      c.iterations = row.integer("iterations", 0);
      c.samples_ns = row.samples();
      m.collectives.push_back(c);
    } else if (table == "embedding") {
      EmbeddingRecord e;
      e.device = device;
      e.pass = row.str("pass");
      if (e.pass != "forward" && e.pass != "backward")
        throw InputError(
            fmt::format("{}: pass '{}' is not forward or backward", row.where(), e.pass));
      e.dtype = row.str("dtype", "fp32");
      e.optimizer = row.str("optimizer", e.pass == "forward" ? "none" : "rowwise_adagrad");
      e.rows = row.integer("rows");
      e.dim = row.integer("dim");
      e.batch = row.integer("batch");
      e.pooling = row.real("pooling");
      e.zipf = row.has("zipf") ? row.real("zipf") : 0.0;
      if (e.rows < 1 || e.dim < 1 || e.batch < 1 || !(e.pooling > 0) || e.zipf < 0)
        throw InputError(fmt::format(
            "{}: rows, dim and batch must be positive, pooling positive and zipf not negative",
            row.where()));
      e.time_ns = row.time_ns();
      e.time_p10_ns = row.opt_int("time_p10_ns");
      e.time_p90_ns = row.opt_int("time_p90_ns");
      e.iterations = row.integer("iterations", 0);
      e.samples_ns = row.samples();
      m.embeddings.push_back(e);
    } else {
      KernelEvent e;
      e.device = device;
      e.stream = row.integer("stream", 0);
      e.kind = event_kind(row);
      const std::string name = row.str("name");
      auto [n, fresh] = names.emplace(name, static_cast<int32_t>(m.names.size()));
      if (fresh) m.names.push_back(name);
      e.name = n->second;
      e.start_ns = row.integer("start_ns");
      e.duration_ns = row.integer("duration_ns");
      e.bytes = row.integer("bytes", 0);
      e.launch = row.launch();
      m.kernels.push_back(e);
    }
  }
};

}  // namespace

std::vector<Measurements> import_cost_csv_runs(std::string_view text, std::string_view source) {
  const CsvText csv = parse_csv(text, source);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < csv.header.size(); ++i)
    if (!index.emplace(std::string(trim(csv.header[i])), i).second)
      throw InputError(fmt::format(
          "{}: column '{}' appears twice in the header; which one holds the values is not "
          "knowable: keep one",
          source, trim(csv.header[i])));
  const std::string table = which_table(index, source);

  // Rows are grouped by run_uuid, in the order first seen; rows that name none (a table
  // written by hand or by an older shardcost) are one run named by the file's content.
  std::vector<std::pair<std::string, RunRows>> runs;
  std::unordered_map<std::string, size_t> by_uuid;
  for (size_t r = 0; r < csv.rows.size(); ++r) {
    const Row row{csv, index, r, source};
    std::string uuid = row.str("run_uuid");
    // A measured run is one row: a row that names no run is its own, named by its content.
    if (uuid.empty() && table == "measured") {
      std::string cells;
      for (const auto& cell : csv.rows[r]) cells += cell + '\x1f';
      uuid = content_uuid("measured", cells);
    }
    auto [it, fresh] = by_uuid.emplace(uuid, runs.size());
    if (fresh) runs.emplace_back(uuid, RunRows{});
    runs[it->second].second.add(row, table);
  }
  if (runs.empty()) throw InputError(std::string(source) + ": the table has a header but no rows");
  std::vector<Measurements> out;
  for (auto& [uuid, rows] : runs) {
    Measurements& m = rows.m;
    m.run.tool = "csv";
    m.run.source = std::string(source);
    m.run.uuid = uuid.empty() ? content_uuid("csv", text) : uuid;
    m.adds_to_run = !uuid.empty() && table != "measured";
    out.push_back(std::move(m));
  }
  return out;
}

Measurements import_cost_csv(std::string_view text, std::string_view source) {
  std::vector<Measurements> runs = import_cost_csv_runs(text, source);
  if (runs.size() != 1)
    throw InputError(fmt::format("{}: the table holds rows of {} runs; read it as several", source,
                                 runs.size()));
  return std::move(runs.front());
}

}  // namespace shardcost::db
