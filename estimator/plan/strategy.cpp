// Strategy text, and the rules a strategy must satisfy before it can be priced: the ones of
// every workload here, the model's own from its producer (Workload::check).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <limits>

#include "estimate_internal.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost {

std::string to_string(const Strategy& s) {
  const std::string cp = s.cp_per_sequence()
                             ? fmt::format("{},cp_max={}", to_string(s.cp_mode), s.cp)
                             : std::to_string(s.cp);
  std::string out = fmt::format(
      "tp={},pp={},dp={},cp={},ep={},mbs={},gbs={},vpp={},recompute={},sp={},zero={}", s.tp, s.pp,
      s.dp, cp, s.ep, s.mbs, s.gbs, s.vpp, to_string(s.recompute), s.sp ? "true" : "false", s.zero);
  // The variable-length keys only where set: fixed-length strategies read as they always did.
  if (s.balance != Balance::none) out += fmt::format(",balance={}", to_string(s.balance));
  if (s.max_tokens > 0) out += fmt::format(",max_tokens={}", s.max_tokens);
  if (s.cp_kind != CpKind::ring) out += fmt::format(",cp_kind={}", to_string(s.cp_kind));
  if (s.etp > 0) out += fmt::format(",etp={}", s.etp);
  if (s.offload > 0) out += fmt::format(",offload={}", s.offload);
  if (s.schedule != PipeSchedule::one_f_one_b)
    out += fmt::format(",schedule={}", to_string(s.schedule));
  if (s.ep_overlap) out += ",ep_overlap=true";
  if (s.dp_sync != DpSync::sync) out += ",dp_sync=" + dp_sync_text(s);
  if (s.recompute_modules != 0)
    out += ",recompute_modules=" + recompute_modules_text(s.recompute_modules);
  if (!s.stage_layers.empty()) out += fmt::format(",layers={}", fmt::join(s.stage_layers, "/"));
  if (!s.stage_tp.empty()) out += fmt::format(",stage_tp={}", fmt::join(s.stage_tp, "/"));
  if (s.precision) out += fmt::format(",precision={}", to_string(*s.precision));
  if (s.lora > 0) out += fmt::format(",lora={}", s.lora);
  if (s.lora_targets != 0) out += ",lora_targets=" + lora_targets_text(s.lora_targets);
  if (s.lora_dropout > 0) out += fmt::format(",lora_dropout={:g}", s.lora_dropout);
  if (!s.zero_layers.empty()) out += ",zero_layers=" + zero_layers_text(s.zero_layers);
  return out;
}

std::string dp_sync_text(const Strategy& s) {
  if (s.dp_sync == DpSync::sync) return "sync";
  return fmt::format("{}:{}", s.dp_sync == DpSync::async ? "async" : "local", s.dp_sync_steps);
}

std::string zero_layers_text(const std::vector<int>& marks) {
  std::string out;
  for (size_t i = 0; i < marks.size();) {
    size_t j = i;
    while (j < marks.size() && marks[j] == marks[i]) ++j;
    if (!out.empty()) out += '/';
    out += marks[i] == 0 ? "r" : marks[i] == 1 ? "s" : fmt::format("s{}", marks[i]);
    if (j - i > 1) out += fmt::format("x{}", j - i);
    i = j;
  }
  return out;
}

namespace {

// Calls f on each item of "a/b/c" (an empty value is one empty item).
template <class F>
void for_each_item(std::string_view value, F&& f) {
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find('/', start);
    if (end == std::string_view::npos) end = value.size();
    f(value.substr(start, end - start));
    start = end + 1;
  }
}

using NamedBit = std::pair<std::string_view, unsigned>;

constexpr NamedBit kModules[] = {{"core_attn", kRecomputeCoreAttn},
                                 {"layernorm", kRecomputeLayernorm},
                                 {"mla_up_proj", kRecomputeMlaUpProj},
                                 {"moe_act", kRecomputeMoeAct},
                                 {"mlp", kRecomputeMlp},
                                 {"moe", kRecomputeMoe},
                                 {"shared_experts", kRecomputeSharedExperts},
                                 {"ops", kRecomputeOps}};

// LoRA's targets; "attention" and "mlp" name two each.
constexpr NamedBit kLoraTargets[] = {{"qkv", kLoraQkv},
                                     {"proj", kLoraProj},
                                     {"fc1", kLoraFc1},
                                     {"fc2", kLoraFc2},
                                     {"attention", kLoraQkv | kLoraProj},
                                     {"mlp", kLoraFc1 | kLoraFc2}};

// "a/b/c" of the names in `table` as their bits OR'd, or `needs` (what the key takes) in one
// line naming the key.
template <size_t N>
unsigned parse_bits(const NamedBit (&table)[N], std::string_view key, std::string_view value,
                    std::string_view needs) {
  unsigned out = 0;
  for_each_item(value, [&](std::string_view item) {
    bool known = false;
    for (const auto& [name, bit] : table)
      if (item == name) out |= bit, known = true;
    if (!known)
      throw InputError(fmt::format("strategy key '{}' needs {} (got '{}')", key, needs, value));
  });
  return out;
}

// The names of the single bits set, joined by /.
template <size_t N>
std::string bits_text(const NamedBit (&table)[N], unsigned bits) {
  std::string out;
  for (const auto& [name, bit] : table)
    if (std::popcount(bit) == 1 && (bits & bit)) {
      if (!out.empty()) out += '/';
      out += name;
    }
  return out;
}

unsigned parse_recompute_modules(std::string_view value) {
  return parse_bits(kModules, "recompute_modules", value,
                    "modules from core_attn, layernorm, mla_up_proj, moe_act, mlp, moe and "
                    "shared_experts, joined by /, or ops alone (torchtitan's per-op policy)");
}

unsigned parse_lora_targets(std::string_view value) {
  return parse_bits(kLoraTargets, "lora_targets", value,
                    "linears from qkv, proj, fc1 and fc2 (or attention, mlp), joined by /");
}

}  // namespace

std::string lora_targets_text(unsigned targets) {
  return bits_text(kLoraTargets, targets);
}

std::string recompute_modules_text(unsigned modules) {
  return bits_text(kModules, modules);
}

namespace {

// "7/8/8/7": a whole number of at least 0 per stage (key: layers, or stage_tp's degrees).
std::vector<int> parse_per_stage(std::string_view key, std::string_view value) {
  std::vector<int> out;
  for_each_item(value, [&](std::string_view item) {
    int n = -1;
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || n < 0 ||
        n > (1 << 20))
      throw InputError(
          fmt::format("strategy key '{}' needs {} per stage as whole numbers, a/b/c/... (got '{}')",
                      key, key == "layers" ? "layers" : "a tensor-parallel degree", value));
    out.push_back(n);
  });
  return out;
}

// "s/rx30/s4": per-layer marks (Strategy::zero_layers), each item r or s, s with a slice count,
// either with a run length.
std::vector<int> parse_zero_layers(std::string_view value) {
  std::vector<int> out;
  auto bad = [&] {
    return InputError(fmt::format(
        "strategy key 'zero_layers' needs one mark per layer, embedding first and head last: r "
        "(replicated), s (sharded) or sN (sharded, gathered in N slices), runs as rx30, joined "
        "by / (got '{}')",
        value));
  };
  // A whole number of 1 to `most` at the front of `rest`, or `fallback` when none is there.
  auto number = [&](std::string_view& rest, int fallback, int most) {
    size_t n = 0;
    while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') ++n;
    if (n == 0) return fallback;
    int v = 0;
    const auto [p, ec] = std::from_chars(rest.data(), rest.data() + n, v);
    if (ec != std::errc() || v < 1 || v > most) throw bad();
    rest.remove_prefix(n);
    return v;
  };
  for_each_item(value, [&](std::string_view item) {
    if (item.empty() || (item[0] != 'r' && item[0] != 's')) throw bad();
    const bool sharded = item[0] == 's';
    item.remove_prefix(1);
    const int mark = sharded ? number(item, 1, 1024) : 0;
    int count = 1;
    if (!item.empty()) {
      if (item[0] != 'x') throw bad();
      item.remove_prefix(1);
      if (item.empty()) throw bad();
      count = number(item, 1, 1 << 20);
      if (!item.empty()) throw bad();
    }
    if (out.size() + static_cast<size_t>(count) > (1u << 20) + 2) throw bad();
    out.insert(out.end(), static_cast<size_t>(count), mark);
  });
  return out;
}

int parse_int_value(std::string_view key, std::string_view value) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || ptr != value.data() + value.size() || v < 0)
    throw InputError(
        fmt::format("strategy key '{}' needs a non-negative integer (got '{}')", key, value));
  return v;
}

bool parse_bool_value(std::string_view key, std::string_view value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  throw InputError(fmt::format("strategy key '{}' needs true or false (got '{}')", key, value));
}

Balance parse_balance(std::string_view value) {
  for (Balance b : {Balance::none, Balance::count, Balance::tokens, Balance::cost})
    if (value == to_string(b)) return b;
  throw InputError(
      fmt::format("strategy key 'balance' needs none, count, tokens or cost (got '{}')", value));
}

Recompute parse_recompute(std::string_view value) {
  if (value == "none") return Recompute::none;
  if (value == "selective") return Recompute::selective;
  if (value == "full") return Recompute::full;
  throw InputError(
      fmt::format("strategy key 'recompute' needs none, selective or full (got '{}')", value));
}

}  // namespace

// Applies "key=value,..." onto s; returns the keys that were set.
std::vector<std::string> apply_strategy_text(std::string_view text, Strategy& s) {
  std::vector<std::string> keys;
  while (!text.empty()) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos)
      throw InputError(fmt::format("strategy item '{}' is not key=value; write e.g. tp=8", item));
    const auto key = item.substr(0, eq);
    const auto value = item.substr(eq + 1);
    if (std::find(keys.begin(), keys.end(), key) != keys.end())
      throw InputError(fmt::format("strategy key '{}' is given twice; give each key once", key));
    if (key == "tp")
      s.tp = parse_int_value(key, value);
    else if (key == "pp")
      s.pp = parse_int_value(key, value);
    else if (key == "dp")
      s.dp = parse_int_value(key, value);
    else if (key == "cp" && value == "dynamic")
      s.cp_mode = CpMode::dynamic;
    else if (key == "cp" && value == "flex")
      s.cp_mode = CpMode::flex;
    else if (key == "cp")
      s.cp = parse_int_value(key, value);
    else if (key == "cp_max") {
      s.cp = parse_int_value(key, value);
      if (s.cp_mode == CpMode::fixed) s.cp_mode = CpMode::dynamic;
    } else if (key == "ep")
      s.ep = parse_int_value(key, value);
    else if (key == "etp")
      s.etp = parse_int_value(key, value);
    else if (key == "offload")
      s.offload = parse_int_value(key, value);
    else if (key == "mbs")
      s.mbs = parse_int_value(key, value);
    else if (key == "gbs")
      s.gbs = parse_int_value(key, value);
    else if (key == "vpp")
      s.vpp = parse_int_value(key, value);
    else if (key == "zero")
      s.zero = parse_int_value(key, value);
    else if (key == "recompute")
      s.recompute = parse_recompute(value);
    else if (key == "sp")
      s.sp = parse_bool_value(key, value);
    else if (key == "ep_overlap")
      s.ep_overlap = parse_bool_value(key, value);
    else if (key == "balance")
      s.balance = parse_balance(value);
    else if (key == "max_tokens")
      s.max_tokens = parse_int_value(key, value);
    else if (key == "layers")
      s.stage_layers = parse_per_stage(key, value);
    else if (key == "zero_layers")
      s.zero_layers = parse_zero_layers(value);
    else if (key == "stage_tp") {
      s.stage_tp = parse_per_stage(key, value);
      for (int t : s.stage_tp)
        if (t < 1)
          throw InputError(fmt::format(
              "strategy key 'stage_tp' needs a tensor-parallel degree of at least 1 per stage "
              "(got '{}')",
              value));
    } else if (key == "precision") {
      if (value != "fp32" && value != "tf32" && value != "fp16" && value != "bf16" &&
          value != "fp8" && value != "mxfp8" && value != "nvfp4")
        throw InputError(fmt::format(
            "strategy key 'precision' needs fp32, tf32, fp16, bf16, fp8, mxfp8 or nvfp4 (got '{}')",
            value));
      s.precision = parse_dtype(value);
    } else if (key == "recompute_modules") {
      s.recompute_modules = parse_recompute_modules(value);
    } else if (key == "lora") {
      s.lora = parse_int_value(key, value);
      if (s.lora < 1 || s.lora > 65536)
        throw InputError(fmt::format(
            "strategy key 'lora' needs the adapters' rank, a whole number from 1 to 65536 (got "
            "'{}')",
            value));
    } else if (key == "lora_targets") {
      s.lora_targets = parse_lora_targets(value);
    } else if (key == "lora_dropout") {
      double p = -1;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), p);
      if (ec != std::errc() || end != value.data() + value.size() || !(p >= 0 && p < 1))
        throw InputError(fmt::format(
            "strategy key 'lora_dropout' needs a probability from 0 up to (not including) 1 "
            "(got '{}')",
            value));
      s.lora_dropout = p;
    } else if (key == "schedule") {
      if (value == "1f1b")
        s.schedule = PipeSchedule::one_f_one_b;
      else if (value == "dualpipe")
        s.schedule = PipeSchedule::dualpipe;
      else if (value == "local")
        s.schedule = PipeSchedule::local;
      else
        throw InputError(
            fmt::format("strategy key 'schedule' needs 1f1b, dualpipe or local (got '{}')", value));
    } else if (key == "dp_sync") {
      const size_t colon = value.find(':');
      const std::string mode(value.substr(0, colon));
      if (mode == "sync" && colon == std::string::npos) {
        s.dp_sync = DpSync::sync;
        s.dp_sync_steps = 0;
      } else if ((mode == "async" || mode == "local") && colon != std::string::npos) {
        const std::string n(value.substr(colon + 1));
        int steps = 0;
        const auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), steps);
        if (ec != std::errc() || p != n.data() + n.size() || steps < 1 || steps > 1000000)
          throw InputError(fmt::format(
              "strategy key 'dp_sync': '{}' needs a whole number of steps from 1 to 1000000 "
              "after the colon",
              value));
        s.dp_sync = mode == "async" ? DpSync::async : DpSync::local;
        s.dp_sync_steps = steps;
      } else {
        throw InputError(fmt::format(
            "strategy key 'dp_sync' needs sync, async:S (updates up to S steps stale) or local:H "
            "(parameters averaged every H steps) (got '{}')",
            value));
      }
    } else if (key == "cp_kind") {
      if (value == "ring")
        s.cp_kind = CpKind::ring;
      else if (value == "ulysses")
        s.cp_kind = CpKind::ulysses;
      else
        throw InputError(
            fmt::format("strategy key 'cp_kind' needs ring or ulysses (got '{}')", value));
    } else
      throw InputError(fmt::format(
          "unknown strategy key '{}'; use tp, pp, dp, cp, ep, etp, ep_overlap, mbs, gbs, schedule, "
          "dp_sync, "
          "offload, "
          "recompute_modules, "
          "vpp, recompute, sp, zero, zero_layers, cp_kind, layers, stage_tp, precision, lora, "
          "lora_targets, lora_dropout (and "
          "balance, "
          "max_tokens, "
          "cp=dynamic|flex, cp_max with variable-length data)",
          key));
    for (const char* k :
         {"tp", "pp", "dp", "cp", "cp_max", "ep", "etp", "mbs", "gbs", "vpp", "max_tokens"}) {
      if (key == k && !(key == "cp" && (value == "dynamic" || value == "flex")) &&
          parse_int_value(key, value) == 0)
        throw InputError(fmt::format("strategy key '{}' must be at least 1", key));
    }
    keys.emplace_back(key);
  }
  return keys;
}

namespace {

// The product of parallel sizes, or -1 when it would not fit an int (a strategy text can name
// sizes up to INT_MAX each; their product must not overflow before it is checked).
int64_t product(std::initializer_list<int> sizes) {
  int64_t p = 1;
  for (int x : sizes) {
    p *= x;
    if (p > std::numeric_limits<int>::max()) return -1;
  }
  return p;
}

}  // namespace

Strategy parse_strategy(std::string_view text, int gpus) {
  Strategy s;
  s.dp = 0;
  const auto keys = apply_strategy_text(text, s);
  auto given = [&](const char* key) {
    return std::find(keys.begin(), keys.end(), key) != keys.end();
  };
  // stage_tp: the stages are its entries, and tp is the first one's.
  if (!s.stage_tp.empty()) {
    if (given("tp") && s.tp != s.stage_tp.front())
      throw InputError(
          fmt::format("tp={} but stage_tp starts with {}: tp is the first stage's degree; drop tp",
                      s.tp, s.stage_tp.front()));
    if (!given("pp")) s.pp = static_cast<int>(s.stage_tp.size());
    s.tp = s.stage_tp.front();
  }
  // The ranks of one data-parallel replica across the pipeline times `more`, or -1 when it
  // would not fit an int; and how messages name it.
  auto across = [&](std::initializer_list<int> more) -> int64_t {
    int64_t width = 0;
    if (s.stage_tp.empty()) {
      width = product({s.tp, s.pp});
    } else {
      for (int x : s.stage_tp) width += x;
      if (width > std::numeric_limits<int>::max()) width = -1;
    }
    if (width < 0) return -1;
    int64_t p = width;
    for (int x : more) {
      p *= x;
      if (p > std::numeric_limits<int>::max()) return -1;
    }
    return p;
  };
  const std::string width_name = s.stage_tp.empty() ? "tp*pp" : "(sum of stage_tp)";
  auto too_large = [&](const std::string& what, int64_t p) {
    if (p < 0 || p > gpus)
      throw InputError(fmt::format(
          "{} is {} than the {} GPUs of the cluster; choose sizes whose product divides "
          "the GPU count",
          what, p < 0 ? "far larger" : "larger", gpus));
  };
  // cp=dynamic without cp_max: every GPU outside tp and pp in one CP domain (dp = 1).
  if (s.cp_per_sequence() && !given("cp_max")) {
    const int64_t inner = across({std::max(s.dp, 1)});
    too_large(width_name + "*dp", inner);
    if (inner > 0 && gpus % inner == 0) s.cp = static_cast<int>(gpus / inner);
  }
  if (s.dp == 0) {
    const int64_t inner = across({s.cp});
    too_large(width_name + "*cp", inner);
    if (inner <= 0 || gpus % inner != 0)
      throw InputError(
          fmt::format("{} = {} does not divide the {} GPUs; choose sizes whose "
                      "product divides the GPU count",
                      width_name + "*cp", inner, gpus));
    s.dp = static_cast<int>(gpus / inner);
  }
  too_large(width_name + "*dp*cp", across({s.dp, s.cp}));
  if (s.gbs == 0) {
    const int64_t gbs = product({s.mbs, s.dp});
    if (gbs < 0)
      throw InputError(
          fmt::format("mbs*dp does not fit a global batch; give gbs= (sequences per step)"));
    // Without a pipeline, one micro-batch per data-parallel rank (no gradient accumulation)
    // is a plan people run. With one, a single micro-batch leaves the pipeline (pp-1)/1
    // bubbles idle: no default is a plan anyone would run, so the global batch is asked for.
    if (s.pp > 1) {
      const int64_t hint = product({s.mbs, s.dp, 4, s.pp});
      throw InputError(fmt::format(
          "gbs= is required with pipeline parallelism (pp={}): the global batch in sequences "
          "sets the micro-batches per step, and the pipeline needs many (e.g. gbs={}: 4 per "
          "stage)",
          s.pp, hint > 0 ? hint : gbs));
    }
    s.gbs = static_cast<int>(gbs);
  }
  if (s.gpus() != gpus)
    throw InputError(
        fmt::format("{} = {} but the cluster has {} GPUs; make them equal "
                    "(or drop dp to derive it)",
                    width_name + "*dp*cp", s.gpus(), gpus));
  return s;
}

Strategy with_precision(const Strategy& s, const Software& sw, const Cluster& c) {
  // One precision for every group: each device's, and where a mixed cluster's devices resolve
  // the default differently (bf16 here, fp16 on a part without it), the one all of them have.
  std::vector<DType> resolved;
  for (const auto& g : c.groups) {
    std::string why;
    const auto t = resolved_precision(s, sw, g.device, &why);
    if (!t) throw InputError(fmt::format("strategy {} cannot run: {}", to_string(s), why));
    resolved.push_back(*t);
  }
  Strategy out = s;
  for (DType t : resolved) {
    bool everywhere = true;
    for (const auto& g : c.groups)
      everywhere = everywhere && g.device.peak_flops[static_cast<int>(t)] > 0;
    if (everywhere && (!out.precision || t == DType::fp16)) out.precision = t;
  }
  if (!out.precision)
    throw InputError(
        fmt::format("strategy {} cannot run: the cluster's devices share no "
                    "precision its software trains in; give precision=",
                    to_string(s)));
  out.tf32_math = *out.precision == DType::fp32 && sw.tf32_matmul &&
                  std::all_of(c.groups.begin(), c.groups.end(), [](const NodeGroup& g) {
                    return g.device.peak_flops[static_cast<int>(DType::tf32)] > 0;
                  });
  out.fp8_any_layout = *out.precision == DType::fp8 &&
                       std::all_of(c.groups.begin(), c.groups.end(), [](const NodeGroup& g) {
                         return g.device.architecture.rfind("blackwell", 0) == 0;
                       });
  out.fp8_current_scaling = *out.precision == DType::fp8 && sw.fp8_current_scaling;
  out.quantized_moe_act_input = is_quantized(*out.precision) && sw.quantized_moe_act_input;
  out.moe_tp_wrapped = sw.moe_tp_wrapped;
  out.torchao = {};
  if ((*out.precision == DType::fp8 || *out.precision == DType::mxfp8) && sw.torchao_float8) {
    out.torchao.active = true;
    out.torchao.mx = *out.precision == DType::mxfp8;
    out.torchao.mx_dim1_torch = sw.mx_dim1_cast == MxDim1Cast::torch;
    out.torchao.experts = sw.quantize_experts;
    out.torchao.tp_styles = sw.float8_tp;
    out.torchao.recipe = sw.float8_recipe;
    out.torchao.compiled = sw.compile;
    out.torchao.sac_saves_scaled_mm = sw.sac_saves_scaled_mm;
    // torchtitan gathers in float8 only where FSDP2 shards the weights, and MXFP8's weights
    // in bf16 ("all distributed communication for MXFP8 training is done in high precision").
    out.torchao.weight_gather = !out.torchao.mx && sw.float8_all_gather &&
                                sw.float8_recipe == Float8Recipe::tensorwise && out.zero == 3;
    out.fp8_any_layout = false;  // torchao's casts write their own layouts (Numerics)
  }
  if (out.recompute == Recompute::selective && out.recompute_modules == 0)
    out.recompute_modules = sw.recompute_modules;
  return out;
}

namespace {

// count_gpus: whether tp*pp*dp*cp must be the cluster's GPUs (a plan whose replicas differ
// in TP degree counts them itself).
std::optional<std::string> check(const Workload& w, const Cluster& c, const Strategy& s,
                                 bool count_gpus) {
  for (const auto& g : c.groups)
    if (s.precision && g.device.peak_flops[static_cast<int>(*s.precision)] <= 0)
      return fmt::format("{} has no {} peak; use another precision", g.device.name,
                         to_string(*s.precision));
  if (s.tp < 1 || s.pp < 1 || s.dp < 1 || s.cp < 1 || s.ep < 1 || s.mbs < 1 || s.vpp < 1)
    return "every parallel size must be at least 1";
  if (count_gpus && s.gpus() != c.total_gpus())
    return fmt::format("{} = {} but the cluster has {} GPUs",
                       s.stage_tp.empty() ? "tp*pp*dp*cp" : "(sum of stage_tp)*dp*cp", s.gpus(),
                       c.total_gpus());
  if (s.schedule == PipeSchedule::dualpipe && c.groups.size() > 1)
    return "schedule=dualpipe is priced on clusters of one node group (it pairs stage i with "
           "stage pp-1-i on each device)";
  if (s.schedule == PipeSchedule::dualpipe && !s.stage_tp.empty())
    return "schedule=dualpipe needs one TP degree for every stage (its devices hold two stages)";
  // A degree per stage: each degree by the rules of one (heads, sequence parallelism where
  // it has ranks to split over).
  if (!s.stage_tp.empty()) {
    if (static_cast<int>(s.stage_tp.size()) != s.pp)
      return fmt::format("stage_tp gives {} degrees for pp={}; give one per stage",
                         s.stage_tp.size(), s.pp);
    if (s.stage_tp.front() != s.tp)
      return fmt::format("tp={} but stage_tp starts with {}; tp is the first stage's", s.tp,
                         s.stage_tp.front());
    bool any_tp = false;
    for (int t : s.stage_tp) {
      if (t < 1) return "every stage's tensor-parallel degree must be at least 1";
      any_tp = any_tp || t > 1;
    }
    if (s.sp && !any_tp) return "sp=true needs tp>1";
    for (size_t i = 0; i < s.stage_tp.size(); ++i) {
      if (std::find(s.stage_tp.begin(), s.stage_tp.begin() + static_cast<long>(i), s.stage_tp[i]) !=
          s.stage_tp.begin() + static_cast<long>(i))
        continue;
      const Strategy one = at_degree(s, s.stage_tp[i]);
      if (auto why = check(w, c, one, false))
        return fmt::format("stage {} (tp={}): {}", i, one.tp, *why);
    }
    return std::nullopt;
  }
  const int layers = w.layers();
  if (s.pp > layers) return fmt::format("pp={} is above the {} layers", s.pp, layers);
  // Uneven stages and uneven chunks are fine, for 1F1B and interleaved alike (Llama 3 405B
  // trained with a layer fewer on its first and last stages); each stage's layers split into
  // vpp chunks as evenly as they go.
  if (!s.stage_layers.empty())
    if (auto why = check_stage_layers(w, s, s.stage_layers)) return why;
  if (s.vpp > 1 && s.pp == 1) return "vpp>1 needs pp>1 (interleaving is a pipeline schedule)";
  if ((s.lora_targets != 0 || s.lora_dropout > 0) && s.lora <= 0)
    return "lora_targets and lora_dropout need lora=R (the adapters' rank)";
  if (s.recompute_modules != 0 && s.recompute != Recompute::selective)
    return "recompute_modules needs recompute=selective (they name what it recomputes)";
  if ((s.recompute_modules & kRecomputeOps) && s.recompute_modules != kRecomputeOps)
    return "recompute_modules=ops is a policy of its own (torchtitan's per-op checkpointing); "
           "give it alone";
  if (s.schedule == PipeSchedule::dualpipe) {
    // DualPipe pairs stage i with stage pp-1-i and feeds micro-batches from both ends.
    if (s.pp < 2 || s.pp % 2 != 0)
      return fmt::format("schedule=dualpipe needs an even pp of at least 2 (got pp={})", s.pp);
    if (s.vpp > 1) return "schedule=dualpipe has no interleaving; use vpp=1";
  }
  if (s.dp_sync != DpSync::sync) {
    const char* what = s.dp_sync == DpSync::async ? "async" : "local";
    if (s.dp < 2)
      return fmt::format("dp_sync={} needs dp>=2 (it is how data-parallel replicas agree)", what);
    if (s.zero != 0 || !s.zero_layers.empty())
      return fmt::format(
          "dp_sync={} keeps each replica's own optimizer state: use zero=0 (ZeRO shards it over "
          "replicas that update together)",
          what);
    if (s.dp_sync == DpSync::local && s.dp_sync_steps < 2)
      return "dp_sync=local:1 averages every step: that is dp_sync=sync";
  }
  if (s.schedule == PipeSchedule::local) {
    if (s.pp < 2)
      return "schedule=local needs pp>=2 (local updates decouple pipeline stages; with one stage "
             "training is end to end)";
    if (s.vpp > 1) return "schedule=local has no interleaving; use vpp=1";
  }
  if (s.vpp > 1) {
    // Each of a stage's vpp chunks holds at least one layer (Megatron's virtual stages), the
    // embedding and the head counting as one where they sit (its
    // account_for_embedding/loss_in_pipeline_split, as Llama 3 405B ran 126 layers on 16
    // stages of 8 chunks); a stage of no layers (the embedding's or the head's alone) has
    // nothing to interleave.
    const std::vector<int> split =
        s.stage_layers.empty() ? default_stage_layers(layers, s.pp) : s.stage_layers;
    for (size_t st = 0; st < split.size(); ++st) {
      const int units = split[st] + (st == 0) + (st + 1 == split.size());
      if (split[st] > 0 && units < s.vpp)
        return fmt::format(
            "vpp={} needs {} layers on each stage (the embedding and the head counting as one), "
            "and stage {} has {}; use a smaller vpp or pp",
            s.vpp, s.vpp, st, units);
    }
  }
  if (s.sp && s.tp == 1) return "sp=true needs tp>1";
  if (s.offload > 0) {
    if (s.pp > 1 || !s.stage_layers.empty())
      return "offload=N needs pp=1: Megatron-core offloads activations only without pipeline "
             "parallelism";
    if (s.recompute != Recompute::none)
      return "offload=N needs recompute=none: Megatron-core does not offload activations under "
             "recomputation";
    if (s.offload >= layers)
      return fmt::format("offload={} must be below the {} layers (the last layer stays)", s.offload,
                         layers);
  }
  if (s.ep_overlap && s.ep == 1)
    return "ep_overlap=true needs ep>1 (it overlaps the experts' all-to-alls)";
  if (s.ep_overlap && s.schedule != PipeSchedule::one_f_one_b)
    return "ep_overlap=true is 1F1B's overlap; DualPipe overlaps its all-to-alls itself";
  // Megatron-core's combined 1F1B runs without a pipeline or interleaved
  // (TransformerConfig: "virtual_pipeline_model_parallel_size must be specified when
  // pipeline_model_parallel_size > 1"), and not under full recomputation.
  if (s.ep_overlap && s.pp > 1 && s.vpp == 1)
    return "ep_overlap=true with pp>1 needs vpp>1: Megatron-core overlaps the all-to-alls only "
           "in an interleaved pipeline (or without one); set vpp or ep_overlap=false";
  // Its combined 1F1B splits an MoE layer into the callables it interleaves, which a
  // checkpoint around the whole layer would hide (TransformerConfig: "disable moe in
  // recompute_modules when enabling overlap_moe_expert_parallel_comm").
  if (s.ep_overlap && (s.selective_modules() & kRecomputeMoe))
    return "ep_overlap=true does not run with recompute_modules=moe (Megatron-core refuses it); "
           "recompute the experts' activation (moe_act) instead, or set ep_overlap=false";
  if (s.ep_overlap && s.recompute == Recompute::full)
    return "ep_overlap=true does not run under recompute=full (Megatron-core refuses it); use "
           "recompute=selective or none, or ep_overlap=false";
  if (s.zero < 0 || s.zero > 3) return fmt::format("zero={} is not a ZeRO stage (0-3)", s.zero);
  if (!s.zero_layers.empty()) {
    if (s.zero_layers.size() != static_cast<size_t>(layers) + 2)
      return fmt::format(
          "zero_layers gives {} marks for {} layers; give {}: one for the embedding, one per "
          "layer, one for the head",
          s.zero_layers.size(), layers, layers + 2);
    if (s.zero == 3)
      return "zero_layers marks layers sharded (s) or replicated (r) under zero=; with zero=3 "
             "every layer is sharded already: use zero=0, 1 or 2";
  }
  if (s.gbs < 1) return "gbs must be at least 1";
  const int64_t per_step = int64_t{s.mbs} * s.dp;
  if (s.gbs % per_step != 0)
    return fmt::format("gbs={} is not a multiple of mbs*dp = {}", s.gbs, per_step);
  if (s.schedule == PipeSchedule::dualpipe &&
      (s.micro_batches() % 2 != 0 || s.micro_batches() < s.pp))
    return fmt::format(
        "schedule=dualpipe needs an even number of micro-batches, at least pp={} (got {})", s.pp,
        s.micro_batches());
  if (s.vpp > 1 && s.micro_batches() % s.pp != 0)
    return fmt::format(
        "the interleaved schedule needs the {} micro-batches to be a multiple of "
        "pp={}",
        s.micro_batches(), s.pp);
  // The model's own rules last: how its tensors split.
  return w.check(s);
}

}  // namespace

Strategy at_degree(const Strategy& s, int tp) {
  Strategy out = s;
  out.stage_tp.clear();
  out.tp = tp;
  out.sp = s.sp && tp > 1;
  return out;
}

std::optional<std::string> check_strategy(const Workload& w, const Cluster& c, const Strategy& s) {
  return check(w, c, s, true);
}

std::optional<std::string> check_strategy_shape(const Workload& w, const Cluster& c,
                                                const Strategy& s) {
  return check(w, c, s, false);
}

}  // namespace shardcost
