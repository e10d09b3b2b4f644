#pragma once
// The built-in transformer family's description (dense, GQA, MLA, fine-grained MoE, multi-token
// prediction): the input of the first workload producer (shardcost/workload.h). Fields follow
// the names of the models' published configs (docs/estimator.md, "Model files").
#include <string>

namespace shardcost {

enum class Activation { gelu, swiglu };

// Multi-head latent attention (DeepSeek-V2/V3): queries through a low-rank projection (none
// when q_lora_rank is 0), keys and values from one shared latent of kv_lora_rank, each head's
// query and key split into a part without position (qk_nope_head_dim) and a rotary part
// (qk_rope_head_dim, its key shared by all heads), values of v_head_dim.
struct Mla {
  int q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  int qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

// Mixture of experts: `experts` routed experts of `expert_ffn_hidden` each, `top_k` per token,
// `shared_experts` always-active ones of the same size, the first `first_dense_layers` layers
// dense (DeepSeek's first_k_dense_replace). Routing as priced: the busiest expert receives
// `imbalance` times the mean (max/mean tokens per expert, 1: balanced), at most
// `capacity_factor` times it when tokens beyond capacity are dropped (0: dropless).
struct Moe {
  int experts = 0, top_k = 0;
  int expert_ffn_hidden = 0;  // moe_intermediate_size; 0: the model's ffn_hidden
  int shared_experts = 0;
  int first_dense_layers = 0;
  bool expert_bias = false;  // a per-expert routing bias (DeepSeek-V3's noaux_tc)
  double imbalance = 1;
  double capacity_factor = 0;
  // The busiest expert's tokens over the mean: imbalance, capped by the capacity.
  double load_factor() const {
    return capacity_factor > 0 && capacity_factor < imbalance ? capacity_factor : imbalance;
  }
};

// A decoder-only transformer, as model JSON files and the catalog describe it.
struct Model {
  std::string name;
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn_hidden = 0, vocab = 0, seq_len = 0;
  int head_dim_override = 0;  // head_dim where it is not hidden / heads (Qwen3)
  Activation activation = Activation::gelu;
  bool bias = true;               // linear layers carry biases (GPT) or not (Llama)
  bool tied_embeddings = true;    // LM head shares the input embedding
  bool learned_positions = true;  // learned position embedding (GPT) or rotary (Llama)
  bool rmsnorm = false;
  bool qk_norm = false;  // a norm over each query and key head (Qwen3)
  double dropout = 0;    // hidden and attention dropout probability
  Mla mla;               // multi-head latent attention when kv_lora_rank > 0
  Moe moe;               // MoE when moe.experts > 0
  int mtp_layers = 0;    // multi-token prediction modules (num_nextn_predict_layers)
  bool is_moe() const { return moe.experts > 0; }
  bool is_mla() const { return mla.kv_lora_rank > 0; }
  int head_dim() const { return head_dim_override > 0 ? head_dim_override : hidden / heads; }
  // Layer i (0-based) runs the experts (an MoE model's layers past the dense first ones).
  bool moe_layer(int i) const { return is_moe() && i >= moe.first_dense_layers; }
  int expert_ffn() const { return moe.expert_ffn_hidden > 0 ? moe.expert_ffn_hidden : ffn_hidden; }
};

}  // namespace shardcost
