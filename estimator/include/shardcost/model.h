#pragma once
// The built-in transformer family's description (dense, GQA, MoE): the input of the first
// workload producer (shardcost/workload.h). Other families describe themselves elsewhere.
#include <string>

namespace shardcost {

enum class Activation { gelu, swiglu };

// A decoder-only transformer, as model JSON files and the catalog describe it.
struct Model {
  std::string name;
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn_hidden = 0, vocab = 0, seq_len = 0;
  Activation activation = Activation::gelu;
  bool bias = true;               // linear layers carry biases (GPT) or not (Llama)
  bool tied_embeddings = true;    // LM head shares the input embedding
  bool learned_positions = true;  // learned position embedding (GPT) or rotary (Llama)
  bool rmsnorm = false;
  double dropout = 0;          // hidden and attention dropout probability
  int experts = 0, top_k = 0;  // MoE when experts > 0
  bool is_moe() const { return experts > 0; }
  int head_dim() const { return hidden / heads; }
};

}  // namespace shardcost
