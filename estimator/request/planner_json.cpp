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

PlaceRequest place_of(const JsonFields& f) {
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
  return r;
}

SplitLearningRequest split_learning_of(const JsonFields& f) {
  f.reject_unknown({"command", "model", "devices", "server", "precision", "db", "inference"});
  SplitLearningRequest r;
  r.model = f.required_string("model");
  r.devices = f.required_string("devices");
  r.server = f.required_string("server");
  r.precision = string_or(f, "precision", r.precision);
  r.db = string_or(f, "db", r.db);
  r.inference = f.optional_bool("inference").value_or(false);
  return r;
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
      at = comma + 1;
      if (item.empty()) continue;  // as the command line's split_commas
      long long w = 0;
      size_t used = 0;
      try {
        w = std::stoll(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != item.size())
        f.fail("dense_mlp", fmt::format("'{}' is not a layer width; write \"13,512,256\"", item));
      add(w);
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

ShardTablesRequest shard_tables_of(const JsonFields& f, const nlohmann::json& j) {
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
  if (j.contains("dense_mlp") && !j.at("dense_mlp").is_null()) {
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
  return r;
}

ScheduleRequests schedule_of(const JsonFields& f) {
  const bool search = f.optional_string("search").has_value();
  if (search == f.optional_string("jobs").has_value())
    f.fail("jobs",
           "give \"jobs\": FILE (many jobs) or \"search\": FILE (one hyperparameter search)");
  ScheduleRequests out;
  if (search) {
    f.reject_unknown({"command", "search", "cluster", "gpus", "software"});
    SearchRequest r;
    r.search = f.required_string("search");
    r.cluster = f.required_string("cluster");
    r.gpus = f.optional_int("gpus", 1);
    r.software = string_or(f, "software", r.software);
    out.search = std::move(r);
    return out;
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
  out.jobs = std::move(r);
  return out;
}

// The request's fields, its "command" where it names one checked against `command`.
JsonFields fields_of(const nlohmann::json& j, std::string_view origin, std::string_view command) {
  const std::string where = fmt::format("request {}", origin);
  if (!j.is_object())
    throw InputError(
        fmt::format("{}: not a JSON object; give {{\"command\": \"{}\", ...}}", where, command));
  JsonFields f(j, where);
  if (const auto c = f.optional_string("command"); c && *c != command)
    f.fail("command", fmt::format("'{}' where {} was asked; give \"command\": \"{}\" or none", *c,
                                  command, command));
  return f;
}

}  // namespace

bool is_planner_command(std::string_view command) {
  return command == "place" || command == "split-learning" || command == "shard-tables" ||
         command == "schedule";
}

nlohmann::json load_planner_request(const std::string& path, std::string_view command) {
  nlohmann::json j = parse_json_text(read_text_file(path, "request file"), path);
  if (!j.is_object())
    throw InputError(fmt::format(
        "request '{}': not a JSON object; give {{\"command\": \"{}\", ...}}", path, command));
  return j;
}

PlaceRequest place_request_from_json(const nlohmann::json& j, std::string_view origin) {
  return place_of(fields_of(j, origin, "place"));
}
SplitLearningRequest split_learning_request_from_json(const nlohmann::json& j,
                                                      std::string_view origin) {
  return split_learning_of(fields_of(j, origin, "split-learning"));
}
ShardTablesRequest shard_tables_request_from_json(const nlohmann::json& j,
                                                  std::string_view origin) {
  return shard_tables_of(fields_of(j, origin, "shard-tables"), j);
}
ScheduleRequests schedule_request_from_json(const nlohmann::json& j, std::string_view origin) {
  return schedule_of(fields_of(j, origin, "schedule"));
}

nlohmann::json to_json(const PlaceRequest& r) {
  nlohmann::json j = {{"command", "place"},
                      {"model", r.model},
                      {"cluster", r.cluster},
                      {"micro_batch", r.micro_batch},
                      {"micro_batches", r.micro_batches},
                      {"precision", r.precision},
                      {"optimizer", r.optimizer},
                      {"db", r.db},
                      {"solver", r.solver},
                      {"max_ideals", r.max_ideals},
                      {"solver_time", r.solver_time_s}};
  if (r.gpus) j["gpus"] = *r.gpus;
  return j;
}
nlohmann::json to_json(const SplitLearningRequest& r) {
  return {{"command", "split-learning"}, {"model", r.model},         {"devices", r.devices},
          {"server", r.server},          {"precision", r.precision}, {"db", r.db},
          {"inference", r.inference}};
}
nlohmann::json to_json(const ShardTablesRequest& r) {
  nlohmann::json j = {{"command", "shard-tables"},
                      {"tables", r.tables},
                      {"cluster", r.cluster},
                      {"batch", r.batch},
                      {"optimizer", r.optimizer},
                      {"beam", r.beam},
                      {"dense_mlp", nlohmann::json::array()},
                      {"dense_precision", r.dense_precision},
                      {"db", r.db}};
  for (const auto& mlp : r.dense_mlps) j["dense_mlp"].push_back(mlp);
  if (r.gpus) j["gpus"] = *r.gpus;
  return j;
}
nlohmann::json to_json(const ScheduleRequest& r) {
  nlohmann::json j = {{"command", "schedule"},        {"jobs", r.jobs},
                      {"cluster", r.cluster},         {"software", r.software},
                      {"objective", r.objective},     {"solver", r.solver},
                      {"time_limit", r.time_limit_s}, {"spill", r.spill}};
  if (r.gpus) j["gpus"] = *r.gpus;
  return j;
}
PlannerRun run_planner_json(const nlohmann::json& j, std::string_view origin) {
  const std::string where = fmt::format("request {}", origin);
  if (!j.is_object())
    throw InputError(fmt::format(
        "{}: not a JSON object; give {{\"command\": \"place\", \"model\": ..., ...}}", where));
  const std::string command = JsonFields(j, where).required_string("command");
  // An operator graph's notes (what the command line says on stderr) among the warnings.
  auto with_notes = [](const OpGraph& g, const std::vector<std::string>& warnings) {
    std::vector<std::string> out;
    for (const std::string& note : g.notes)
      out.push_back(fmt::format("note: {}: {}", g.source, note));
    out.insert(out.end(), warnings.begin(), warnings.end());
    return out;
  };
  if (command == "place") {
    const PlaceReport rep = run_place(place_request_from_json(j, origin));
    return {to_json(rep), rep.verdict, with_notes(rep.graph, rep.warnings)};
  }
  if (command == "split-learning") {
    const SplitLearningReport rep = run_split_learning(split_learning_request_from_json(j, origin));
    return {to_json(rep), {}, with_notes(rep.graph, rep.warnings)};
  }
  if (command == "shard-tables") {
    const ShardTablesReport rep = run_shard_tables(shard_tables_request_from_json(j, origin));
    return {to_json(rep), {}, rep.warnings};
  }
  if (command == "schedule") {
    const ScheduleRequests q = schedule_request_from_json(j, origin);
    if (q.search) {
      const SearchReport rep = run_search(*q.search);
      return {to_json(rep), rep.verdict, {}};
    }
    const ScheduleReport rep = run_schedule(*q.jobs);
    return {to_json(rep), rep.verdict, {}};
  }
  JsonFields(j, where).fail(
      "command", fmt::format("'{}' is not a planner; use place, split-learning, shard-tables or "
                             "schedule",
                             command));
}

}  // namespace shardcost
