#include "transformer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "test_models.h"

namespace shardcost {
namespace {

using test_models::paper_gpt;
using test_models::tp;

// Korthikanti et al. 2022, Section 4: activation bytes per layer.
// What a selective recomputation can change in a model, which rank's search reads: MLA's up
// projections only with MLA, the experts' activation only with experts, attention's core only
// unfused; the norms in any model.
TEST(TransformerRecompute, SelectiveModulesCountOnlyWhereTheModelHasThem) {
  const auto llama = transformer_workload(load_model("llama3-8b"));
  const auto deepseek = transformer_workload(load_model("deepseek-v3"));
  const auto mixtral = transformer_workload(load_model("mixtral-8x7b"));
  const auto flash = AttentionKernel::flash, standard = AttentionKernel::standard;
  EXPECT_FALSE(llama->has_selective_recompute(flash, kRecomputeCoreAttn));
  EXPECT_TRUE(llama->has_selective_recompute(standard, kRecomputeCoreAttn));
  EXPECT_FALSE(llama->has_selective_recompute(flash, kRecomputeMlaUpProj));
  EXPECT_FALSE(llama->has_selective_recompute(flash, kRecomputeMoeAct));
  EXPECT_TRUE(llama->has_selective_recompute(flash, kRecomputeLayernorm));
  EXPECT_TRUE(deepseek->has_selective_recompute(flash, kRecomputeMlaUpProj));
  EXPECT_TRUE(deepseek->has_selective_recompute(flash, kRecomputeMoeAct));
  EXPECT_FALSE(mixtral->has_selective_recompute(flash, kRecomputeMlaUpProj));
  EXPECT_TRUE(mixtral->has_selective_recompute(flash, kRecomputeMlaUpProj | kRecomputeMoeAct));
  // Megatron-core's checkpointed modules: a dense MLP where some layer has one (DeepSeek-V3's
  // first three; none of Mixtral's), an MoE layer in MoE models, shared experts where some are.
  EXPECT_TRUE(llama->has_selective_recompute(flash, kRecomputeMlp));
  EXPECT_FALSE(llama->has_selective_recompute(flash, kRecomputeMoe));
  EXPECT_FALSE(llama->has_selective_recompute(flash, kRecomputeSharedExperts));
  EXPECT_TRUE(deepseek->has_selective_recompute(flash, kRecomputeMlp));
  EXPECT_TRUE(deepseek->has_selective_recompute(flash, kRecomputeMoe));
  EXPECT_TRUE(deepseek->has_selective_recompute(flash, kRecomputeSharedExperts));
  EXPECT_FALSE(mixtral->has_selective_recompute(flash, kRecomputeMlp));
  EXPECT_TRUE(mixtral->has_selective_recompute(flash, kRecomputeMoe));
  EXPECT_FALSE(mixtral->has_selective_recompute(flash, kRecomputeSharedExperts));
}

TEST(TransformerActivations, ActivationsMatchKorthikantiWithoutParallelism) {
  const Model m = paper_gpt();
  const double s = 2048, b = 2, h = 12288, a = 96;
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(m, tp(1, false, 2), AttentionKernel::standard, Recompute::none),
      s * b * h * (34 + 5 * a * s / h));
}

TEST(TransformerActivations, ActivationsMatchKorthikantiWithTensorParallelism) {
  const Model m = paper_gpt();
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(m, tp(8, false), AttentionKernel::standard, Recompute::none),
      s * b * h * (10 + 24 / t + 5 * a * s / (h * t)));
}

TEST(TransformerActivations, ActivationsMatchKorthikantiWithSequenceParallelism) {
  const Model m = paper_gpt();
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(m, tp(8, true), AttentionKernel::standard, Recompute::none),
      s * b * h / t * (34 + 5 * a * s / h));
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(m, tp(8, true), AttentionKernel::standard, Recompute::selective),
      34 * s * b * h / t);
}

TEST(TransformerActivations, FullRecomputationKeepsOnlyTheLayerInput) {
  const Model m = paper_gpt();
  const double s = 2048, b = 1, h = 12288;
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(m, tp(8, false), AttentionKernel::standard, Recompute::full),
      2 * s * b * h);
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(m, tp(8, true), AttentionKernel::standard, Recompute::full),
      2 * s * b * h / 8);
}

// torchtitan's per-op policy (recompute_modules=ops) on Llama 3 8B, one sequence of 8192, no
// tensor parallelism: it keeps the layer's input, wq's and wv's outputs, attention's output
// and softmax statistics, w1's and w2's outputs (by hand: T x (h + q + kv + q + f + h) 16-bit
// elements and 32 fp32 statistics a token), and recomputes wk, wo, w3 and every
// elementwise op.
TEST(TransformerActivations, TorchtitansPerOpPolicyKeepsAlternateMatmulOutputs) {
  const Model m = load_model("llama3-8b");
  Strategy s = tp(1, false);
  s.recompute = Recompute::selective;
  s.recompute_modules = kRecomputeOps;
  const double T = 8192, h = 4096, q = 4096, kv = 1024, f = 14336;
  const double kept = layer_activation_bytes(m, s, AttentionKernel::flash, Recompute::selective);
  EXPECT_DOUBLE_EQ(kept, 2 * T * (h + q + kv + q + f + h) + 4 * 32 * T);
  EXPECT_LT(kept, layer_activation_bytes(m, s, AttentionKernel::flash, Recompute::none));
  EXPECT_GT(kept, layer_activation_bytes(m, s, AttentionKernel::flash, Recompute::full));

  Graph g;
  transformer_workload(m)->graph(s, AttentionKernel::flash, g);
  std::map<std::string, std::pair<bool, double>> marked;
  for (const Block& b : g.blocks)
    if (std::string(b.name) == "layer")
      for (const Op& op : b.ops) marked[op.name] = {op.selective, op.selective_share};
  EXPECT_EQ(marked.at("qkv"), std::make_pair(true, kv / (q + 2 * kv)));  // wk of wq wk wv
  EXPECT_EQ(marked.at("attention_proj"), std::make_pair(true, 1.0));     // wo
  EXPECT_EQ(marked.at("mlp_fc1"), std::make_pair(true, 0.5));            // w3 of w1 w3
  EXPECT_FALSE(marked.at("mlp_fc2").first);                              // w2 kept
  EXPECT_FALSE(marked.at("flash_attention").first);                      // attention kept
  EXPECT_TRUE(marked.at("input_norm").first);
  EXPECT_TRUE(marked.at("swiglu").first);
}

// The policy is torchtitan's: other stacks refuse it, torchtitan refuses Megatron's modules,
// it stands alone, and only dense attention layers are modelled.
TEST(TransformerActivations, ThePerOpPolicyIsTorchtitansAndTakesLatentAttentionAtTp1) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-a100", 8);
  EstimateOptions titan;
  titan.software = software_preset("torchtitan");
  const Strategy per_op = parse_strategy("tp=1,mbs=1,gbs=8,recompute=selective", 8);
  EXPECT_EQ(estimate(m, c, per_op, titan).strategy.recompute_modules, kRecomputeOps);
  EXPECT_THROW((void)estimate(m, c,
                              parse_strategy("mbs=1,gbs=8,recompute=selective,"
                                             "recompute_modules=ops",
                                             8)),
               InputError);
  EXPECT_THROW((void)estimate(m, c,
                              parse_strategy("mbs=1,gbs=8,recompute=selective,"
                                             "recompute_modules=core_attn",
                                             8),
                              titan),
               InputError);
  EXPECT_TRUE(check_strategy(m, c,
                             parse_strategy("tp=1,mbs=1,gbs=8,recompute=selective,"
                                            "recompute_modules=ops/layernorm",
                                            8))
                  .has_value());
  // MoE layers take it (torchtitan_mx_test.cpp); latent attention only at tp=1.
  EXPECT_FALSE(check_strategy(load_model("mixtral-8x7b"), load_cluster("dgx-h100", 8),
                              parse_strategy("tp=1,ep=8,mbs=1,gbs=8,recompute=selective,"
                                             "recompute_modules=ops",
                                             8))
                   .has_value());
  EXPECT_FALSE(check_strategy(load_model("deepseek-v3"), load_cluster("dgx-h100", 64),
                              parse_strategy("tp=1,ep=8,mbs=1,gbs=64,recompute=selective,"
                                             "recompute_modules=ops",
                                             64))
                   .has_value());
  EXPECT_TRUE(check_strategy(load_model("deepseek-v3"), load_cluster("dgx-h100", 64),
                             parse_strategy("tp=2,ep=8,sp=true,mbs=1,gbs=64,recompute=selective,"
                                            "recompute_modules=ops",
                                            64))
                  .has_value());
}

TEST(TransformerActivations, ContextParallelismSplitsTheSequence) {
  const Model m = paper_gpt();
  Strategy one = tp(8, true), four = tp(8, true);
  four.cp = 4;
  const double full = layer_activation_bytes(m, one, AttentionKernel::flash, Recompute::none);
  const double split = layer_activation_bytes(m, four, AttentionKernel::flash, Recompute::none);
  EXPECT_DOUBLE_EQ(split * 4, full);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// Eager PyTorch's elementwise passes (Software::eager_elementwise, torchtitan): by hand for
// Llama 3 8B at 8192 tokens (h 4096, 32 query and 8 kv heads of 128), bf16. RMSNorm through
// at::rms_norm's composite: 40 B an element forward (upcast 6, pow 8, mean 4, two products
// 16, cast back 6) and 104 B backward, against the fused kernel's 4 and 10. RoPE as complex
// multiplies in fp32: 20 B an element of Q and K each way, where Transformer Engine's fused
// kernel reads and writes each once (4 B). repeat_kv: K and V read at 8 heads and written at
// 32, each way; fused stacks price none (zero bytes). SDPA's output needs no copy: the flash
// kernel writes it in the layout the transpose back reads contiguously.
TEST(TransformerEager, EagerPyTorchsNormRopeAndGqaRepeatCostTheirOwnPasses) {
  const auto w = transformer_workload(load_model("llama3-8b"));
  Graph g;
  w->graph(parse_strategy("tp=1,mbs=1,gbs=8", 8), AttentionKernel::flash, g);
  std::map<std::string, const Op*> ops;
  for (const Op& op : g.blocks[1].ops) ops[op.name] = &op;
  const double t = 8192, h = 4096;
  ASSERT_TRUE(ops.count("input_norm") && ops.count("rope") && ops.count("repeat_kv"));
  EXPECT_FALSE(ops.count("attention_out_copy"));
  EXPECT_DOUBLE_EQ(ops["input_norm"]->bytes, 4 * t * h);
  EXPECT_DOUBLE_EQ(ops["input_norm"]->eager_bytes, 40 * t * h);
  EXPECT_DOUBLE_EQ(ops["input_norm"]->eager_backward_bytes, 104 * t * h);
  EXPECT_DOUBLE_EQ(ops["mlp_norm"]->eager_bytes, 40 * t * h);
  EXPECT_DOUBLE_EQ(ops["rope"]->bytes, 4 * t * (32 + 8) * 128);
  EXPECT_DOUBLE_EQ(ops["rope"]->backward_bytes, 4 * t * (32 + 8) * 128);
  EXPECT_DOUBLE_EQ(ops["rope"]->eager_bytes, 20 * t * (32 + 8) * 128);
  EXPECT_DOUBLE_EQ(ops["rope"]->eager_backward_bytes, 20 * t * (32 + 8) * 128);
  EXPECT_DOUBLE_EQ(ops["repeat_kv"]->eager_bytes, 2 * 2 * t * (8 + 32) * 128);
  // A LayerNorm model keeps its fused kernel (PyTorch's native_layer_norm); learned positions
  // have no rotary pass; multi-head attention repeats nothing.
  const auto gpt = transformer_workload(load_model("gpt3-1.3b"));
  Graph gg;
  gpt->graph(parse_strategy("tp=1,mbs=1,gbs=8", 8), AttentionKernel::flash, gg);
  for (const Op& op : gg.blocks[1].ops) {
    EXPECT_NE(std::string(op.name), "rope");
    EXPECT_NE(std::string(op.name), "repeat_kv");
    if (std::string(op.name) == "input_norm") {
      EXPECT_LT(op.eager_bytes, 0);
    }
  }
}

TEST(TransformerUlysses, AllToAllsAroundAttentionInsteadOfTheRing) {
  const Model m = load_model("llama3-8b");  // 32 heads, 8 kv heads, head dim 128, seq 8192
  const auto w = transformer_workload(m);
  Strategy s = parse_strategy("tp=2,cp=4,mbs=1,gbs=64,cp_kind=ulysses", 64);
  EXPECT_EQ(s.cp_kind, CpKind::ulysses);
  EXPECT_NE(to_string(s).find(",cp_kind=ulysses"), std::string::npos);
  Graph g;
  w->graph(s, AttentionKernel::flash, g);
  std::vector<std::string> names;
  double qkv = 0, out = 0;
  for (const Op& op : g.blocks[1].ops) {
    names.emplace_back(op.name);
    EXPECT_NE(op.kind, OpKind::ring);
    if (std::string(op.name) == "cp_ulysses_qkv_all_to_all") qkv = op.bytes;
    if (std::string(op.name) == "cp_ulysses_out_all_to_all") out = op.bytes;
  }
  // By hand: 8192 / 4 = 2048 tokens per rank; 16 query heads and 4 kv heads per TP rank
  // (replicated up to cp = 4); bf16.
  EXPECT_DOUBLE_EQ(qkv, 2.0 * 2048 * (16 + 2 * 4) * 128);
  EXPECT_DOUBLE_EQ(out, 2.0 * 2048 * 16 * 128);
  // In order: qkv GEMM, all-to-all, attention, all-to-all, projection.
  auto at = [&](const char* n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
  EXPECT_LT(at("qkv"), at("cp_ulysses_qkv_all_to_all"));
  EXPECT_LT(at("cp_ulysses_qkv_all_to_all"), at("flash_attention"));
  EXPECT_LT(at("flash_attention"), at("cp_ulysses_out_all_to_all"));
  EXPECT_LT(at("cp_ulysses_out_all_to_all"), at("attention_proj"));
  // Heads must split over cp: 4 per TP rank at tp=8 do not divide by 8.
  const auto why = w->check(parse_strategy("tp=8,cp=8,mbs=1,gbs=8,cp_kind=ulysses", 64));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("do not divide by cp=8"), std::string::npos) << *why;
  EXPECT_THROW(parse_strategy("cp_kind=star", 8), InputError);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// Found by the model fuzzer once it checked what it priced: a mixture of experts with fewer
// routed tokens than experts made an expert GEMM of zero rows, priced 0/0 (a NaN step).
TEST(TransformerMoe, FewerTokensThanExpertsStillPriceARowEach) {
  Model m = load_model("mixtral-8x7b");  // 8 experts, top 2
  m.seq_len = 3;                         // 3 tokens x top 2 = 6 routed over 8 experts
  const auto w = transformer_workload(m);
  Graph g;
  w->graph(parse_strategy("gbs=1", 1), AttentionKernel::flash, g);
  for (const Op& op : g.blocks[1].ops) {
    if (op.kind == OpKind::gemm) {
      EXPECT_GE(op.gemm.m, 1) << op.name;
    }
  }
  const Estimate e = estimate(m, load_cluster("dgx-h100", 1), parse_strategy("gbs=1", 1));
  EXPECT_TRUE(std::isfinite(e.step_time_s) && e.step_time_s > 0) << e.step_time_s;
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// Megatron-core's all-to-all dispatcher with tp and ep: each TP rank sends its own T/tp
// routed tokens over expert parallelism, then the group gathers them over TP. Mixtral 8x7B,
// seq 4096, mbs 1, tp 2, ep 4, sp: per rank and direction 4096 / 2 tokens x top 2 x h 4096 x
// 2 bytes over EP (before: all 4096 tokens, tp = 2 times as much), and the TP all-gather
// moves the TP group's 4096 x 2 routed tokens.
TEST(TransformerMoe, ExpertParallelTrafficIsEachTensorRanksOwnTokens) {
  const Model m = load_model("mixtral-8x7b");
  ASSERT_EQ(m.seq_len, 4096);
  const auto w = transformer_workload(m);
  auto ops = [&](const char* text) {
    Graph g;
    w->graph(parse_strategy(text, 64), AttentionKernel::flash, g);
    std::map<std::string, double> bytes;
    for (const Op& op : g.blocks[1].ops)
      if (op.kind == OpKind::collective) bytes[op.name] += op.bytes;
    return bytes;
  };
  const double h = 4096;
  auto tp2 = ops("tp=2,ep=4,mbs=1,gbs=32,sp=true");
  EXPECT_DOUBLE_EQ(tp2["ep_dispatch"], 2.0 * 2048 * 2 * h);
  EXPECT_DOUBLE_EQ(tp2["ep_combine"], 2.0 * 2048 * 2 * h);
  EXPECT_DOUBLE_EQ(tp2["moe_tp_all_gather"], 2.0 * 4096 * 2 * h);
  EXPECT_DOUBLE_EQ(tp2["moe_tp_reduce_scatter"], 2.0 * 4096 * 2 * h);
  auto tp1 = ops("tp=1,ep=4,mbs=1,gbs=64");
  EXPECT_DOUBLE_EQ(tp1["ep_dispatch"], 2.0 * 4096 * 2 * h);
  EXPECT_DOUBLE_EQ(tp2["ep_dispatch"] * 2, tp1["ep_dispatch"]);
  // Megatron-core refuses ep with tp but no sequence parallelism.
  const auto why = w->check(parse_strategy("tp=2,ep=4,mbs=1,gbs=32", 64));
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "ep>1 with tp>1 needs sp=true");
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// What a MoE layer does around its experts' GEMMs besides the all-to-alls (issue 32, item 3):
// the router's fp32 scores and top-k, the arrived copies sorted into expert order (permute)
// and back (unpermute, each token summing its k copies). Mixtral 8x7B, seq 4096, mbs 1, tp 1,
// ep 4, bf16: 4096 tokens x 8 experts of scores, 12 bytes each way; 4096 x 2 copies x h 4096 of
// permute, 2 bytes read and 2 written each way; unpermute reads each copy and writes 1/2 of a
// token per copy (k = 2) forward, reads that, writes the copy's gradient and reads the output
// again backward.
TEST(TransformerMoe, RouterAndPermutePassesMoveWhatTheyTouch) {
  const Model m = load_model("mixtral-8x7b");
  const auto w = transformer_workload(m);
  Graph g;
  w->graph(parse_strategy("tp=1,ep=4,mbs=1,gbs=64", 64), AttentionKernel::flash, g);
  std::map<std::string, std::pair<double, double>> passes;
  for (const Op& op : g.blocks[1].ops)
    if (op.kind == OpKind::memory) passes[op.name] = {op.bytes, op.backward_bytes};
  const double copies = 4096.0 * 2, h = 4096;
  EXPECT_DOUBLE_EQ(passes["moe_router_topk"].first, 4096.0 * 8 * 12);
  EXPECT_DOUBLE_EQ(passes["moe_router_topk"].second, 4096.0 * 8 * 12);
  EXPECT_DOUBLE_EQ(passes["moe_permute"].first, copies * h * 4);
  EXPECT_DOUBLE_EQ(passes["moe_permute"].second, copies * h * 4);
  EXPECT_DOUBLE_EQ(passes["moe_unpermute"].first, copies * h * (2 + 2 * 0.5));
  EXPECT_DOUBLE_EQ(passes["moe_unpermute"].second, copies * h * (4 + 2 * 0.5));
  // The dispatch and combine say where their copies go.
  for (const Op& op : g.blocks[1].ops) {
    if (op.axis != Axis::ep) continue;
    EXPECT_EQ(op.routing.experts, 8) << op.name;
    EXPECT_EQ(op.routing.top_k, 2) << op.name;
    EXPECT_EQ(op.routing.groups, 0) << op.name;
  }
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// Gemma-2's and Qwen2's own passes (issue 34): a norm on each sublayer's output before its
// residual add (2 bytes read and written per element forward, as every norm), the biases' on
// q, k and v gradient reduction, and a cap on the logits before the loss (an fp32 pass over
// them: 8 bytes forward, 12 backward per logit).
TEST(TransformerOps, PostNormsQkvBiasesAndCappedLogitsArePriced) {
  Model m = load_model("llama3-8b");
  const Strategy s = parse_strategy("tp=1,mbs=1,gbs=8", 8);
  auto names = [&](const Model& model) {
    Graph g;
    transformer_workload(model)->graph(s, AttentionKernel::flash, g);
    std::map<std::string, double> bytes;
    for (const Block& b : g.blocks)
      for (const Op& op : b.ops)
        if (op.kind == OpKind::memory) bytes[op.name] = op.bytes + op.backward_bytes;
    return bytes;
  };
  const auto plain = names(m);
  EXPECT_EQ(plain.count("post_attention_norm"), 0u);
  m.post_norms = true;
  m.qkv_bias = true;
  m.logit_softcap = 30;
  const auto gemma = names(m);
  const double tokens = 8192, h = 4096;
  EXPECT_DOUBLE_EQ(gemma.at("post_attention_norm"), plain.at("input_norm"));
  EXPECT_DOUBLE_EQ(gemma.at("post_mlp_norm"), tokens * h * (4 + 10));
  EXPECT_DOUBLE_EQ(gemma.at("qkv_bias_grads"), tokens * (4096 + 2 * 1024) * 2);
  EXPECT_DOUBLE_EQ(gemma.at("logit_softcap"), tokens * 128256 * (8 + 12));
}

}  // namespace
}  // namespace shardcost
