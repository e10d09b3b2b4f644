// A request as JSON and back. Keys are the command line's option names with '_' for '-', so a
// request file, `--format json` output's "request", and the Python module's keyword arguments
// all read the same.
#include <fmt/format.h>

#include "inputs/json_fields.h"
#include "shardcost/error.h"
#include "shardcost/request.h"

namespace shardcost {

VarlenOptions VarlenRequest::options() const {
  VarlenOptions o;
  o.lengths = !lengths_file.empty() ? LengthDistribution::load(lengths_file)
                                    : LengthDistribution::parse(dist);
  o.seed = seed;
  o.batches = batches;
  if (batch_tokens < 0)
    throw InputError(fmt::format("--batch-tokens {}: give a positive token count", batch_tokens));
  o.batch_tokens = batch_tokens;
  if (pad_to < 0)
    throw InputError(fmt::format("--pad-to {}: give a positive token multiple", pad_to));
  o.pad_to = pad_to;
  if (long_seqs == "drop")
    o.long_sequences = LongSequences::drop;
  else if (long_seqs == "truncate")
    o.long_sequences = LongSequences::truncate;
  else
    throw InputError(fmt::format("--long-seqs '{}': use drop or truncate", long_seqs));
  return o;
}

nlohmann::json to_json(const PlanRequest& r, bool every_key) {
  const PlanRequest d;
  nlohmann::json j = {{"command", r.command}, {"model", r.model}, {"cluster", r.cluster}};
  auto put = [&j, every_key](const char* key, const auto& value, const auto& default_value) {
    if (every_key || value != default_value) j[key] = value;
  };
  if (r.gpus) j["gpus"] = *r.gpus;
  put("software", r.software, d.software);
  put("attention", r.attention, d.attention);
  if (r.memory_headroom_gib) j["memory_headroom"] = *r.memory_headroom_gib;
  if (r.seq_len) j["seq_len"] = *r.seq_len;
  put("db", r.db, d.db);
  put("network_trace", r.network_trace, d.network_trace);
  put("data_loading", r.data_loading, d.data_loading);
  put("strategy", r.strategy, d.strategy);
  put("plan", r.plan, d.plan);
  const bool rank = every_key || r.command == "rank";
  if (rank) {
    j["gbs"] = r.gbs;
    j["top"] = r.top;
    put("fix", r.fix, d.fix);
    put("objective", r.objective, d.objective);
    put("replan", r.replan, d.replan);
  }
  const VarlenRequest& v = r.varlen;
  put("seq_lengths", v.lengths_file, d.varlen.lengths_file);
  put("seq_dist", v.dist, d.varlen.dist);
  if (every_key || v.given()) {
    j["seed"] = v.seed;
    j["batches"] = v.batches;
    put("long_seqs", v.long_seqs, d.varlen.long_seqs);
    put("pad_to", v.pad_to, d.varlen.pad_to);
    put("batch_tokens", v.batch_tokens, d.varlen.batch_tokens);
  }
  put("epoch_samples", r.epoch_samples, d.epoch_samples);
  put("optimizer", r.optimizer, d.optimizer);
  return j;
}

PlanRequest plan_request_from_json(const nlohmann::json& j, std::string_view origin) {
  const std::string where = fmt::format("request {}", origin);
  if (!j.is_object())
    throw InputError(
        fmt::format("{}: not a JSON object; give {{\"command\": \"estimate\", "
                    "\"model\": ..., \"cluster\": ..., \"strategy\": ...}}",
                    where));
  JsonFields f(j, where);
  f.reject_unknown({"command",       "model",           "cluster",   "gpus",        "software",
                    "attention",     "memory_headroom", "seq_len",   "db",          "network_trace",
                    "data_loading",  "strategy",        "plan",      "gbs",         "top",
                    "fix",           "objective",       "replan",    "seq_lengths", "seq_dist",
                    "seed",          "batches",         "long_seqs", "pad_to",      "batch_tokens",
                    "epoch_samples", "optimizer"});
  PlanRequest r;
  r.command = f.optional_string("command").value_or("estimate");
  if (r.command != "estimate" && r.command != "rank")
    f.fail("command",
           fmt::format("'{}' is not a command a request runs; use estimate or rank (the Python "
                       "module runs place, split-learning, shard-tables and schedule too)",
                       r.command));
  r.model = f.required_string("model");
  r.cluster = f.required_string("cluster");
  r.gpus = f.optional_int("gpus", 1);
  r.software = f.optional_string("software").value_or("");
  r.attention = f.optional_string("attention").value_or("");
  r.memory_headroom_gib = f.optional_number("memory_headroom", 0);
  r.seq_len = f.optional_int("seq_len", 1);
  r.db = f.optional_string("db").value_or("");
  r.network_trace = f.optional_string("network_trace").value_or("");
  r.data_loading = f.optional_string("data_loading").value_or("");
  r.strategy = f.optional_string("strategy").value_or("");
  r.plan = f.optional_string("plan").value_or("");
  r.gbs = f.optional_int("gbs", 0).value_or(0);  // 0: not given (an estimate's)
  r.top = f.optional_int("top", 1).value_or(r.top);
  r.fix = f.optional_string("fix").value_or("");
  r.objective = f.optional_string("objective").value_or(r.objective);
  r.replan = f.optional_bool("replan").value_or(false);
  VarlenRequest& v = r.varlen;
  v.lengths_file = f.optional_string("seq_lengths").value_or("");
  v.dist = f.optional_string("seq_dist").value_or("");
  if (j.contains("seed")) {
    const nlohmann::json& s = j.at("seed");
    if (!s.is_number_unsigned()) f.fail("seed", "must be a whole number from 0");
    v.seed = s.get<uint64_t>();
  }
  v.batches = f.optional_int("batches", 1).value_or(v.batches);
  v.long_seqs = f.optional_string("long_seqs").value_or(v.long_seqs);
  v.pad_to = f.optional_int("pad_to", 0).value_or(0);
  if (j.contains("batch_tokens")) {
    const nlohmann::json& t = j.at("batch_tokens");
    if (!t.is_number_integer() || t.get<int64_t>() < 0)
      f.fail("batch_tokens", "must be a whole number of tokens from 0");
    v.batch_tokens = t.get<int64_t>();
  }
  r.epoch_samples = f.optional_number("epoch_samples", 0).value_or(0);
  r.optimizer = f.optional_string("optimizer").value_or(r.optimizer);
  if (r.command == "rank" && r.gbs < 1) f.fail("gbs", "rank needs the global batch, gbs");
  if (r.command == "estimate" && r.strategy.empty() == r.plan.empty())
    f.fail("strategy", "an estimate takes a strategy string or a plan file, one of the two");
  if (!v.lengths_file.empty() && !v.dist.empty())
    f.fail("seq_dist", "give seq_lengths or seq_dist, not both");
  return r;
}

PlanRequest load_plan_request(std::string_view path) {
  const std::string text = read_text_file(path, "request file");
  // Strict as every input file: a key given twice, nesting past any request, refused.
  const nlohmann::json j = parse_json_text(text, fmt::format("request file '{}'", path));
  // The JSON an estimate or rank printed holds the request that made it.
  if (j.is_object() && j.contains("request") && j.at("request").is_object())
    return plan_request_from_json(j.at("request"), fmt::format("'{}' (its \"request\")", path));
  return plan_request_from_json(j, fmt::format("'{}'", path));
}

}  // namespace shardcost
