// Megatron-LM / Megatron-core training logs as measured runs: the arguments dump gives the
// model and the plan, the iteration lines the step times, the memory reports the peak.
// Formats: megatron/training/arguments.py (_print_args), training.py (training_log), utils.py
// (report_memory). docs/calibration.md states the warm-up rule.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "shardcost/calibration.h"
#include "shardcost/error.h"
#include "shardcost/importers.h"
#include "shardcost/quantiles.h"

namespace shardcost {
namespace {

constexpr std::string_view kArgsBegin =
    "------------------------ arguments ------------------------";
constexpr std::string_view kArgsEnd = "-------------------- end of arguments ---------------------";
// Iterations the warm-up takes: no interval that includes one of these is kept, nor the first
// interval logged after a start or a restart (it holds the allocator's and NCCL's first work).
constexpr int64_t kWarmupIterations = 10;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// What launchers put before a rank's line: srun -l's "12: ", torchrun's "[default3]:" or
// "[rank3]:".
std::string_view strip_rank_prefix(std::string_view line) {
  std::string_view s = line;
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i > 0 && i < s.size() && s[i] == ':') return s.substr(i + 1);
  if (s.rfind("[default", 0) == 0 || s.rfind("[rank", 0) == 0) {
    const size_t close = s.find("]:");
    if (close != std::string_view::npos) return s.substr(close + 2);
  }
  return line;
}

std::optional<double> number_after(std::string_view line, std::string_view key) {
  const size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = trim(line.substr(at + key.size()));
  size_t end = 0;
  while (end < rest.size() &&
         (std::isdigit(static_cast<unsigned char>(rest[end])) || rest[end] == '.' ||
          rest[end] == 'e' || rest[end] == 'E' || rest[end] == '+' || rest[end] == '-'))
    ++end;
  try {
    size_t used = 0;
    const double v = std::stod(std::string(rest.substr(0, end)), &used);
    if (used == 0 || !std::isfinite(v)) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

struct Interval {
  int64_t iteration = 0;  // the last iteration of the interval
  double ms = 0;          // the mean per iteration over it
  int line = 0;
};

struct RunText {
  int args_line = 0;
  std::map<std::string, std::string> args;
  std::vector<Interval> intervals;
  std::optional<double> peak_mb;
};

std::string arg(const RunText& r, const std::string& key, const std::string& where) {
  const auto it = r.args.find(key);
  if (it == r.args.end())
    throw InputError(
        fmt::format("{}: the arguments dump has no {}; it is not a Megatron-LM "
                    "arguments dump this importer reads",
                    where, key));
  return it->second;
}
std::optional<std::string> opt_arg(const RunText& r, const std::string& key) {
  const auto it = r.args.find(key);
  if (it == r.args.end() || it->second == "None") return std::nullopt;
  return it->second;
}
int int_arg(const RunText& r, const std::string& key, const std::string& where) {
  const std::string v = arg(r, key, where);
  try {
    size_t used = 0;
    const long long x = std::stoll(v, &used);
    if (used == v.size() && x > 0 && x < (1LL << 31)) return static_cast<int>(x);
  } catch (const std::exception&) {
  }
  throw InputError(fmt::format("{}: {} is '{}', not a positive integer", where, key, v));
}
int opt_int_arg(const RunText& r, const std::string& key, int fallback, const std::string& where) {
  return opt_arg(r, key) ? int_arg(r, key, where) : fallback;
}
bool bool_arg(const RunText& r, const std::string& key, bool fallback) {
  const auto v = opt_arg(r, key);
  return v ? *v == "True" : fallback;
}

db::Measurements to_run(const RunText& r, std::string_view source, std::string_view cluster,
                        std::string_view software, std::string_view whole_text) {
  const std::string where = fmt::format("{}:{}", source, r.args_line);
  // The model, as a model file would give it.
  nlohmann::json m;
  const int layers = int_arg(r, "num_layers", where), hidden = int_arg(r, "hidden_size", where);
  const int heads = int_arg(r, "num_attention_heads", where);
  m["name"] = fmt::format("megatron {}x{}", layers, hidden);
  m["layers"] = layers;
  m["hidden"] = hidden;
  m["heads"] = heads;
  m["kv_heads"] =
      bool_arg(r, "group_query_attention", false) ? int_arg(r, "num_query_groups", where) : heads;
  if (const int kv = opt_int_arg(r, "kv_channels", 0, where); kv > 0 && kv * heads != hidden)
    m["head_dim"] = kv;
  m["ffn_hidden"] = opt_int_arg(r, "ffn_hidden_size", 4 * hidden, where);
  m["vocab"] = opt_arg(r, "padded_vocab_size") ? int_arg(r, "padded_vocab_size", where)
                                               : int_arg(r, "vocab_size", where);
  m["seq_len"] = int_arg(r, "seq_length", where);
  m["activation"] = bool_arg(r, "swiglu", false) ? "swiglu" : "gelu";
  m["norm"] =
      opt_arg(r, "normalization").value_or("LayerNorm") == "RMSNorm" ? "rmsnorm" : "layernorm";
  m["position_embedding"] =
      opt_arg(r, "position_embedding_type").value_or("learned_absolute") == "rope" ? "rope"
                                                                                   : "learned";
  m["bias"] = bool_arg(r, "add_bias_linear", true);
  m["tied_embeddings"] = !bool_arg(r, "untie_embeddings_and_output_weights", false);
  if (const auto d = opt_arg(r, "hidden_dropout")) m["dropout"] = std::stod(*d);
  if (opt_arg(r, "num_experts")) {
    nlohmann::json e;
    e["experts"] = int_arg(r, "num_experts", where);
    e["top_k"] = opt_int_arg(r, "moe_router_topk", 2, where);
    if (opt_arg(r, "moe_ffn_hidden_size"))
      e["moe_intermediate_size"] = int_arg(r, "moe_ffn_hidden_size", where);
    m["moe"] = e;
  }
  Model model;
  try {
    model = parse_model_json(m.dump(), "the model");
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", where, e.what()));
  }
  // The plan.
  const int gpus = int_arg(r, "world_size", where);
  const auto recompute = opt_arg(r, "recompute_granularity");
  std::string precision = bool_arg(r, "bf16", false)   ? "bf16"
                          : bool_arg(r, "fp16", false) ? "fp16"
                                                       : "fp32";
  if (opt_arg(r, "fp8")) precision = "fp8";
  const std::string strategy = fmt::format(
      "tp={},pp={},cp={},ep={},mbs={},gbs={},vpp={},sp={},zero={},recompute={},precision={}",
      opt_int_arg(r, "tensor_model_parallel_size", 1, where),
      opt_int_arg(r, "pipeline_model_parallel_size", 1, where),
      opt_int_arg(r, "context_parallel_size", 1, where),
      opt_int_arg(r, "expert_model_parallel_size", 1, where), int_arg(r, "micro_batch_size", where),
      int_arg(r, "global_batch_size", where),
      opt_int_arg(r, "virtual_pipeline_model_parallel_size", 1, where),
      bool_arg(r, "sequence_parallel", false) ? "true" : "false",
      bool_arg(r, "use_distributed_optimizer", false) ? 1 : 0,
      recompute ? (*recompute == "full" ? "full" : "selective") : "none", precision);
  // The step: the intervals past the warm-up.
  std::vector<double> ms;
  int64_t steps = 0, previous = -1;
  bool first = true;
  for (const Interval& i : r.intervals) {
    const bool restart = previous >= 0 && i.iteration <= previous;
    if (restart) first = true;
    const int64_t covered = first || restart ? 0 : i.iteration - previous;
    if (!first && i.iteration - covered >= kWarmupIterations) {
      ms.push_back(i.ms);
      steps += covered;
    }
    first = false;
    previous = i.iteration;
  }
  if (ms.empty())
    throw InputError(fmt::format(
        "{}: the run logs no iteration past its warm-up (the first interval logged and the "
        "first {} iterations are left out); log more iterations",
        where, kWarmupIterations));
  MeasuredFigures f;
  f.step_s = percentile(ms, 0.5) / 1e3;
  if (ms.size() >= 3) {
    f.step_p10_s = percentile(ms, 0.1) / 1e3;
    f.step_p90_s = percentile(ms, 0.9) / 1e3;
  }
  f.steps = steps;
  if (r.peak_mb) f.peak_memory_bytes = *r.peak_mb * 1024 * 1024;
  try {
    const Cluster c = load_cluster(cluster, gpus);
    const Strategy s = parse_strategy(strategy, c.total_gpus());
    const Software sw = parse_software(software);
    if (const auto why = check_strategy(model, c, s)) throw InputError(*why);
    f.tokens_per_s = static_cast<double>(s.gbs) * model.seq_len / f.step_s;
    db::Measurements out;
    out.measured = measured_record(model, cluster, c, s, sw, f,
                                   fmt::format("{} (line {})", source, r.args_line));
    out.measured->source_kind = "megatron-log";
    out.measured->content_hash = db::content_uuid("megatron-log", whole_text);
    out.run.tool = "megatron-log";
    out.run.source = std::string(source);
    out.run.uuid = db::content_uuid(fmt::format("megatron-log-{}", r.args_line), whole_text);
    return out;
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", where, e.what()));
  }
}

}  // namespace

std::vector<db::Measurements> import_megatron_log(std::string_view text, std::string_view source,
                                                  std::string_view cluster,
                                                  std::string_view software) {
  std::vector<RunText> runs;
  bool in_args = false;
  int line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const bool last = end == std::string_view::npos;
    if (last) end = text.size();
    const std::string_view raw = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    const std::string_view line = trim(strip_rank_prefix(raw));
    const std::string where = fmt::format("{}:{}", source, line_no);
    if (line == kArgsBegin) {
      runs.emplace_back();
      runs.back().args_line = line_no;
      in_args = true;
      continue;
    }
    if (line == kArgsEnd) {
      in_args = false;
      continue;
    }
    if (in_args) {
      // "name ........ value": the dots pad the name to one column.
      const size_t dots = line.find(" ..");
      if (dots == std::string_view::npos) continue;
      const size_t value = line.find_first_not_of('.', dots + 1);
      if (value == std::string_view::npos) continue;
      runs.back().args[std::string(trim(line.substr(0, dots)))] =
          std::string(trim(line.substr(value)));
      continue;
    }
    if (runs.empty()) continue;
    if (line.find(" iteration ") != std::string_view::npos || line.rfind("iteration ", 0) == 0) {
      const auto it = number_after(line, "iteration ");
      const auto ms = number_after(line, "elapsed time per iteration (ms):");
      if (!it || !ms || *ms <= 0) {
        // A log cut off mid-line (a killed job) ends with a part of a line: left out.
        if (last) break;
        if (line.find("elapsed time per iteration") == std::string_view::npos) continue;
        throw InputError(
            fmt::format("{}: an iteration line without its iteration number and elapsed time per "
                        "iteration (ms); fix or remove the line",
                        where));
      }
      runs.back().intervals.push_back({static_cast<int64_t>(*it), *ms, line_no});
      continue;
    }
    if (line.find("memory (MB)") != std::string_view::npos) {
      // Every reporting rank's peak: the most loaded GPU's is the run's. The caching
      // allocator's reserved peak is what the GPU held.
      auto peak = number_after(line, "max reserved:");
      if (!peak) peak = number_after(line, "max allocated:");
      if (peak) runs.back().peak_mb = std::max(runs.back().peak_mb.value_or(0), *peak);
    }
  }
  if (runs.empty())
    throw InputError(
        fmt::format("{}: no Megatron-LM arguments dump ('{}'); the log must hold "
                    "the arguments Megatron prints at its start",
                    source, kArgsBegin));
  std::vector<db::Measurements> out;
  for (const RunText& r : runs) out.push_back(to_run(r, source, cluster, software, text));
  return out;
}

}  // namespace shardcost
