// Reading the measurements compare matches, with their identity and spread, and naming runs.
#include "shardcost/measures.h"

#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <tuple>

#include "shardcost/error.h"
#include "shardcost/quantiles.h"
#include "sqlite.h"
#include "store_access.h"

namespace shardcost::db {
namespace {

struct Loader {
  std::string_view table;
  // ?1: run id or NULL. Columns: run_id, identity fields..., then time_ns, time_p10_ns,
  // time_p90_ns, iterations, samples_ns.
  std::string_view sql;
  std::vector<std::string_view> key;
};

const std::vector<Loader>& loaders() {
  static const std::vector<Loader> all = {
      {"gemm",
       "SELECT x.run_id, d.name, x.dtype, x.m, x.n, x.k, x.batch, x.time_ns, x.time_p10_ns, "
       "x.time_p90_ns, x.iterations, x.samples_ns FROM gemm x JOIN device d ON d.id = x.device_id "
       "WHERE ?1 IS NULL OR x.run_id = ?1 ORDER BY x.run_id, x.id",
       {"device", "dtype", "m", "n", "k", "batch"}},
      {"memory",
       "SELECT x.run_id, d.name, x.kind, x.bytes, x.time_ns, x.time_p10_ns, x.time_p90_ns, "
       "x.iterations, x.samples_ns FROM memory x JOIN device d ON d.id = x.device_id "
       "WHERE ?1 IS NULL OR x.run_id = ?1 ORDER BY x.run_id, x.id",
       {"device", "kind", "bytes"}},
      {"collective",
       "SELECT x.run_id, d.name, x.op, x.dtype, x.redop, x.root, x.bytes, x.ranks, x.nodes, "
       "x.fabric_level, x.in_place, x.time_ns, x.time_p10_ns, x.time_p90_ns, x.iterations, "
       "x.samples_ns FROM collective x JOIN device d ON d.id = x.device_id "
       "WHERE ?1 IS NULL OR x.run_id = ?1 ORDER BY x.run_id, x.id",
       {"device", "op", "dtype", "redop", "root", "bytes", "ranks", "nodes", "fabric_level",
        "in_place"}},
      {"embedding",
       "SELECT x.run_id, d.name, x.pass, x.dtype, x.optimizer, x.rows, x.dim, x.pooling, x.batch, "
       "x.zipf, x.time_ns, x.time_p10_ns, x.time_p90_ns, x.iterations, x.samples_ns "
       "FROM embedding x JOIN device d ON d.id = x.device_id "
       "WHERE ?1 IS NULL OR x.run_id = ?1 ORDER BY x.run_id, x.id",
       {"device", "pass", "dtype", "optimizer", "rows", "dim", "pooling", "batch", "zipf"}},
  };
  return all;
}

std::vector<int64_t> parse_samples(const std::string& text) {
  std::vector<int64_t> out;
  const char* p = text.c_str();
  while (*p) {
    char* end = nullptr;
    const long long v = std::strtoll(p, &end, 10);
    if (end == p) break;  // written by us; anything else ends the list
    out.push_back(v);
    p = end;
  }
  return out;
}

std::vector<Measure> load_rows(const Connection& c, const Loader& l,
                               std::optional<int64_t> run_id) {
  Statement s = c.prepare(l.sql);
  s.bind(1, run_id);
  std::vector<Measure> out;
  const int keys = static_cast<int>(l.key.size());
  while (s.step()) {
    Measure m;
    m.table = std::string(l.table);
    m.run_id = s.int64(0);
    for (int i = 0; i < keys; ++i)
      m.key.emplace_back(std::string(l.key[static_cast<size_t>(i)]), s.text(1 + i));
    const int t = 1 + keys;
    m.median_ns = static_cast<double>(s.int64(t));
    if (!s.is_null(t + 1)) m.p10_ns = static_cast<double>(s.int64(t + 1));
    if (!s.is_null(t + 2)) m.p90_ns = static_cast<double>(s.int64(t + 2));
    m.iterations = s.int64(t + 3);
    if (!s.is_null(t + 4)) m.samples_ns = parse_samples(s.text(t + 4));
    out.push_back(std::move(m));
  }
  return out;
}

// Traces: every event of a (device, kind, name, launch configuration) is one sample of that
// kernel's duration: the same kernel on another grid is another cost. Grid and block join the
// identity only when known (schema 4), so older stores and imports match as before.
std::vector<Measure> load_kernels(const Connection& c, std::optional<int64_t> run_id) {
  Statement s = c.prepare(
      "SELECT k.run_id, d.name, k.kind, t.text, k.duration_ns, "
      "coalesce(l.grid_x || 'x' || l.grid_y || 'x' || l.grid_z, ''), "
      "coalesce(l.block_x || 'x' || l.block_y || 'x' || l.block_z, '') FROM kernel_event k "
      "JOIN device d ON d.id = k.device_id JOIN string t ON t.id = k.name_id "
      "LEFT JOIN launch_config l ON l.id = k.launch_id "
      "WHERE k.kind != 3 AND (?1 IS NULL OR k.run_id = ?1) ORDER BY k.run_id, k.rowid");
  s.bind(1, run_id);
  using Key = std::tuple<int64_t, std::string, int64_t, std::string, std::string, std::string>;
  std::map<Key, std::vector<int64_t>> groups;
  while (s.step())
    groups[{s.int64(0), s.text(1), s.int64(2), s.text(3), s.text(5), s.text(6)}].push_back(
        s.int64(4));
  std::vector<Measure> out;
  for (auto& [key, samples] : groups) {
    const auto& [run, device, kind, name, grid, block] = key;
    Measure m;
    m.table = "kernels";
    m.run_id = run;
    m.key = {{"device", device},
             {"kind", std::string(to_string(static_cast<EventKind>(kind)))},
             {"name", name}};
    if (!grid.empty()) m.key.emplace_back("grid", grid), m.key.emplace_back("block", block);
    m.median_ns = median(samples);
    m.p10_ns = percentile(samples, 0.1);
    m.p90_ns = percentile(samples, 0.9);
    m.iterations = static_cast<int64_t>(samples.size());
    m.samples_ns = std::move(samples);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

std::string Measure::label() const {
  std::string out;
  for (const auto& [k, v] : key) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out;
}

const std::vector<std::string>& comparable_tables() {
  static const std::vector<std::string> all = {"gemm", "memory", "collective", "embedding",
                                               "kernels"};
  return all;
}

std::vector<Measure> load_measures(const Store& store, std::string_view table,
                                   std::optional<int64_t> run_id) {
  const Connection& c = StoreAccess::connection(store);
  if (table == "kernels") return load_kernels(c, run_id);
  for (const auto& l : loaders())
    if (l.table == table) return load_rows(c, l, run_id);
  throw InputError(fmt::format(
      "cannot compare table '{}'; use gemm, memory, collective, embedding, kernels or all", table));
}

Run resolve_run(const Store& store, std::string_view id_or_uuid) {
  const Connection& c = StoreAccess::connection(store);
  const bool numeric = !id_or_uuid.empty() && id_or_uuid.size() < 18 &&
                       id_or_uuid.find_first_not_of("0123456789") == std::string_view::npos;
  std::vector<int64_t> found;
  if (numeric) {  // an id wins over a uuid that happens to start with the same digits
    Statement s = c.prepare("SELECT id FROM run WHERE id = ?");
    s.bind(1, static_cast<int64_t>(std::stoll(std::string(id_or_uuid))));
    while (s.step()) found.push_back(s.int64(0));
  }
  if (found.empty() && !id_or_uuid.empty()) {
    Statement s =
        c.prepare("SELECT id FROM run WHERE substr(uuid, 1, length(?1)) = ?1 ORDER BY id");
    s.bind(1, id_or_uuid);
    while (s.step()) found.push_back(s.int64(0));
  }
  if (found.size() == 1) {
    for (const Run& r : store.info().runs)
      if (r.id == found.front()) return r;
  }
  std::string known;
  Statement all = c.prepare("SELECT id, uuid, tool FROM run ORDER BY id LIMIT 8");
  while (all.step())
    known += fmt::format("{}{} ({} {})", known.empty() ? "" : ", ", all.int64(0), all.text(2),
                         all.text(1).substr(0, 8));
  if (found.empty())
    throw InputError(fmt::format("{} has no run '{}'; name a run by id or uuid prefix: {}",
                                 store.path(), id_or_uuid,
                                 known.empty() ? "the store has no runs" : known));
  throw InputError(fmt::format("run '{}' is ambiguous in {} ({} runs match); give more of the uuid",
                               id_or_uuid, store.path(), found.size()));
}

}  // namespace shardcost::db
