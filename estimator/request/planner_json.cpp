// The sibling planners' requests as JSON, run: {"command": "place", "model": ..., ...} with the
// command line's option names ('_' for '-'), as the Python module's keyword arguments give
// them. Each request is read whole, an unknown key refused with the closest known one, then
// run as the command line runs it.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "inputs/json_fields.h"
#include "shardcost/error.h"
#include "shardcost/planner_requests.h"

namespace shardcost {
namespace {

std::string string_or(const JsonFields& f, const char* key, std::string fallback) {
  return f.optional_string(key).value_or(std::move(fallback));
}

PlannerRun place(const JsonFields& f) {
  f.reject_unknown({"command", "model", "cluster", "gpus", "micro_batch", "micro_batches",
                    "precision", "optimizer", "db", "solver", "max_ideals", "solver_time"});
  PlaceRequest r;
  r.model = f.required_string("model");
  r.cluster = f.required_string("cluster");
  r.gpus = f.optional_int("gpus", 1);
  r.micro_batch = f.optional_int("micro_batch", 1).value_or(r.micro_batch);
  r.micro_batches = f.optional_int("micro_batches", 0).value_or(r.micro_batches);
  r.precision = string_or(f, "precision", r.precision);
  r.optimizer = string_or(f, "optimizer", r.optimizer);
  r.db = string_or(f, "db", r.db);
  r.solver = string_or(f, "solver", r.solver);
  r.max_ideals = f.optional_int("max_ideals", 1).value_or(static_cast<int>(r.max_ideals));
  r.solver_time_s = f.optional_number("solver_time", 0).value_or(r.solver_time_s);
  const PlaceReport rep = run_place(r);
  return {to_json(rep), rep.verdict, rep.warnings};
}

PlannerRun split_learning(const JsonFields& f) {
  f.reject_unknown({"command", "model", "devices", "server", "precision", "db", "inference"});
  SplitLearningRequest r;
  r.model = f.required_string("model");
  r.devices = f.required_string("devices");
  r.server = f.required_string("server");
  r.precision = string_or(f, "precision", r.precision);
  r.db = string_or(f, "db", r.db);
  r.inference = f.optional_bool("inference").value_or(false);
  const SplitLearningReport rep = run_split_learning(r);
  return {to_json(rep), {}, rep.warnings};
}

// A dense MLP's widths: [13, 512, 256] or the command line's "13,512,256".
std::vector<int> mlp_widths(const nlohmann::json& mlp, const JsonFields& f) {
  std::vector<int> widths;
  auto add = [&](long long w) {
    if (w < 1 || w > std::numeric_limits<int>::max())
      f.fail("dense_mlp", fmt::format("a layer width of {}; give positive widths", w));
    widths.push_back(static_cast<int>(w));
  };
  if (mlp.is_string()) {
    const std::string text = mlp.get<std::string>();
    size_t at = 0;
    while (at <= text.size()) {
      const size_t comma = std::min(text.find(',', at), text.size());
      const std::string item = text.substr(at, comma - at);
      try {
        size_t used = 0;
        const long long w = std::stoll(item, &used);
        if (used != item.size()) throw std::invalid_argument(item);
        add(w);
      } catch (const std::exception&) {
        f.fail("dense_mlp", fmt::format("'{}' is not a layer width; write \"13,512,256\"", item));
      }
      at = comma + 1;
    }
  } else if (mlp.is_array()) {
    for (const auto& w : mlp) {
      if (!w.is_number_integer())
        f.fail("dense_mlp", "an MLP's widths are integers; write [13, 512, 256]");
      add(w.get<long long>());
    }
  } else {
    f.fail("dense_mlp", "each MLP is a list of widths or \"13,512,256\"");
  }
  if (widths.size() < 2) f.fail("dense_mlp", "an MLP has at least two widths (in and out)");
  return widths;
}

PlannerRun shard_tables(const JsonFields& f, const nlohmann::json& j) {
  f.reject_unknown({"command", "tables", "cluster", "gpus", "batch", "optimizer", "beam",
                    "dense_mlp", "dense_precision", "db"});
  ShardTablesRequest r;
  r.tables = f.required_string("tables");
  r.cluster = f.required_string("cluster");
  r.gpus = f.optional_int("gpus", 1);
  r.batch = f.required_int("batch", 1);
  r.optimizer = string_or(f, "optimizer", r.optimizer);
  r.beam = f.optional_int("beam", 1).value_or(r.beam);
  r.dense_precision = string_or(f, "dense_precision", r.dense_precision);
  r.db = string_or(f, "db", r.db);
  if (j.contains("dense_mlp")) {
    const nlohmann::json& mlps = j.at("dense_mlp");
    // One MLP ("13,512,256" or [13, 512, 256]) or several.
    const bool one =
        mlps.is_string() || (mlps.is_array() && !mlps.empty() && mlps.front().is_number_integer());
    if (one) {
      r.dense_mlps.push_back(mlp_widths(mlps, f));
    } else if (mlps.is_array()) {
      for (const auto& mlp : mlps) r.dense_mlps.push_back(mlp_widths(mlp, f));
    } else {
      f.fail("dense_mlp", "give an MLP's widths, or a list of MLPs");
    }
  }
  const ShardTablesReport rep = run_shard_tables(r);
  return {to_json(rep), {}, rep.warnings};
}

PlannerRun schedule(const JsonFields& f) {
  const bool search = f.optional_string("search").has_value();
  if (search == f.optional_string("jobs").has_value())
    f.fail("jobs",
           "give \"jobs\": FILE (many jobs) or \"search\": FILE (one hyperparameter search)");
  if (search) {
    f.reject_unknown({"command", "search", "cluster", "gpus", "software"});
    SearchRequest r;
    r.search = f.required_string("search");
    r.cluster = f.required_string("cluster");
    r.gpus = f.optional_int("gpus", 1);
    r.software = string_or(f, "software", r.software);
    const SearchReport rep = run_search(r);
    return {to_json(rep), rep.verdict, {}};
  }
  f.reject_unknown({"command", "jobs", "cluster", "gpus", "software", "objective", "solver",
                    "time_limit", "spill"});
  ScheduleRequest r;
  r.jobs = f.required_string("jobs");
  r.cluster = f.required_string("cluster");
  r.gpus = f.optional_int("gpus", 1);
  r.software = string_or(f, "software", r.software);
  r.objective = string_or(f, "objective", r.objective);
  r.solver = string_or(f, "solver", r.solver);
  r.time_limit_s = f.optional_number("time_limit", 0).value_or(r.time_limit_s);
  r.spill = f.optional_bool("spill").value_or(false);
  const ScheduleReport rep = run_schedule(r);
  return {to_json(rep), rep.verdict, {}};
}

}  // namespace

bool is_planner_command(std::string_view command) {
  return command == "place" || command == "split-learning" || command == "shard-tables" ||
         command == "schedule";
}

PlannerRun run_planner_json(const nlohmann::json& j, std::string_view origin) {
  const std::string where = fmt::format("request {}", origin);
  if (!j.is_object())
    throw InputError(fmt::format(
        "{}: not a JSON object; give {{\"command\": \"place\", \"model\": ..., ...}}", where));
  const JsonFields f(j, where);
  const std::string command = f.required_string("command");
  if (command == "place") return place(f);
  if (command == "split-learning") return split_learning(f);
  if (command == "shard-tables") return shard_tables(f, j);
  if (command == "schedule") return schedule(f);
  f.fail("command",
         fmt::format("'{}' is not a planner; use place, split-learning, shard-tables or schedule",
                     command));
}

}  // namespace shardcost
