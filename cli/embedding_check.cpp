#include "embedding_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "format.h"
#include "shardcost/error.h"
#include "shardcost/learned.h"
#include "shardcost/quantiles.h"

namespace shardcost::cli {
namespace {

double number(const nlohmann::json& j, const char* field, const std::string& where) {
  if (!j.contains(field) || !j.at(field).is_number())
    throw InputError(
        fmt::format("{}: '{}' is missing or not a number; give a plan written by "
                    "'shardcost shard-tables --format json'",
                    where, field));
  return j.at(field).get<double>();
}

// A field that must be a whole number from `min` to `max` (rows, dim, batch, the GPU).
int64_t whole(const nlohmann::json& j, const char* field, const std::string& where, double min,
              double max) {
  const double v = number(j, field, where);
  if (!(v >= min && v <= max) || v != std::floor(v))
    throw InputError(fmt::format("{}: '{}' is {}; it must be a whole number from {} to {}", where,
                                 field, v, min, max));
  return static_cast<int64_t>(v);
}

// A field that must be a number from `min` to `max`.
double bounded(const nlohmann::json& j, const char* field, const std::string& where, double min,
               double max) {
  const double v = number(j, field, where);
  if (!(v >= min && v <= max))
    throw InputError(
        fmt::format("{}: '{}' is {}; it must be from {} to {}", where, field, v, min, max));
  return v;
}

// The key a shard's measurement is found by: bench embedding measures each distinct one once.
std::tuple<int64_t, int64_t, double, int64_t, double> key(const bench::EmbeddingShape& s) {
  return {s.rows, s.dim, s.pooling, s.batch, s.zipf};
}

}  // namespace

std::vector<PlanShard> read_plan_shards(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("--plan {}: cannot read the file", path));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("--plan {}: not JSON ({})", path, e.what()));
  }
  if (!j.is_object() || !j.contains("plan") || !j["plan"].contains("tables") ||
      !j["plan"]["tables"].is_array())
    throw InputError(fmt::format(
        "--plan {}: no plan.tables; give the output of 'shardcost shard-tables --format json'",
        path));
  // The plan's GPUs: every shard is on one of them.
  const double gpus = j.contains("gpus") && j["gpus"].is_number_integer() && j["gpus"] > 0
                          ? j["gpus"].get<double>()
                          : double(1 << 20);
  std::vector<PlanShard> out;
  for (const auto& t : j["plan"]["tables"]) {
    if (!t.is_object())
      throw InputError(fmt::format(
          "--plan {}: a table of plan.tables is not an object; give the output of 'shardcost "
          "shard-tables --format json'",
          path));
    const std::string name =
        t.contains("table") && t["table"].is_string() ? t["table"].get<std::string>() : "?";
    if (!t.contains("shards") || !t["shards"].is_array())
      throw InputError(
          fmt::format("--plan {}: table '{}' lists no shards; write the plan again "
                      "with this shardcost",
                      path, name));
    for (const auto& s : t["shards"]) {
      const std::string where = fmt::format("--plan {}: table '{}'", path, name);
      PlanShard p;
      // As shard-tables writes them (rows and batch a shard's share, rounded), within what a
      // tables file may hold.
      p.gpu = static_cast<int>(whole(s, "gpu", where, 0, gpus - 1));
      p.shape.rows = std::max<int64_t>(1, std::llround(bounded(s, "rows", where, 0, 1e12)));
      p.shape.dim = whole(s, "dim", where, 1, 1 << 16);
      p.shape.pooling = bounded(s, "pooling", where, 1e-6, 1e6);
      p.shape.batch = std::max<int64_t>(1, std::llround(bounded(s, "batch", where, 0, 1e9)));
      p.shape.zipf = bounded(s, "zipf", where, 0, 10);
      if (s.contains("histogram")) {
        const auto& h = s.at("histogram");
        if (!h.is_array())
          throw InputError(
              fmt::format("{}: 'histogram' is not a list of [rows, lookups] shares", where));
        for (const auto& b : h) {
          if (!b.is_array() || b.size() != 2 || !b[0].is_number() || !b[1].is_number() ||
              !(b[0].get<double>() >= 0 && b[0].get<double>() <= 1) ||
              !(b[1].get<double>() >= 0 && b[1].get<double>() <= 1))
            throw InputError(
                fmt::format("{}: 'histogram' is not a list of [rows, lookups] shares", where));
          p.shape.histogram.emplace_back(b[0].get<double>(), b[1].get<double>());
        }
      }
      p.dtype_bytes = static_cast<int>(whole(s, "dtype_bytes", where, 1, 8));
      out.push_back(p);
    }
  }
  if (out.empty()) throw InputError(fmt::format("--plan {}: the plan has no shards", path));
  return out;
}

std::vector<bench::EmbeddingShape> plan_shapes(const std::vector<PlanShard>& shards) {
  std::vector<bench::EmbeddingShape> out;
  std::set<decltype(key(bench::EmbeddingShape{}))> seen;
  for (const auto& s : shards)
    if (seen.insert(key(s.shape)).second) out.push_back(s.shape);
  return out;
}

PlanCheck check_plan(const std::vector<PlanShard>& shards, const bench::EmbeddingReport& r,
                     const std::string& db) {
  PlanCheck c;
  c.device = r.device.name;
  // Each distinct shard's passes, measured: over several rounds, each pass at its median.
  std::map<std::pair<decltype(key(bench::EmbeddingShape{})), std::string>, std::vector<int64_t>>
      rounds;
  for (const auto& x : r.results) rounds[{key(x.shape), x.pass}].push_back(x.stats.median_ns);
  std::map<decltype(key(bench::EmbeddingShape{})), double> measured;
  for (const auto& [k, times] : rounds) measured[k.first] += median(times) * 1e-9;
  std::optional<LearnedCosts> models;
  if (!db.empty()) {
    std::vector<std::string> problems;
    models = LearnedCosts::load(db, &problems);
    for (const auto& p : problems) fmt::print(stderr, "shardcost: warning: {}\n", p);
  }
  std::map<int, GpuCheck> by_gpu;
  std::map<int, bool> unpriced;  // a GPU with a pass no model priced gets no prediction
  std::set<std::string> origins;
  std::string dtype = "fp32", optimizer = "rowwise_adagrad";
  for (const auto& x : r.results) {
    dtype = x.dtype;
    if (x.pass == "backward") optimizer = x.optimizer;
  }
  for (const auto& s : shards) {
    GpuCheck& g = by_gpu[s.gpu];
    g.gpu = s.gpu;
    ++g.shards;
    const auto m = measured.find(key(s.shape));
    if (m != measured.end()) g.measured_s += m->second;
    if (!models) {
      unpriced[s.gpu] = true;
      continue;
    }
    EmbeddingPass pass{false,
                       dtype == "fp32" ? 4 : 2,
                       optimizer,
                       static_cast<double>(s.shape.rows),
                       static_cast<double>(s.shape.dim),
                       s.shape.pooling,
                       static_cast<double>(s.shape.batch),
                       s.shape.zipf,
                       s.shape.histogram};
    for (bool backward : {false, true}) {
      pass.backward = backward;
      const auto p = models->embedding(std::string_view(c.device), pass);
      if (!p) {
        unpriced[s.gpu] = true;
        continue;
      }
      origins.insert(std::string(to_string(p->priced.origin)));
      g.predicted_s = std::max(0.0, g.predicted_s) + p->priced.seconds;
    }
  }
  for (auto& [gpu, g] : by_gpu) {
    if (unpriced[gpu]) g.predicted_s = -1;
    c.gpus.push_back(g);
  }
  c.origin = origins.empty() ? "none" : origins.size() == 1 ? *origins.begin() : "mixed";
  return c;
}

std::string render(const PlanCheck& c, bool json) {
  std::vector<int64_t> errors_ppm;
  double slowest_m = 0, slowest_p = 0;
  int at_m = -1, at_p = -1;
  for (const auto& g : c.gpus) {
    if (g.measured_s > slowest_m) slowest_m = g.measured_s, at_m = g.gpu;
    if (g.predicted_s >= 0) {
      if (g.predicted_s > slowest_p) slowest_p = g.predicted_s, at_p = g.gpu;
      errors_ppm.push_back(
          std::llround(1e6 * std::fabs(g.predicted_s - g.measured_s) / g.measured_s));
    }
  }
  const bool predicted = !errors_ppm.empty() && errors_ppm.size() == c.gpus.size();
  if (json) {
    nlohmann::json gpus = nlohmann::json::array();
    for (const auto& g : c.gpus) {
      nlohmann::json row = {
          {"gpu", g.gpu}, {"shards", g.shards}, {"measured_s", round6(g.measured_s)}};
      if (g.predicted_s >= 0) row["predicted_s"] = round6(g.predicted_s);
      gpus.push_back(row);
    }
    nlohmann::json j = {{"device", c.device}, {"origin", c.origin}, {"gpus", gpus}};
    if (predicted) {
      j["median_abs_error"] = round6(median(errors_ppm) / 1e6);
      j["max_abs_error"] = round6(*std::max_element(errors_ppm.begin(), errors_ppm.end()) / 1e6);
    }
    return json_text(j) + "\n";
  }
  std::string out = fmt::format(
      "# the plan's lookups, GPU by GPU, run on {} (forward and backward of each shard)\n",
      c.device);
  Table t({"gpu", "shards", "predicted ms", "measured ms", "error"},
          {true, true, true, true, true});
  for (const auto& g : c.gpus)
    t.add({std::to_string(g.gpu), std::to_string(g.shards),
           g.predicted_s >= 0 ? fmt::format("{:.3f}", 1e3 * g.predicted_s) : "-",
           fmt::format("{:.3f}", 1e3 * g.measured_s),
           g.predicted_s >= 0
               ? fmt::format("{:+.1f} %", 100 * (g.predicted_s - g.measured_s) / g.measured_s)
               : "-"});
  out += t.render();
  if (!predicted)
    return out + "\nno prediction: the store (--db) has no fitted lookup model of " + c.device +
           " for every pass (run bench embedding, then fit --table embedding)\n";
  return out + fmt::format(
                   "\npredicted by the store's {} lookup models: median |error| over GPUs "
                   "{:.1f} %, worst {:.1f} %; slowest GPU predicted {} ({:.3f} ms), measured "
                   "{} ({:.3f} ms)\n",
                   c.origin, median(errors_ppm) / 1e4,
                   *std::max_element(errors_ppm.begin(), errors_ppm.end()) / 1e4, at_p,
                   1e3 * slowest_p, at_m, 1e3 * slowest_m);
}

}  // namespace shardcost::cli
