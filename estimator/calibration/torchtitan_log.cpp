// torchtitan runs as measured runs: the job config (TOML, torchtitan/config/job_config.py) gives
// the model and the plan, the log's metric lines (components/metrics.py: "step: N  loss: ...
// memory: X GiB(P%)  tps: T  tflops: F  mfu: M%") the steps and the peak memory. tps is tokens per
// second per device over the interval since the last line, so a step of the global batch takes
// global_batch x seq_len / (tps x GPUs).
#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <map>

#include "calibration/log_lines.h"
#include "shardcost/calibration.h"
#include "shardcost/error.h"

namespace shardcost {
namespace {

// torchtitan's model names and flavours that are catalog models.
std::optional<std::string> catalog_model(const std::string& name, const std::string& flavor) {
  static const std::map<std::pair<std::string, std::string>, std::string> known = {
      {{"llama3", "8B"}, "llama3-8b"},
      {{"llama3", "70B"}, "llama3-70b"},
      {{"llama3", "405B"}, "llama3-405b"},
      {{"deepseek_v3", "671B"}, "deepseek-v3"}};
  const auto it = known.find({name, flavor});
  if (it == known.end()) return std::nullopt;
  return it->second;
}

// The config's values with torchtitan's defaults, and one line naming the file where one is not
// what torchtitan takes.
struct Config {
  const toml::table& t;
  std::string source;
  // The value at [section] key, sections dotted ("quantize.linear.float8"); empty if absent.
  toml::node_view<const toml::node> at(std::string_view section, std::string_view key) const {
    return toml::node_view<const toml::node>{t}.at_path(section)[key];
  }
  bool has(std::string_view section) const {
    return static_cast<bool>(toml::node_view<const toml::node>{t}.at_path(section));
  }
  int64_t integer(std::string_view section, std::string_view key, int64_t fallback) const {
    const auto node = at(section, key);
    if (!node) return fallback;
    if (const auto v = node.value<int64_t>()) return *v;
    throw InputError(fmt::format("{}: [{}] {} is not an integer", source, section, key));
  }
  std::string text(std::string_view section, std::string_view key, std::string fallback) const {
    const auto node = at(section, key);
    if (!node) return fallback;
    if (const auto v = node.value<std::string>()) return *v;
    if (const auto v = node.value<int64_t>()) return std::to_string(*v);
    throw InputError(fmt::format("{}: [{}] {} is not a string", source, section, key));
  }
  bool flag(std::string_view section, std::string_view key, bool fallback) const {
    const auto node = at(section, key);
    if (!node) return fallback;
    if (const auto v = node.value<bool>()) return *v;
    throw InputError(fmt::format("{}: [{}] {} is not true or false", source, section, key));
  }
  std::vector<std::string> list(std::string_view section, std::string_view key) const {
    std::vector<std::string> out;
    const auto node = at(section, key);
    if (const auto* a = node.as_array()) {
      for (const auto& e : *a)
        if (const auto v = e.value<std::string>()) out.push_back(*v);
    } else if (const auto v = node.value<std::string>()) {
      out.push_back(*v);  // "--model.converters float8" given as one string
    }
    return out;
  }
  [[noreturn]] void refuse(const std::string& what) const {
    throw InputError(fmt::format("{}: {}", source, what));
  }
};

// The world size the log's device mesh names ("Building 2-D device mesh with ['dp_shard',
// 'tp'], [4, 2]"), where it names one.
std::optional<int> mesh_gpus(std::string_view line) {
  const size_t at = line.find("device mesh with");
  if (at == std::string_view::npos) return std::nullopt;
  const size_t open = line.rfind('[');
  const size_t close = line.rfind(']');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open ||
      open < at)
    return std::nullopt;
  int64_t product = 1;
  std::string digits;
  for (char c : std::string(line.substr(open + 1, close - open - 1)) + ",") {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits.push_back(c);
    } else if (c == ',') {
      if (digits.empty() || digits.size() > 6) return std::nullopt;
      product *= std::stoll(digits);
      if (product > (1 << 20)) return std::nullopt;
      digits.clear();
    } else if (c != ' ') {
      return std::nullopt;
    }
  }
  return static_cast<int>(product);
}

struct TitanPlan {
  Model model;
  std::string strategy;
  // The stack's keys the config sets (torch.compile, torchao's float8), "key=value,...".
  std::string software_keys;
  int64_t global_batch = 0;  // -1: local x the data-parallel degree
  int64_t local = 0;         // sequences per data-parallel rank and step
  std::optional<int> gpus;   // what the degrees fix without the log or --gpus
};

bool has_converter(const Config& cfg, std::string_view name) {
  const auto c = cfg.list("model", "converters");
  return std::find(c.begin(), c.end(), name) != c.end();
}

// Whether a list of module names quantizes the routed experts: torchtitan converts the MoE
// modules whose name contains an entry (moe_module_filter_fn: `target_fqn in cur_fqn`), and its
// routed experts live at layers.N.moe.experts.
bool names_experts(const std::vector<std::string>& fqns) {
  return std::any_of(fqns.begin(), fqns.end(), [](const std::string& f) {
    return !f.empty() && (std::string_view("moe.experts").find(f) != std::string_view::npos ||
                          f.find("experts") != std::string::npos);
  });
}

// torchao's MXFP8 as the config sets it: [mx] (2025-05 to 09: recipe_name "mxfp8", then
// "mxfp8_cublas"; use_fp8_dim1_cast_triton_kernel until 2025-07-24, then
// mxfp8_dim1_cast_kernel_choice) or [quantize.linear.mx] (2025-09-30 on); the experts by the
// quantize.grouped_mm.mx converter's fqns.
void mx_keys(const Config& cfg, std::vector<std::string>& keys) {
  const char* section = cfg.has("quantize.linear.mx") ? "quantize.linear.mx" : "mx";
  const std::string recipe = cfg.text(section, "recipe_name", "mxfp8_cublas");
  if (recipe.rfind("mxfp8", 0) != 0 || recipe == "mxfp8_emulated")
    cfg.refuse(fmt::format(
        "[{}] recipe_name \"{}\" is not modelled; shardcost prices torchao's MXFP8 recipes on "
        "Blackwell's MX GEMMs (mxfp8, mxfp8_cublas, mxfp8_cublas_rceil)",
        section, recipe));
  std::string dim1 = cfg.text(section, "mxfp8_dim1_cast_kernel_choice", "triton");
  if (!cfg.flag(section, "use_fp8_dim1_cast_triton_kernel", true)) dim1 = "torch";
  if (dim1 != "triton" && dim1 != "cuda" && dim1 != "torch")
    cfg.refuse(fmt::format("[{}] mxfp8_dim1_cast_kernel_choice \"{}\" is not triton, cuda or torch",
                           section, dim1));
  if (dim1 != "triton") keys.push_back("mx_dim1_cast=" + dim1);
  // ([mx] moe_fqns_prototype only aligned the token groups: its converter swapped nn.Linear
  // modules alone.)
  if (has_converter(cfg, "quantize.grouped_mm.mx") &&
      names_experts(cfg.list("quantize.grouped_mm.mx", "fqns")))
    keys.push_back("quantize_experts=true");
}

// torch.compile and torchao's float8 and MXFP8 as the config sets them: [training] compile
// (2024-25; the loss compiled with the model since torchtitan of 2025-04) or [compile] enable
// with its components (2025-08 on, ["model", "loss"] by default); [float8] (2024-25) or
// [quantize.linear.float8] (2025-09-30 on) recipe_name and enable_fsdp_float8_all_gather, the
// experts by [float8] moe_fqns_prototype or the quantize.grouped_mm.float8 converter's fqns.
// The quantize.linear.float8 converter under tensor parallelism ran the plain TP styles: from
// 2025-09-30 to 2026-02-23 (when TOML configs went) torchtitan's parallelize.py looked for
// "float8" among the converters to apply its float8 ones.
std::string stack_keys(const Config& cfg, std::string_view precision, int64_t tp) {
  const bool float8 = precision == "fp8";
  std::vector<std::string> keys;
  const bool old_compile = cfg.flag("training", "compile", false);
  if (old_compile || cfg.flag("compile", "enable", false)) {
    std::vector<std::string> parts = cfg.list("compile", "components");
    if (old_compile || !cfg.at("compile", "components")) parts = {"model", "loss"};
    const bool model = std::find(parts.begin(), parts.end(), "model") != parts.end();
    const bool loss = std::find(parts.begin(), parts.end(), "loss") != parts.end();
    if (model) keys.push_back("compile=true");
    if (model && !loss) keys.push_back("cross_entropy=unfused");
    if (!model && loss) keys.push_back("cross_entropy=compiled");
  }
  if (float8) {
    const char* section = cfg.has("quantize.linear.float8") ? "quantize.linear.float8" : "float8";
    const std::string recipe = cfg.text(section, "recipe_name", "tensorwise");
    if (recipe == "rowwise")
      keys.push_back("float8_recipe=rowwise");
    else if (recipe != "tensorwise")
      cfg.refuse(fmt::format(
          "[{}] recipe_name \"{}\" is not modelled; shardcost prices torchao's tensorwise and "
          "rowwise recipes",
          section, recipe));
    if (cfg.flag(section, "enable_fsdp_float8_all_gather", false)) {
      // torchtitan takes the float8 all-gather on its default (tensorwise) path only: a
      // recipe_name given beside it, even "tensorwise", fails its assertion.
      if (cfg.at(section, "recipe_name"))
        cfg.refuse(fmt::format(
            "[{}] enable_fsdp_float8_all_gather with recipe_name \"{}\": torchtitan refuses the "
            "pair (the all-gather runs on the default tensorwise path only); drop one",
            section, recipe));
      if (!cfg.flag(section, "precompute_float8_dynamic_scale_for_fsdp", false))
        cfg.refuse(fmt::format(
            "[{}] enable_fsdp_float8_all_gather without precompute_float8_dynamic_scale_for_fsdp "
            "is not modelled (each gather would take every weight's amax and all-reduce it); "
            "shardcost prices the all-gather with the scales computed once a step",
            section));
      keys.push_back("float8_all_gather=true");
    }
    const bool grouped = has_converter(cfg, "quantize.grouped_mm.float8") &&
                         names_experts(cfg.list("quantize.grouped_mm.float8", "fqns"));
    if (grouped || names_experts(cfg.list("float8", "moe_fqns_prototype")))
      keys.push_back("quantize_experts=true");
    if (tp > 1 && has_converter(cfg, "quantize.linear.float8") && !has_converter(cfg, "float8"))
      keys.push_back("float8_tp=false");
  }
  if (precision == "mxfp8") mx_keys(cfg, keys);
  std::string out;
  for (const std::string& k : keys) out += (out.empty() ? "" : ",") + k;
  return out;
}

TitanPlan read_config(const Config& cfg, const LogImport& opt) {
  TitanPlan p;
  const std::string name = cfg.text("model", "name", "llama3");
  const std::string flavor = cfg.text("model", "flavor", "debugmodel");
  if (!opt.model.empty()) {
    p.model = load_model(opt.model);
  } else if (const auto known = catalog_model(name, flavor)) {
    p.model = load_model(*known);
  } else {
    cfg.refuse(fmt::format(
        "[model] name '{}' flavor '{}' is not a catalog model; give it with --model (a catalog "
        "name or a model file)",
        name, flavor));
  }
  const int64_t seq = cfg.integer("training", "seq_len", 2048);
  if (seq <= 0 || seq > (1 << 24)) cfg.refuse("[training] seq_len is not a sequence length");
  p.model.seq_len = static_cast<int>(seq);
  // Older configs name the per-rank batch batch_size.
  const int64_t local =
      cfg.integer("training", "local_batch_size", cfg.integer("training", "batch_size", 8));
  const int64_t tp = cfg.integer("parallelism", "tensor_parallel_degree", 1);
  const int64_t pp = cfg.integer("parallelism", "pipeline_parallel_degree", 1);
  const int64_t cp = cfg.integer("parallelism", "context_parallel_degree", 1);
  const int64_t ep = cfg.integer("parallelism", "expert_parallel_degree", 1);
  const int64_t replicate = cfg.integer("parallelism", "data_parallel_replicate_degree", 1);
  const int64_t shard = cfg.integer("parallelism", "data_parallel_shard_degree", -1);
  for (const auto& [key, v] : {std::pair<const char*, int64_t>{"local_batch_size", local},
                               {"tensor_parallel_degree", tp},
                               {"pipeline_parallel_degree", pp},
                               {"context_parallel_degree", cp},
                               {"expert_parallel_degree", ep},
                               {"data_parallel_replicate_degree", replicate}})
    if (v < 1 || v > (1 << 20)) cfg.refuse(fmt::format("{} is {}, not a positive degree", key, v));
  if (shard == 0 || shard < -1 || shard > (1 << 20))
    cfg.refuse(
        fmt::format("data_parallel_shard_degree is {}; give -1 (the rest) or a degree", shard));
  if (replicate > 1 && shard != 1)
    cfg.refuse(fmt::format(
        "HSDP (data_parallel_replicate_degree {} with data_parallel_shard_degree {}) is not "
        "modelled; shardcost prices FSDP over the whole data-parallel group, or DDP "
        "(data_parallel_shard_degree 1)",
        replicate, shard == -1 ? "-1, the rest" : std::to_string(shard)));
  if (cfg.flag("training", "enable_cpu_offload", false))
    cfg.refuse("[training] enable_cpu_offload: FSDP's CPU offload is not modelled");
  if (cfg.text("parallelism", "fsdp_reshard_after_forward", "default") == "never")
    cfg.refuse(
        "fsdp_reshard_after_forward = \"never\" is not modelled (the torchtitan preset prices "
        "FSDP2 resharding after forward, its default)");
  // The pipeline schedule: 1F1B, or interleaved with stages per rank from the layers per stage.
  int64_t vpp = 1;
  if (pp > 1) {
    const std::string schedule = cfg.text("parallelism", "pipeline_parallel_schedule", "1F1B");
    if (schedule == "Interleaved1F1B") {
      const int64_t per_stage = cfg.integer("parallelism", "pipeline_parallel_layers_per_stage", 0);
      if (per_stage <= 0 || p.model.layers % (per_stage * pp) != 0)
        cfg.refuse(fmt::format(
            "Interleaved1F1B needs pipeline_parallel_layers_per_stage dividing the model's {} "
            "layers over the {} ranks; give it",
            p.model.layers, pp));
      vpp = p.model.layers / (per_stage * pp);
    } else if (schedule != "1F1B") {
      cfg.refuse(
          fmt::format("pipeline_parallel_schedule '{}' is not modelled; shardcost prices 1F1B and "
                      "Interleaved1F1B",
                      schedule));
    }
  }
  const int64_t mbs =
      pp > 1 ? cfg.integer("parallelism", "pipeline_parallel_microbatch_size", 1) : local;
  if (mbs < 1 || local % mbs != 0)
    cfg.refuse(fmt::format(
        "pipeline_parallel_microbatch_size {} does not divide local_batch_size {}", mbs, local));
  // Activation checkpointing.
  const std::string mode = cfg.text("activation_checkpoint", "mode", "selective");
  std::string recompute;
  if (mode == "none") {
    recompute = "none";
  } else if (mode == "full") {
    recompute = "full";
  } else if (mode == "selective") {
    const std::string option = cfg.text("activation_checkpoint", "selective_ac_option", "2");
    if (option == "op")
      recompute = "selective,recompute_modules=ops";
    else if (option == "1")
      recompute = "full";  // every layer checkpointed whole
    else
      cfg.refuse(fmt::format(
          "selective_ac_option \"{}\" (every {}th layer checkpointed whole) is not modelled; "
          "shardcost prices \"op\" (per-op) and full checkpointing",
          option, option));
  } else {
    cfg.refuse(fmt::format("activation_checkpoint mode '{}' is not none, selective or full", mode));
  }
  std::string precision =
      cfg.text("training", "mixed_precision_param", "bfloat16") == "float32" ? "fp32" : "bf16";
  for (const std::string& c : cfg.list("model", "converters")) {
    if (c == "float8" || c == "quantize.linear.float8") precision = "fp8";
    if (c == "mx" || c == "quantize.linear.mx") precision = "mxfp8";
  }
  // Older configs: [float8] enable_float8_linear.
  if (cfg.flag("float8", "enable_float8_linear", false)) precision = "fp8";
  for (const char* grouped : {"quantize.grouped_mm.float8", "quantize.grouped_mm.mx"})
    if (has_converter(cfg, grouped) && precision != "fp8" && precision != "mxfp8")
      cfg.refuse(fmt::format(
          "[model] converters has {} without a linear converter: experts quantized beside 16-bit "
          "linears are not modelled; add quantize.linear.float8 or quantize.linear.mx",
          grouped));
  // torchtitan asserts that its quantize.* converters share one type.
  if ((precision == "fp8" && has_converter(cfg, "quantize.grouped_mm.mx")) ||
      (precision == "mxfp8" && has_converter(cfg, "quantize.grouped_mm.float8")))
    cfg.refuse(
        "[model] converters mixes float8 and MX quantize converters, which torchtitan refuses; "
        "give one type");
  p.software_keys = stack_keys(cfg, precision, tp);
  // Expert parallelism: the routed experts on ep ranks folded from dp_shard, cp and tp (etp 1,
  // torchtitan's default) or beside tp (etp = tp); its DeepEP backend (2025-12 on) sends one
  // copy a node, as the flex dispatcher prices.
  std::string expert_keys;
  if (ep > 1) {
    const int64_t etp = cfg.integer("parallelism", "expert_tensor_parallel_degree", 1);
    if (etp != 1 && etp != tp)
      cfg.refuse(fmt::format(
          "expert_tensor_parallel_degree is {}; torchtitan takes 1 or the tensor-parallel "
          "degree ({})",
          etp, tp));
    expert_keys = fmt::format(",etp={}", etp);
    const std::string backend = cfg.text("parallelism", "expert_parallel_comm_backend", "standard");
    if (backend == "deepep")
      p.software_keys += std::string(p.software_keys.empty() ? "" : ",") + "ep_dispatcher=flex";
    else if (backend != "standard")
      cfg.refuse(fmt::format(
          "expert_parallel_comm_backend \"{}\" is not modelled; shardcost prices \"standard\" "
          "(all_to_all_single) and \"deepep\"",
          backend));
  }
  if (shard > 0) p.gpus = static_cast<int>(replicate * shard * tp * pp * cp);
  const int64_t global = cfg.integer("training", "global_batch_size", -1);
  p.global_batch = global;
  p.local = local;
  p.strategy = fmt::format(
      "tp={},pp={},cp={},ep={}{},mbs={},vpp={},sp={},zero={},recompute={},"
      "precision={}",
      tp, pp, cp, ep, expert_keys, mbs, vpp, tp > 1 ? "true" : "false",
      shard > 1 || (shard == -1 && replicate == 1) ? 3 : 0, recompute, precision);
  return p;
}

struct StepLine {
  int64_t step = 0;
  double tps = 0;
  int line = 0;
  bool restart = false;
};

}  // namespace

std::vector<db::Measurements> import_torchtitan_log(std::string_view log, std::string_view source,
                                                    const LogImport& opt) {
  if (opt.config_text.empty())
    throw InputError(
        fmt::format("{}: a torchtitan log needs its job config: give --config FILE", source));
  toml::table table;
  try {
    table = toml::parse(opt.config_text, opt.config_source);
  } catch (const toml::parse_error& e) {
    throw InputError(fmt::format("{}:{}:{}: {}", opt.config_source, e.source().begin.line,
                                 e.source().begin.column, e.description()));
  }
  const Config cfg{table, opt.config_source};
  TitanPlan plan = read_config(cfg, opt);

  // The log: runs (a start at step 1 begins one; a resume continues it), each rank's lines.
  struct Run {
    int line = 0;
    std::map<int, std::vector<StepLine>> by_rank;
    std::optional<double> peak_gib;
  };
  std::vector<Run> runs;
  std::optional<int> mesh;
  bool restart = false, stop = false;
  logs::for_each_line(log, [&](int line_no, std::string_view raw, bool last) {
    if (stop) return;
    const std::string line = logs::clean_line(raw);
    const std::string where = fmt::format("{}:{}", source, line_no);
    if (const auto g = mesh_gpus(line)) {
      if (mesh && *mesh != *g)
        throw InputError(fmt::format(
            "{}: a device mesh of {} GPUs after one of {}; import each job's log on its own", where,
            *g, *mesh));
      mesh = g;
      return;
    }
    if (const auto start = logs::number_after(line, "Training starts at step")) {
      if (*start <= 1 || runs.empty()) runs.push_back({line_no, {}, {}});
      restart = true;
      return;
    }
    const size_t at = line.find("step:");
    if (at == std::string::npos || line.find("validate step:") != std::string::npos ||
        line.find("tps:") == std::string::npos) {
      if (at != std::string::npos && last && line.find("loss:") != std::string::npos) stop = true;
      return;
    }
    const auto step = logs::number_after(line, "step:");
    const auto tps = logs::number_after(line, "tps:", true);
    if (!step || !tps || *tps <= 0 || *step < 1 || *step > 1e12) {
      if (last) {  // a log cut off mid-line
        stop = true;
        return;
      }
      throw InputError(fmt::format(
          "{}: a metrics line without a step number and a positive tps; fix or remove the line",
          where));
    }
    if (runs.empty()) runs.push_back({line_no, {}, {}});
    Run& run = runs.back();
    const int rank = logs::line_rank(raw).value_or(0);
    auto& lines = run.by_rank[rank];
    // A start without its "Training starts" line: the steps begin again.
    if (!lines.empty() && *step <= lines.back().step && !restart && *step <= 1) {
      runs.push_back({line_no, {}, {}});
      runs.back().by_rank[rank].push_back({static_cast<int64_t>(*step), *tps, line_no, true});
    } else {
      lines.push_back({static_cast<int64_t>(*step), *tps, line_no, restart});
    }
    restart = false;
    if (const auto gib = logs::number_after(line, "memory:"))
      runs.back().peak_gib = std::max(runs.back().peak_gib.value_or(0), *gib);
  });
  if (runs.empty())
    throw InputError(fmt::format(
        "{}: no torchtitan metrics line ('step: N  loss: ...  tps: ...'); is it the log of a "
        "torchtitan training run?",
        source));
  // The GPUs: the log's mesh, the config's degrees, --gpus; they must agree.
  std::optional<int> gpus = mesh ? mesh : plan.gpus;
  if (opt.gpus) {
    if (gpus && *gpus != *opt.gpus)
      throw InputError(
          fmt::format("{}: --gpus {} but the run used {} GPUs", source, *opt.gpus, *gpus));
    gpus = opt.gpus;
  }
  if (!gpus)
    throw InputError(
        fmt::format("{}: neither the log (its device mesh line) nor the config "
                    "(data_parallel_shard_degree -1) fixes the GPUs; give --gpus",
                    source));
  const Strategy probe = [&] {
    try {
      return parse_strategy(plan.strategy, *gpus);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", opt.config_source, e.what()));
    }
  }();
  const int64_t global = plan.global_batch > 0 ? plan.global_batch : plan.local * probe.dp;
  plan.strategy += fmt::format(",gbs={}", global);
  const double tokens_per_step = static_cast<double>(global) * plan.model.seq_len;

  std::vector<db::Measurements> out;
  for (const Run& run : runs) {
    if (run.by_rank.empty()) continue;
    // The lowest rank that logs steps times them (all ranks' steps are one step).
    const std::vector<StepLine>& lines = run.by_rank.begin()->second;
    std::vector<logs::Interval> intervals;
    for (const StepLine& l : lines)
      intervals.push_back({l.step, tokens_per_step / (l.tps * *gpus), l.line, l.restart});
    logs::LogRun r;
    r.model = plan.model;
    r.cluster = opt.cluster;
    r.gpus = *gpus;
    r.strategy = plan.strategy;
    // The config's stack keys after the given stack's own ("torchtitan:compile=true").
    r.software = opt.software;
    if (!plan.software_keys.empty())
      r.software += (r.software.find(':') == std::string::npos ? ":" : ",") + plan.software_keys;
    r.kept = logs::past_warmup(intervals);
    if (run.peak_gib) r.peak_memory_bytes = *run.peak_gib * 1024 * 1024 * 1024;
    r.label = fmt::format("{} (line {})", source, run.line);
    out.push_back(logs::measured_run(r, fmt::format("{}:{}", source, run.line), "torchtitan-log",
                                     source, std::to_string(run.line),
                                     std::string(log) + opt.config_text));
  }
  return out;
}

}  // namespace shardcost
