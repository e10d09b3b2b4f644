// Today's families through the graph: MLA, fine-grained MoE with shared experts and dense first
// layers, expert tensor parallelism, routing imbalance, multi-token prediction.
#include <gtest/gtest.h>

#include <string_view>

#include "model_math.h"
#include "shardcost/estimator.h"
#include "transformer.h"

namespace shardcost {
namespace {

const Op* find_op(const Block& b, std::string_view name) {
  for (const Op& op : b.ops)
    if (name == op.name) return &op;
  return nullptr;
}

const Block* find_block(const Graph& g, std::string_view name) {
  for (const Block& b : g.blocks)
    if (name == b.name) return &b;
  return nullptr;
}

Strategy moe_strategy(int tp, int ep, int dp, int etp = 0) {
  Strategy s;
  s.tp = tp;
  s.ep = ep;
  s.dp = dp;
  s.etp = etp;
  s.sp = tp > 1;
  s.mbs = 1;
  s.gbs = dp;
  return s;
}

TEST(Families, DeepSeekV3GraphHasDenseAndExpertRunsAndMtpOnTheLastStage) {
  const Model m = load_model("deepseek-v3");
  Graph g;
  transformer_workload(m)->graph(moe_strategy(1, 8, 8), AttentionKernel::flash, g);
  ASSERT_EQ(g.blocks.size(), 5u);
  EXPECT_STREQ(g.blocks[1].name, "dense_layer");
  EXPECT_EQ(g.blocks[1].count, 3);
  EXPECT_STREQ(g.blocks[2].name, "moe_layer");
  EXPECT_EQ(g.blocks[2].count, 58);
  EXPECT_EQ(g.body_units(), 61);
  const Block* mtp = find_block(g, "mtp");
  ASSERT_NE(mtp, nullptr);
  EXPECT_EQ(mtp->pin, Block::Pin::last_stage);
  // Its embedding copy is tied to the first stage's table; its layer is an expert layer.
  EXPECT_DOUBLE_EQ(mtp->tied_params, 129280.0 * 7168);
  EXPECT_NE(find_op(*mtp, "expert_fc1"), nullptr);
  EXPECT_NE(find_op(*mtp, "mtp_projection"), nullptr);
  // Dense layers hold no experts, expert layers 32 local experts of 3 h f each.
  EXPECT_DOUBLE_EQ(g.blocks[1].expert_params, 0);
  EXPECT_DOUBLE_EQ(g.blocks[2].expert_params, 32 * 3.0 * 7168 * 2048);
  // Every weight is somewhere: the blocks' parameters over the EP ranks add up to the model.
  double dense = 0, expert = 0;
  for (const Block& b : g.blocks) {
    dense += b.count * (b.dense_params + (b.pin == Block::Pin::last_stage ? 0 : b.tied_params));
    expert += b.count * b.expert_params;
  }
  EXPECT_DOUBLE_EQ(dense + 8 * expert, parameter_count(m) + mtp_parameter_count(m));
}

TEST(Families, MlaGathersItsLatentsNotTheHiddenStates) {
  const Model m = load_model("deepseek-v3");
  Strategy s = moe_strategy(4, 1, 2);
  Graph g;
  transformer_workload(m)->graph(s, AttentionKernel::flash, g);
  const Block& layer = g.blocks[1];
  const Op* gather = find_op(layer, "mla_latent_all_gather");
  ASSERT_NE(gather, nullptr);
  // 4096 tokens of (1536 + 512 + 64) bf16 elements, not 7168.
  EXPECT_DOUBLE_EQ(gather->bytes, 2.0 * 4096 * (1536 + 512 + 64));
  // The down projections run whole on the rank's own quarter of the tokens; the up
  // projections on all tokens for a quarter of the heads.
  EXPECT_EQ(find_op(layer, "mla_kv_down")->gemm, (GemmShape{1024, 576, 7168, 1}));
  EXPECT_EQ(find_op(layer, "mla_q_up")->gemm, (GemmShape{4096, 32 * 192, 1536, 1}));
  EXPECT_EQ(find_op(layer, "mla_kv_up")->gemm, (GemmShape{4096, 32 * 256, 512, 1}));
  EXPECT_EQ(find_op(layer, "attention_proj")->gemm, (GemmShape{4096, 7168, 32 * 128, 1}));
  // The hidden states are gathered once, for the MLP, not for attention.
  int gathers = 0;
  for (const Op& op : layer.ops) gathers += std::string_view(op.name) == "tp_all_gather";
  EXPECT_EQ(gathers, 1);
  EXPECT_STREQ(layer.ops[0].name, "input_norm");
  EXPECT_STREQ(layer.ops[1].name, "mla_q_down");
}

TEST(Families, QwenHeadDimIsItsOwnAndQkNormsArePriced) {
  const Model m = load_model("qwen3-235b-a22b");
  Graph g;
  transformer_workload(m)->graph(moe_strategy(4, 1, 2), AttentionKernel::flash, g);
  const Block& layer = g.blocks[1];
  // 64 query heads of 128 (8192 wide on a 4096 model) and 4 kv heads: 16 + 2 x 1 per rank.
  EXPECT_EQ(find_op(layer, "qkv")->gemm, (GemmShape{4096, (16 + 2) * 128, 4096, 1}));
  EXPECT_NE(find_op(layer, "qk_norm"), nullptr);
}

TEST(Families, ExpertTensorParallelismEqualToTpChangesNothing) {
  const Model m = load_model("mixtral-8x7b");
  const Cluster c = load_cluster("dgx-h100", 64);
  Strategy s = parse_strategy("tp=2,pp=2,ep=4,mbs=1,gbs=128,sp=true", 64);
  const Estimate a = estimate(m, c, s);
  s.etp = 2;
  const Estimate b = estimate(m, c, s);
  EXPECT_DOUBLE_EQ(a.step_time_s, b.step_time_s);
  EXPECT_DOUBLE_EQ(a.memory_per_gpu_bytes, b.memory_per_gpu_bytes);
}

TEST(Families, ExpertTensorParallelismFoldsTheExperts) {
  const Model m = load_model("deepseek-v3");
  // tp=4 attention, experts whole (etp=1) over ep=8: 32 experts a rank, every rank's tokens.
  const Strategy s = moe_strategy(4, 8, 2, 1);
  ASSERT_FALSE(transformer_workload(m)->check(s).has_value());
  Graph g;
  transformer_workload(m)->graph(s, AttentionKernel::flash, g);
  const Block& layer = g.blocks[2];
  EXPECT_DOUBLE_EQ(layer.expert_params, 32 * 3.0 * 7168 * 2048);
  EXPECT_EQ(find_op(layer, "moe_tp_all_gather"), nullptr);  // nothing to gather over etp=1
  // Each rank routes its own 1024 tokens x 8: 8 ranks' 65,536 copies over 256 experts.
  EXPECT_DOUBLE_EQ(find_op(layer, "ep_dispatch")->bytes, 2.0 * 1024 * 8 * 7168);
  EXPECT_EQ(find_op(layer, "expert_fc1")->gemm, (GemmShape{256, 2 * 2048, 7168, 32}));
  // The shared expert gathers and scatters over TP itself.
  EXPECT_NE(find_op(layer, "shared_expert_fc1"), nullptr);
  EXPECT_EQ(find_op(layer, "shared_expert_fc1")->gemm, (GemmShape{4096, 2 * 512, 7168, 1}));
  // Expert data parallelism: tp*dp/(ep*etp) = 1 rank holds each expert shard.
  EXPECT_EQ(s.expert_dp(), 1);
}

TEST(Families, ImbalanceLoadsTheBusiestRankCappedByCapacity) {
  Model m = load_model("deepseek-v3");
  const Strategy s = moe_strategy(1, 8, 8);
  auto layer_of = [&](const Model& model) {
    Graph g;
    transformer_workload(model)->graph(s, AttentionKernel::flash, g);
    return g.blocks[2];
  };
  const Block even = layer_of(m);
  m.moe.imbalance = 2;
  const Block skewed = layer_of(m);
  EXPECT_EQ(find_op(skewed, "expert_fc1")->gemm.m, 2 * find_op(even, "expert_fc1")->gemm.m);
  EXPECT_DOUBLE_EQ(find_op(skewed, "ep_dispatch")->bytes, 2 * find_op(even, "ep_dispatch")->bytes);
  EXPECT_GT(skewed.kept_bytes[0], even.kept_bytes[0]);
  m.moe.capacity_factor = 1.25;  // tokens past 1.25x the mean are dropped
  EXPECT_EQ(find_op(layer_of(m), "expert_fc1")->gemm.m,
            static_cast<int64_t>(1.25 * find_op(even, "expert_fc1")->gemm.m));
}

TEST(Families, BadSplitsNameTheField) {
  const Model m = load_model("deepseek-v3");
  const auto w = transformer_workload(m);
  auto why = [&](const Strategy& s) { return w->check(s).value_or(""); };
  EXPECT_NE(why(moe_strategy(1, 3, 3)).find("ep=3 does not divide the 256 experts"),
            std::string::npos);
  EXPECT_NE(why(moe_strategy(1, 8, 8, 3)).find("etp=3 does not divide the experts' ffn size 2048"),
            std::string::npos);
  EXPECT_NE(why(moe_strategy(2, 8, 2, 4)).find("ep*etp = 32 does not divide tp*cp*dp = 4"),
            std::string::npos);
  Strategy no_sp = moe_strategy(2, 1, 4, 1);
  no_sp.sp = false;
  EXPECT_NE(why(no_sp).find("needs sp=true"), std::string::npos);
  Strategy dense = moe_strategy(2, 1, 4, 1);
  EXPECT_NE(transformer_workload(load_model("llama3-8b"))
                ->check(dense)
                .value_or("")
                .find("etp (expert tensor parallelism) needs a mixture-of-experts model"),
            std::string::npos);
}

// Mamba-2's chunked scan moves its chunk states through HBM between its kernels (mamba_ssm's
// ssd_combined.py): Nemotron-H 56B, 256 heads of P = 64, state N = 256, 8 groups, chunks of
// Q = 128. States per token: 256 x 64 x 256 / 128 = 32,768 elements; scores 8 x 128 = 1,024.
// Forward 12 x 32,768 + 8 x 1,024 = 401,408 bytes a token, backward 34 x 32,768 + 24 x 1,024
// = 1,138,688; its FLOPs 2 x 128 x 256 x 8 + 256 x (2 x 128 x 64 + 4 x 256 x 64) = 21,495,808
// a token: 53.5 FLOPs a byte forward, below any GPU's ridge at a fused kernel's rate
// (FusedKernels.AScanThatMovesMoreThanItComputesIsPricedByItsBytes prices it on H100).
TEST(Families, MambaScanIsPricedByItsChunkStatesTraffic) {
  const Model m = load_model("nemotron-h-56b");
  EXPECT_DOUBLE_EQ(mamba_scan_bytes_per_token(m, false), 401408);
  EXPECT_DOUBLE_EQ(mamba_scan_bytes_per_token(m, true), 1138688);
  EXPECT_DOUBLE_EQ(mamba_scan_flops_per_token(m), 21495808);
  const auto w = transformer_workload(m);
  Strategy s;
  s.tp = 8;
  s.sp = true;
  s.mbs = 1;
  Graph g;
  w->graph(s, AttentionKernel::flash, g);
  const Op* scan = find_op(g.blocks[1], "mamba_ssd_scan");
  ASSERT_NE(scan, nullptr);
  EXPECT_DOUBLE_EQ(scan->bytes, 401408.0 * 8192 / 8);
  EXPECT_DOUBLE_EQ(scan->backward_bytes, 1138688.0 * 8192 / 8);
  EXPECT_DOUBLE_EQ(scan->flops, 21495808.0 * 8192 / 8);
}

TEST(Families, HybridPatternLayersAreTheirOwnBlocks) {
  const Model m = load_model("nemotron-h-56b");
  const auto w = transformer_workload(m);
  Strategy s;
  s.tp = 8;
  s.sp = true;
  s.mbs = 1;
  Graph g;
  w->graph(s, AttentionKernel::flash, g);
  EXPECT_EQ(g.body_units(), 118);
  // "M-M-M-M*-...": a Mamba layer, an MLP layer, ... each run its own block.
  EXPECT_STREQ(g.blocks[1].name, "mamba");
  EXPECT_STREQ(g.blocks[2].name, "mlp");
  const Block* attention = nullptr;
  for (const Block& b : g.blocks)
    if (std::string_view(b.name) == "dense_layer") attention = &b;  // attention, no MLP
  ASSERT_NE(attention, nullptr);
  EXPECT_NE(find_op(*attention, "flash_attention"), nullptr);
  EXPECT_EQ(find_op(*attention, "mlp_fc1"), nullptr);
  EXPECT_NE(find_op(g.blocks[1], "mamba_ssd_scan"), nullptr);
  EXPECT_EQ(find_op(g.blocks[1], "flash_attention"), nullptr);
  EXPECT_EQ(find_op(g.blocks[2], "mamba_in_proj"), nullptr);
  // TP splits the Mamba heads: in_proj's 2 x 16384 + 2 x 8 x 256 + 256 outputs over 8 ranks.
  EXPECT_EQ(find_op(g.blocks[1], "mamba_in_proj")->gemm, (GemmShape{8192, 37120 / 8, 8192, 1}));
  // Every parameter is in a block: over 8 TP ranks, plus what each rank holds whole (norms).
  double params = 0;
  for (const Block& b : g.blocks) params += b.count * (b.dense_params + b.expert_params);
  const double norms = (54 * 2 + 10 + 1) * 8192.0;
  EXPECT_NEAR(params * 8 - 7 * norms, parameter_count(m), 1.0);
  // The graph's FLOPs are the model's, but for the Mamba convolutions (priced by their bytes).
  s.tp = 1;
  s.sp = false;
  w->graph(s, AttentionKernel::standard, g);
  double flops = 0;
  for (const Block& b : g.blocks)
    for (const Op& op : b.ops) flops += b.count * op.forward_flops();
  EXPECT_NEAR(3 * flops / w->model_flops(1), 1.0, 1e-4);
}

TEST(Families, MambaContextParallelismSwapsSequenceForHeads) {
  const Model m = load_model("nemotron-h-56b");
  Strategy s;
  s.tp = 4;
  s.sp = true;
  s.cp = 2;
  s.mbs = 1;
  const auto w = transformer_workload(m);
  ASSERT_FALSE(w->check(s).has_value());
  Graph g;
  w->graph(s, AttentionKernel::flash, g);
  const Op* in = find_op(g.blocks[1], "cp_mamba_in_all_to_all");
  ASSERT_NE(in, nullptr);
  EXPECT_DOUBLE_EQ(in->bytes, 2.0 * 4096 * 37120 / 4);  // the rank's half sequence, 1/4 heads
  s.cp = 64;
  EXPECT_NE(w->check(s).value_or("").find("cp=64 splits Mamba heads and groups"),
            std::string::npos);
}

TEST(Families, SlidingAndChunkedWindowsPriceTheKeysTheySee) {
  // A gpt-oss-like model: sliding windows of 128 on every other layer.
  const std::string base = R"({"layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 4,
    "ffn_hidden": 4096, "vocab": 1000, "seq_len": 8192, "activation": "swiglu",
    "position_embedding": "rope", "norm": "rmsnorm", "bias": false)";
  const Model full = parse_model_json(base + "}", "full.json");
  const Model alt = parse_model_json(base + R"(, "sliding_window": 128, "layer_types":
    ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]})",
                                     "alt.json");
  const Model chunked = parse_model_json(base + R"(, "attention_chunk_size": 1024})", "c.json");
  EXPECT_EQ(layer_runs(alt).size(), 4u);
  EXPECT_EQ(alt.layer_kind(0).window, Window::sliding);
  EXPECT_EQ(alt.layer_kind(1).window, Window::full);
  // Causal pairs of one 8192-token sequence: 8192 x 8193 / 2 in full; 128 x 8192 - 128 x 127 / 2
  // under the window; 8192 x 1025 / 2 in chunks of 1024.
  const double n = 8192, pairs = n * (n + 1) / 2;
  EXPECT_DOUBLE_EQ(windowed_squared(alt, Window::sliding, n, n * n),
                   n * n * (128 * n - 128 * 127 / 2.0) / pairs);
  EXPECT_DOUBLE_EQ(windowed_squared(chunked, Window::chunked, n, n * n),
                   n * n * (n * 1025 / 2) / pairs);
  // A window at least the sequence changes nothing.
  EXPECT_DOUBLE_EQ(windowed_squared(alt, Window::sliding, 100, 100 * 100.0), 100 * 100.0);
  // The fused kernel's FLOPs shrink by exactly that on the windowed layers.
  Strategy s;
  s.mbs = 1;
  Graph gf, ga;
  transformer_workload(full)->graph(s, AttentionKernel::flash, gf);
  transformer_workload(alt)->graph(s, AttentionKernel::flash, ga);
  const double f_full = find_op(gf.blocks[1], "flash_attention")->flops;
  const double f_window = find_op(ga.blocks[1], "flash_attention")->flops;
  EXPECT_NEAR(f_window / f_full, (128 * n - 128 * 127 / 2.0) / pairs, 1e-12);
  EXPECT_DOUBLE_EQ(find_op(ga.blocks[2], "flash_attention")->flops, f_full);
  // Model FLOPs count what the windows leave.
  EXPECT_LT(model_flops_per_step(alt, 1), model_flops_per_step(full, 1));
  EXPECT_LT(model_flops_per_step(chunked, 1), model_flops_per_step(full, 1));
}

TEST(Families, ReviewedEdges) {
  // Ring context parallelism masks: a window does not shrink its attention.
  const std::string base = R"({"layers": 2, "hidden": 1024, "heads": 16, "kv_heads": 4,
    "ffn_hidden": 4096, "vocab": 1000, "seq_len": 32768, "activation": "swiglu", "bias": false,
    "position_embedding": "rope", "norm": "rmsnorm")";
  const Model full = parse_model_json(base + "}", "full.json");
  const Model window = parse_model_json(base + R"(, "sliding_window": 4096})", "w.json");
  Strategy ring;
  ring.cp = 2;
  ring.mbs = 1;
  Graph gf, gw;
  transformer_workload(full)->graph(ring, AttentionKernel::flash, gf);
  transformer_workload(window)->graph(ring, AttentionKernel::flash, gw);
  EXPECT_DOUBLE_EQ(find_op(gw.blocks[1], "flash_attention")->flops,
                   find_op(gf.blocks[1], "flash_attention")->flops);
  Strategy ulysses = ring;
  ulysses.cp_kind = CpKind::ulysses;
  transformer_workload(window)->graph(ulysses, AttentionKernel::flash, gw);
  transformer_workload(full)->graph(ulysses, AttentionKernel::flash, gf);
  EXPECT_LT(find_op(gw.blocks[1], "flash_attention")->flops,
            find_op(gf.blocks[1], "flash_attention")->flops);

  // MLA without query compression gathers the hidden states for its query projection.
  Model mla = load_model("deepseek-v3");
  mla.mla.q_lora_rank = 0;
  Strategy tp = moe_strategy(4, 1, 2);
  Graph g;
  transformer_workload(mla)->graph(tp, AttentionKernel::flash, g);
  int gathers = 0;
  for (const Op& op : g.blocks[1].ops) gathers += std::string_view(op.name) == "tp_all_gather";
  EXPECT_EQ(gathers, 2);  // the query projection's and the MLP's

  // With one rank holding every expert, imbalance moves nothing.
  Model skew = load_model("deepseek-v3");
  const Strategy one_rank = moe_strategy(1, 1, 8);
  transformer_workload(skew)->graph(one_rank, AttentionKernel::flash, g);
  const GemmShape even = find_op(g.blocks[2], "expert_fc1")->gemm;
  skew.moe.imbalance = 3;
  transformer_workload(skew)->graph(one_rank, AttentionKernel::flash, g);
  EXPECT_EQ(find_op(g.blocks[2], "expert_fc1")->gemm, even);
}

}  // namespace
}  // namespace shardcost
