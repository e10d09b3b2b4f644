// Megatron-LM / Megatron-core training logs as measured runs: the arguments dump gives the
// model and the plan, the iteration lines the step times, the memory reports the peak.
// Formats: megatron/training/arguments.py (_print_args), training.py (training_log), utils.py
// (report_memory). docs/calibration.md states the warm-up rule.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "calibration/log_lines.h"
#include "shardcost/calibration.h"
#include "shardcost/error.h"
#include "shardcost/importers.h"

namespace shardcost {
namespace {

constexpr std::string_view kArgsBegin =
    "------------------------ arguments ------------------------";
constexpr std::string_view kArgsEnd = "-------------------- end of arguments ---------------------";

struct RunText {
  int args_line = 0;
  std::map<std::string, std::string> args;
  std::vector<logs::Interval> intervals;
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
  logs::LogRun run;
  run.model = model;
  run.cluster = std::string(cluster);
  run.gpus = gpus;
  run.strategy = strategy;
  run.software = std::string(software);
  run.kept = logs::past_warmup(r.intervals);
  if (r.peak_mb) run.peak_memory_bytes = *r.peak_mb * 1024 * 1024;
  run.label = fmt::format("{} (line {})", source, r.args_line);
  return logs::measured_run(run, where, "megatron-log", source, std::to_string(r.args_line),
                            whole_text);
}

}  // namespace

std::vector<db::Measurements> import_megatron_log(std::string_view text, std::string_view source,
                                                  std::string_view cluster,
                                                  std::string_view software) {
  std::vector<RunText> runs;
  bool in_args = false;
  bool stop = false;
  logs::for_each_line(text, [&](int line_no, std::string_view raw, bool last) {
    if (stop) return;
    const std::string cleaned = logs::clean_line(raw);
    const std::string_view line = cleaned;
    const std::string where = fmt::format("{}:{}", source, line_no);
    if (line == kArgsBegin) {
      runs.emplace_back();
      runs.back().args_line = line_no;
      in_args = true;
      return;
    }
    if (line == kArgsEnd) {
      in_args = false;
      return;
    }
    if (in_args) {
      // "name ........ value": the dots pad the name to one column.
      const size_t dots = line.find(" ..");
      if (dots == std::string_view::npos) return;
      const size_t value = line.find_first_not_of('.', dots + 1);
      if (value == std::string_view::npos) return;
      runs.back().args[std::string(logs::trim(line.substr(0, dots)))] =
          std::string(logs::trim(line.substr(value)));
      return;
    }
    if (runs.empty()) return;
    if (line.find(" iteration ") != std::string_view::npos || line.rfind("iteration ", 0) == 0) {
      const auto it = logs::number_after(line, "iteration ");
      const auto ms = logs::number_after(line, "elapsed time per iteration (ms):");
      if (!it || !ms || *ms <= 0) {
        // A log cut off mid-line (a killed job) ends with a part of a line: left out.
        if (last) {
          stop = true;
          return;
        }
        if (line.find("elapsed time per iteration") == std::string_view::npos) return;
        throw InputError(
            fmt::format("{}: an iteration line without its iteration number and elapsed time per "
                        "iteration (ms); fix or remove the line",
                        where));
      }
      runs.back().intervals.push_back({static_cast<int64_t>(*it), *ms / 1e3, line_no});
      return;
    }
    if (line.find("memory (MB)") != std::string_view::npos) {
      // Every reporting rank's peak: the most loaded GPU's is the run's. The caching
      // allocator's reserved peak is what the GPU held.
      auto peak = logs::number_after(line, "max reserved:");
      if (!peak) peak = logs::number_after(line, "max allocated:");
      if (peak) runs.back().peak_mb = std::max(runs.back().peak_mb.value_or(0), *peak);
    }
  });
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
