#pragma once
// The built-in transformer family's description (dense, GQA, MLA, fine-grained MoE, multi-token
// prediction): the input of the first workload producer (shardcost/workload.h). Fields follow
// the names of the models' published configs (docs/estimator.md, "Model files").
#include <string>
#include <vector>

namespace shardcost {

// relu2: squared ReLU, an up and a down projection with no gate (Nemotron-H).
enum class Activation { gelu, swiglu, relu2 };

// What one layer runs: a token mixer (attention, a Mamba-2 state-space mixer, or none) and a
// feed-forward part (a dense MLP, experts, or none), each behind its own norm and residual. A
// transformer layer is attention then MLP or experts; a hybrid model's pattern (Nemotron-H's
// hybrid_override_pattern) gives one of them per layer.
enum class Mixer { attention, mamba, none };
enum class Ffn { dense, moe, none };
// Which keys an attention layer's queries see: all earlier ones (full, causal), the last
// `sliding_window` (sliding), or the earlier ones of their own chunk of `attention_chunk_size`
// (chunked, Llama 4's).
enum class Window { full, sliding, chunked };
struct LayerKind {
  Mixer mixer = Mixer::attention;
  Ffn ffn = Ffn::dense;
  Window window = Window::full;
  bool operator==(const LayerKind&) const = default;
};

// Multi-head latent attention (DeepSeek-V2/V3): queries through a low-rank projection (none
// when q_lora_rank is 0), keys and values from one shared latent of kv_lora_rank, each head's
// query and key split into a part without position (qk_nope_head_dim) and a rotary part
// (qk_rope_head_dim, its key shared by all heads), values of v_head_dim.
struct Mla {
  int q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  int qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

// Mamba-2 (Dao and Gu 2024): `heads` heads of `head_dim` (the inner width heads x head_dim),
// B and C of `state` per group of heads, a depthwise causal convolution over x, B and C, and
// the chunked state-space scan (SSD) in chunks of `chunk`.
struct Mamba {
  int heads = 0, head_dim = 0, state = 0, groups = 1, conv_kernel = 4, chunk = 128;
  double inner() const { return static_cast<double>(heads) * head_dim; }
  double conv_dim() const { return inner() + 2.0 * groups * state; }
};

// Mixture of experts: `experts` routed experts of `expert_ffn_hidden` each, `top_k` per token,
// `shared_experts` always-active ones of the same size, the first `first_dense_layers` layers
// dense (DeepSeek's first_k_dense_replace). Routing as priced: the busiest expert receives
// `imbalance` times the mean (max/mean tokens per expert, 1: balanced), at most
// `capacity_factor` times it when tokens beyond capacity are dropped (0: dropless).
// Where a MoE layer's routed copies go: `top_k` of `experts` per token, the experts spread
// evenly over the expert-parallel group, group-limited where `groups` > 0 (Moe's fields). A
// dispatch or combine op carries it so that a deduplicating dispatcher can be priced.
struct Routing {
  int experts = 0, top_k = 0, groups = 0, group_top_k = 0;
};

struct Moe {
  int experts = 0, top_k = 0;
  int expert_ffn_hidden = 0;  // moe_intermediate_size; 0: the model's ffn_hidden
  int shared_experts = 0;
  int first_dense_layers = 0;
  bool expert_bias = false;  // a per-expert routing bias (DeepSeek-V3's noaux_tc)
  // Group-limited routing (n_group, topk_group): experts in `groups` equal groups of
  // consecutive experts, each token routed within its best `group_top_k` of them (DeepSeek-
  // V3: 8 and 4, at most 4 nodes when a node holds a group). 0: routing over all experts.
  int groups = 0, group_top_k = 0;
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
  bool qk_norm = false;   // a norm over each query and key head (Qwen3)
  bool qkv_bias = false;  // biases on the query, key and value projections only (Qwen2)
  // A second norm on each sublayer's output before its residual add (Gemma-2's
  // post_attention_layernorm and post_feedforward_layernorm): four norms a layer, not two.
  bool post_norms = false;
  // The logits capped as cap * tanh(logits / cap) before the loss (Gemma-2's
  // final_logit_softcapping); 0: none.
  double logit_softcap = 0;
  double dropout = 0;              // hidden and attention dropout probability
  Mla mla;                         // multi-head latent attention when kv_lora_rank > 0
  Moe moe;                         // MoE when moe.experts > 0
  int mtp_layers = 0;              // multi-token prediction modules (num_nextn_predict_layers)
  Mamba mamba;                     // the state-space mixer of a hybrid pattern's 'M' layers
  std::vector<LayerKind> pattern;  // one kind per layer (hybrid models); empty: transformer layers
  int sliding_window = 0;          // keys a sliding-window layer's queries see
  int attention_chunk = 0;         // a chunked layer's chunk (attention_chunk_size)
  std::vector<Window> windows;     // per layer (layer_types); empty: every attention layer the
                                   // model's window (sliding, else chunked, else full)
  bool is_moe() const { return moe.experts > 0; }
  bool is_mla() const { return mla.kv_lora_rank > 0; }
  int head_dim() const { return head_dim_override > 0 ? head_dim_override : hidden / heads; }
  // Layer i (0-based) runs the experts (an MoE model's layers past the dense first ones).
  bool moe_layer(int i) const { return layer_kind(i).ffn == Ffn::moe; }
  LayerKind layer_kind(int i) const {
    LayerKind k = !pattern.empty()
                      ? pattern[static_cast<size_t>(i)]
                      : LayerKind{Mixer::attention,
                                  is_moe() && i >= moe.first_dense_layers ? Ffn::moe : Ffn::dense};
    if (k.mixer == Mixer::attention) k.window = window_of(i);
    return k;
  }
  Window window_of(int i) const {
    if (!windows.empty()) return windows[static_cast<size_t>(i)];
    return sliding_window > 0    ? Window::sliding
           : attention_chunk > 0 ? Window::chunked
                                 : Window::full;
  }
  int expert_ffn() const { return moe.expert_ffn_hidden > 0 ? moe.expert_ffn_hidden : ffn_hidden; }
};

}  // namespace shardcost
