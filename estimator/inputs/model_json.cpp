// A model back to the JSON a model file holds: what the store keeps of a measured run's model,
// read again by parse_model_json into the same model.
#include <nlohmann/json.hpp>

#include "shardcost/estimator.h"

namespace shardcost {
namespace {

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::gelu:
      return "gelu";
    case Activation::swiglu:
      return "swiglu";
    case Activation::relu2:
      return "relu2";
  }
  return "gelu";
}

char pattern_char(LayerKind k) {
  if (k.mixer == Mixer::mamba) return 'M';
  if (k.mixer == Mixer::attention) return '*';
  return k.ffn == Ffn::moe ? 'E' : '-';
}

const char* window_name(Window w) {
  switch (w) {
    case Window::full:
      return "full_attention";
    case Window::sliding:
      return "sliding_attention";
    case Window::chunked:
      return "chunked_attention";
  }
  return "full_attention";
}

}  // namespace

std::string model_json(const Model& m) {
  nlohmann::ordered_json j;
  j["name"] = m.name;
  j["layers"] = m.layers;
  j["hidden"] = m.hidden;
  j["heads"] = m.heads;
  j["kv_heads"] = m.kv_heads;
  if (m.head_dim_override > 0) j["head_dim"] = m.head_dim_override;
  j["ffn_hidden"] = m.ffn_hidden;
  j["vocab"] = m.vocab;
  j["seq_len"] = m.seq_len;
  j["activation"] = activation_name(m.activation);
  j["norm"] = m.rmsnorm ? "rmsnorm" : "layernorm";
  j["position_embedding"] = m.learned_positions ? "learned" : "rope";
  j["bias"] = m.bias;
  j["tied_embeddings"] = m.tied_embeddings;
  j["dropout"] = m.dropout;
  if (m.qk_norm) j["qk_norm"] = true;
  if (m.qkv_bias) j["qkv_bias"] = true;
  if (m.post_norms) j["post_norms"] = true;
  if (m.logit_softcap > 0) j["final_logit_softcapping"] = m.logit_softcap;
  if (m.is_mla()) {
    j["q_lora_rank"] = m.mla.q_lora_rank;
    j["kv_lora_rank"] = m.mla.kv_lora_rank;
    j["qk_nope_head_dim"] = m.mla.qk_nope_head_dim;
    j["qk_rope_head_dim"] = m.mla.qk_rope_head_dim;
    j["v_head_dim"] = m.mla.v_head_dim;
  }
  if (m.mtp_layers > 0) j["num_nextn_predict_layers"] = m.mtp_layers;
  if (m.is_moe()) {
    nlohmann::ordered_json e;
    e["experts"] = m.moe.experts;
    e["top_k"] = m.moe.top_k;
    if (m.moe.expert_ffn_hidden > 0) e["moe_intermediate_size"] = m.moe.expert_ffn_hidden;
    e["n_shared_experts"] = m.moe.shared_experts;
    if (m.pattern.empty()) e["first_k_dense_replace"] = m.moe.first_dense_layers;
    if (m.moe.expert_bias) e["topk_method"] = "noaux_tc";
    if (m.moe.groups > 0) {
      e["n_group"] = m.moe.groups;
      e["topk_group"] = m.moe.group_top_k;
    }
    e["imbalance"] = m.moe.imbalance;
    if (m.moe.capacity_factor > 0) e["capacity_factor"] = m.moe.capacity_factor;
    j["moe"] = e;
  }
  if (!m.pattern.empty()) {
    std::string pattern;
    bool mamba = false;
    for (LayerKind k : m.pattern) {
      pattern += pattern_char(k);
      mamba = mamba || k.mixer == Mixer::mamba;
    }
    j["hybrid_override_pattern"] = pattern;
    if (mamba) {
      j["mamba_num_heads"] = m.mamba.heads;
      j["mamba_head_dim"] = m.mamba.head_dim;
      j["ssm_state_size"] = m.mamba.state;
      j["n_groups"] = m.mamba.groups;
      j["conv_kernel"] = m.mamba.conv_kernel;
      j["chunk_size"] = m.mamba.chunk;
    }
  }
  if (m.sliding_window > 0) j["sliding_window"] = m.sliding_window;
  if (m.attention_chunk > 0) j["attention_chunk_size"] = m.attention_chunk;
  if (!m.windows.empty()) {
    nlohmann::ordered_json types = nlohmann::ordered_json::array();
    for (Window w : m.windows) types.push_back(window_name(w));
    j["layer_types"] = types;
  }
  return j.dump();
}

}  // namespace shardcost
