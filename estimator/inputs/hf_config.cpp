// Hugging Face config.json files as published, read into a model file's fields. What each
// field means is transformers' configuration class of the model_type (configuration_llama.py
// and its siblings); which fields change the cost is this file's judgement, listed in
// docs/model-families.md.
#include "hf_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <set>
#include <string_view>

#include "json_fields.h"
#include "shardcost/error.h"

namespace shardcost {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 10> kTypes = {"llama", "mistral",   "mixtral",     "qwen2",
                                                     "qwen3", "qwen3_moe", "deepseek_v3", "gemma2",
                                                     "phi3",  "nemotron_h"};

// Fields that do not change what a training step costs, whatever the model_type: identity and
// provenance, tokenizer ids, initialisation, the norms' epsilon, rotary embeddings' base and
// scaling (the same matmuls at any base), generation and serving settings, the weights'
// storage format (the strategy says what training computes in), auxiliary losses' weights.
constexpr std::string_view kIgnored[] = {"architectures",
                                         "_name_or_path",
                                         "model_type",
                                         "transformers_version",
                                         "torch_dtype",
                                         "dtype",
                                         "bos_token_id",
                                         "eos_token_id",
                                         "pad_token_id",
                                         "sep_token_id",
                                         "initializer_range",
                                         "initializer_factor",
                                         "rms_norm_eps",
                                         "layer_norm_eps",
                                         "layer_norm_epsilon",
                                         "rope_theta",
                                         "rope_scaling",
                                         "rope_parameters",
                                         "rope_interleave",
                                         "partial_rotary_factor",
                                         "original_max_position_embeddings",
                                         "use_cache",
                                         "pretraining_tp",
                                         "auto_map",
                                         "quantization_config",
                                         "tokenizer_class",
                                         "output_router_logits",
                                         "router_aux_loss_coef",
                                         "router_jitter_noise",
                                         "router_z_loss_coef",
                                         "aux_loss_alpha",
                                         "seq_aux",
                                         "routed_scaling_factor",
                                         "scoring_func",
                                         "norm_topk_prob",
                                         "ep_size",
                                         "query_pre_attn_scalar",
                                         "attn_logit_softcapping",
                                         "cache_implementation",
                                         "num_logits_to_keep",
                                         "use_mamba_kernels",
                                         "residual_in_fp32",
                                         "rescale_prenorm_residual",
                                         "time_step_min",
                                         "time_step_max",
                                         "time_step_floor",
                                         "time_step_limit",
                                         "time_step_rank",
                                         "mamba_hidden_act",
                                         "use_conv_bias",
                                         "mamba_proj_bias",
                                         "expand",
                                         "task_specific_params",
                                         "is_decoder",
                                         "return_dict",
                                         "output_hidden_states",
                                         "output_attentions",
                                         "use_return_dict",
                                         "tie_encoder_decoder",
                                         "chunk_size_feed_forward",
                                         "problem_type",
                                         "id2label",
                                         "label2id",
                                         "use_mrope"};

bool ignored(std::string_view key) {
  return std::find(std::begin(kIgnored), std::end(kIgnored), key) != std::end(kIgnored);
}

// Reads the config's fields, remembering which it read; whatever is left at the end is neither
// read nor known to be harmless, and is refused by name.
class Reader {
 public:
  Reader(const json& hf, std::string where, std::string type)
      : hf_(hf), f_(hf, where), where_(std::move(where)), type_(std::move(type)) {}

  bool has(const char* key) const { return hf_.contains(key) && !hf_.at(key).is_null(); }
  const json* raw(const char* key) {
    used_.insert(key);
    return has(key) ? &hf_.at(key) : nullptr;
  }
  int required_int(const char* key, int min_value = 1) {
    used_.insert(key);
    if (!has(key)) fail(key, "is missing; a published config.json of this model_type has it");
    return f_.required_int(key, min_value);
  }
  std::optional<int> optional_int(const char* key, int min_value = 0) {
    used_.insert(key);
    return has(key) ? f_.optional_int(key, min_value) : std::nullopt;
  }
  std::optional<double> optional_number(const char* key) {
    used_.insert(key);
    return has(key) ? f_.optional_number(key, 0) : std::nullopt;
  }
  std::optional<bool> optional_bool(const char* key) {
    used_.insert(key);
    return has(key) ? f_.optional_bool(key) : std::nullopt;
  }
  std::optional<std::string> optional_string(const char* key) {
    used_.insert(key);
    return has(key) ? f_.optional_string(key) : std::nullopt;
  }
  void use(const char* key) { used_.insert(key); }
  [[noreturn]] void fail(const char* key, const std::string& what) const { f_.fail(key, what); }

  // Every field either read or known not to change the cost.
  void check_all_read() const {
    for (const auto& [key, value] : hf_.items()) {
      if (used_.count(key) || ignored(key)) continue;
      throw InputError(fmt::format(
          "{}: field '{}' of a {} config.json is not read: shardcost does not know whether it "
          "changes the cost; if it does not, delete it from a copy of the file "
          "(docs/model-families.md lists the fields read and ignored)",
          where_, key, type_));
    }
  }

 private:
  const json& hf_;
  JsonFields f_;
  std::string where_, type_;
  std::set<std::string, std::less<>> used_;
};

// The MLP's activation: gated (a gate projection beside the up projection) for every type
// read here but nemotron_h's squared ReLU. A gated GELU (GeGLU, Gemma-2) has SwiGLU's three
// matrices and passes, so it is priced as SwiGLU.
std::string gated_activation(Reader& r, const char* key) {
  const std::string act = r.optional_string(key).value_or("silu");
  if (act == "silu" || act == "swish" || act == "gelu" || act == "gelu_pytorch_tanh" ||
      act == "gelu_new" || act == "gelu_fast")
    return "swiglu";
  r.fail(key, fmt::format("is \"{}\"; a gated MLP with silu or gelu is what this model_type "
                          "prices (SwiGLU's matrices and passes)",
                          act));
}

// Sliding windows: a window on every layer (mistral, phi3), on the layers at and after
// max_window_layers when use_sliding_window (qwen2, qwen3), on alternate layers (gemma2), or as
// the file's own layer_types.
void read_windows(Reader& r, const std::string& type, int layers, json& out) {
  if (const json* types = r.raw("layer_types")) out["layer_types"] = *types;
  const auto window = r.optional_int("sliding_window", 0).value_or(0);
  if (type == "qwen2" || type == "qwen3" || type == "qwen3_moe") {
    const bool on = r.optional_bool("use_sliding_window").value_or(false);
    const int from = r.optional_int("max_window_layers", 0).value_or(layers);
    if (!on || window == 0) {
      out.erase("layer_types");  // every layer full, whatever layer_types repeats
      return;
    }
    if (!out.contains("layer_types")) {
      json t = json::array();
      for (int i = 0; i < layers; ++i)
        t.push_back(i >= from ? "sliding_attention" : "full_attention");
      out["layer_types"] = t;
    }
    out["sliding_window"] = window;
    return;
  }
  if (window == 0) {
    out.erase("layer_types");
    return;
  }
  out["sliding_window"] = window;
  if (type == "gemma2" && !out.contains("layer_types")) {
    // transformers' Gemma2: layer i slides when i is even.
    json t = json::array();
    for (int i = 0; i < layers; ++i)
      t.push_back(i % 2 == 0 ? "sliding_attention" : "full_attention");
    out["layer_types"] = t;
  }
}

void read_moe(Reader& r, const std::string& type, json& out) {
  json moe;
  if (type == "mixtral") {
    moe["experts"] = r.required_int("num_local_experts");
    moe["top_k"] = r.required_int("num_experts_per_tok");
  } else if (type == "qwen3_moe") {
    moe["experts"] = r.required_int("num_experts");
    moe["top_k"] = r.required_int("num_experts_per_tok");
    moe["moe_intermediate_size"] = r.required_int("moe_intermediate_size");
    if (r.optional_int("decoder_sparse_step", 1).value_or(1) != 1)
      r.fail("decoder_sparse_step",
             "is not 1: experts on every n-th layer only are not modelled; shardcost prices "
             "experts on every layer");
    if (const json* dense = r.raw("mlp_only_layers"); dense && !dense->empty())
      r.fail("mlp_only_layers",
             "names dense layers among the expert layers, which is not modelled; shardcost "
             "prices experts on every layer (or the first ones dense, first_k_dense_replace)");
  } else {  // deepseek_v3
    moe["n_routed_experts"] = r.required_int("n_routed_experts");
    moe["num_experts_per_tok"] = r.required_int("num_experts_per_tok");
    moe["moe_intermediate_size"] = r.required_int("moe_intermediate_size");
    moe["n_shared_experts"] = r.optional_int("n_shared_experts").value_or(0);
    moe["first_k_dense_replace"] = r.optional_int("first_k_dense_replace").value_or(0);
    if (const auto method = r.optional_string("topk_method")) moe["topk_method"] = *method;
    if (const auto groups = r.optional_int("n_group", 1)) moe["n_group"] = *groups;
    if (const auto top = r.optional_int("topk_group", 1)) moe["topk_group"] = *top;
    if (r.optional_int("moe_layer_freq", 1).value_or(1) != 1)
      r.fail("moe_layer_freq",
             "is not 1: experts on every n-th layer only are not modelled; shardcost prices "
             "experts on every layer after first_k_dense_replace");
  }
  out["moe"] = moe;
}

}  // namespace

bool is_hf_config(const json& j) {
  return j.is_object() && j.contains("model_type");
}

json model_file_of_hf_config(const json& hf, const std::string& where) {
  const json& t = hf.at("model_type");
  const std::string type = t.is_string() ? t.get<std::string>() : t.dump();
  if (std::find(kTypes.begin(), kTypes.end(), type) == kTypes.end())
    throw InputError(fmt::format(
        "{}: model_type '{}' is not read; shardcost reads the config.json of {} (or write a "
        "model file, docs/model-families.md)",
        where, type, fmt::join(kTypes, ", ")));
  Reader r(hf, where, type);
  json out;
  if (const auto name = r.optional_string("_name_or_path"); name && !name->empty())
    out["name"] = *name;
  const int layers = r.required_int("num_hidden_layers");
  out["layers"] = layers;
  out["hidden"] = r.required_int("hidden_size");
  const int heads = r.required_int("num_attention_heads");
  out["heads"] = heads;
  out["kv_heads"] = r.optional_int("num_key_value_heads", 1).value_or(heads);
  out["vocab"] = r.required_int("vocab_size");
  // The longest sequence the model takes: what the estimate prices unless --seq-len says what
  // the run trains at.
  out["seq_len"] = r.required_int("max_position_embeddings");
  if (const auto hd = r.optional_int("head_dim", 1)) out["head_dim"] = *hd;
  out["norm"] = "rmsnorm";
  out["position_embedding"] = type == "nemotron_h" ? "none" : "rope";
  // transformers' defaults where a file leaves it out: Gemma-2 ties, the others do not.
  out["tied_embeddings"] = r.optional_bool("tie_word_embeddings").value_or(type == "gemma2");

  // Biases: on every linear (attention_bias with mlp_bias), on the query, key and value
  // projections only (Qwen2's, in its modelling code rather than its config), or none.
  const bool attention_bias = r.optional_bool("attention_bias").value_or(false);
  const bool mlp_bias = r.optional_bool("mlp_bias").value_or(false);
  const bool use_bias = r.optional_bool("use_bias").value_or(false);  // nemotron_h's name
  if (attention_bias != mlp_bias && !use_bias)
    r.fail(attention_bias ? "attention_bias" : "mlp_bias",
           "is set without the other: biases on only attention's or only the MLP's linears are "
           "not modelled (shardcost prices biases on every linear, or Qwen2's on q, k and v)");
  out["bias"] = (attention_bias && mlp_bias) || use_bias;
  if (type == "qwen2" && !attention_bias) out["qkv_bias"] = true;

  // Dropout: one probability for the hidden states and attention (the largest given).
  double dropout = 0;
  for (const char* key : {"attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop"})
    dropout = std::max(dropout, r.optional_number(key).value_or(0));
  if (dropout > 0) out["dropout"] = dropout;

  if (type == "nemotron_h") {
    const std::string act = r.optional_string("mlp_hidden_act").value_or("relu2");
    if (act != "relu2")
      r.fail("mlp_hidden_act", fmt::format("is \"{}\"; Nemotron-H's MLP is relu2", act));
    out["activation"] = "relu2";
    out["ffn_hidden"] = r.required_int("intermediate_size");
    for (const char* key : {"hybrid_override_pattern", "mamba_num_heads", "mamba_head_dim",
                            "ssm_state_size", "n_groups", "conv_kernel", "chunk_size"})
      if (const json* v = r.raw(key)) out[key] = *v;
    if (const auto hd = r.optional_int("attention_head_dim", 1)) out["head_dim"] = *hd;
  } else {
    out["activation"] = gated_activation(r, type == "gemma2" ? "hidden_activation" : "hidden_act");
    if (type == "gemma2") r.use("hidden_act");
    out["ffn_hidden"] = r.required_int("intermediate_size");
  }
  if (type == "qwen3" || type == "qwen3_moe") out["qk_norm"] = true;
  if (type == "gemma2") {
    out["post_norms"] = true;
    if (const auto cap = r.optional_number("final_logit_softcapping"); cap && *cap > 0)
      out["final_logit_softcapping"] = *cap;
  }
  if (type == "deepseek_v3") {
    for (const char* key : {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                            "v_head_dim", "num_nextn_predict_layers"})
      if (const json* v = r.raw(key)) out[key] = *v;
    out.erase("kv_heads");  // MLA: every head has its key and value
  }
  if (type == "mixtral" || type == "qwen3_moe" || type == "deepseek_v3") read_moe(r, type, out);
  read_windows(r, type, layers, out);
  r.check_all_read();
  return out;
}

}  // namespace shardcost
