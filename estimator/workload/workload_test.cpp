// Graphs from both producers, and the MLP family priced and ranked through the one path the
// transformer takes: nothing outside workload/ knows it exists.
#include <gtest/gtest.h>

#include "costs/pricing.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost {
namespace {

// Forward FLOPs of one micro-batch's graph, every copy of every block counted.
double graph_forward_flops(const Graph& g) {
  double f = 0;
  for (const Block& b : g.blocks)
    for (const Op& op : b.ops) f += b.count * op.forward_flops();
  return f;
}

// The unfused graph's GEMMs are Megatron's FLOP count (Narayanan et al. 2021, Eq. 3 and its
// generalisation to GQA, SwiGLU and top-k experts): 3 x forward matmuls per step, with the
// attention scores over the full sequence, tensor-parallel shards adding up to the whole.
TEST(Graph, TransformerGemmsAddUpToTheModelFlops) {
  for (const char* name :
       {"gpt3-175b", "llama3-8b", "llama3-70b", "mixtral-8x7b", "deepseek-v3", "qwen3-235b-a22b"}) {
    const Model m = load_model(name);
    const auto w = transformer_workload(m);
    for (int tp : {1, 8}) {
      // Replicated kv heads (kv_heads < tp) and the MoE router run whole on every rank.
      if (m.kv_heads % tp != 0 || (m.is_moe() && tp > 1)) continue;
      Strategy s;
      s.tp = tp;
      s.mbs = 2;
      s.ep = m.is_moe() ? 8 : 1;
      s.dp = 8;
      Graph g;
      w->graph(s, AttentionKernel::standard, g);
      // One micro-batch of 2 sequences on one rank, times tp ranks, times the 3 passes.
      const double per_step = 3 * tp * graph_forward_flops(g);
      // A vocabulary that tp does not divide (GPT-3's 50257) leaves each rank the whole
      // columns only: under 1e-6 of the FLOPs.
      EXPECT_NEAR(per_step / w->model_flops(2), 1.0, tp == 1 ? 1e-12 : 1e-6)
          << name << " tp=" << tp;
    }
  }
}

TEST(Graph, TransformerBlocksHoldTheModelsParameters) {
  const Model m = load_model("llama3-70b");  // untied head
  const auto w = transformer_workload(m);
  Strategy s;
  s.tp = 8;
  Graph g;
  w->graph(s, AttentionKernel::flash, g);
  ASSERT_EQ(g.blocks.size(), 3u);
  double params = 0;
  for (const Block& b : g.blocks)
    params += b.count * (b.dense_params + b.expert_params + b.tied_params);
  // Sharded 8 ways except the norms, which every tensor-parallel rank replicates: 80 layers
  // of two 8192-wide RMSNorms and the final one.
  const double norms = (80 * 2 + 1) * 8192.0;
  EXPECT_NEAR(8 * (params - norms) + norms, 70.55e9, 0.01e9);  // Meta's 70.6B
  EXPECT_EQ(g.body_units(), 80);
  EXPECT_EQ(g.blocks[0].pin, Block::Pin::first_stage);
  EXPECT_EQ(g.blocks[2].pin, Block::Pin::last_stage);
}

TEST(Graph, ResetKeepsNothingButCapacity) {
  Graph g;
  g.reset(2);
  g.blocks[0].ops.resize(5);
  g.blocks[0].dense_params = 3;
  g.boundary_bytes = 7;
  g.reset(1);
  ASSERT_EQ(g.blocks.size(), 1u);
  EXPECT_TRUE(g.blocks[0].ops.empty());
  EXPECT_EQ(g.blocks[0].dense_params, 0);
  EXPECT_EQ(g.boundary_bytes, 0);
}

// Four pairs 4096 -> 16384 -> 4096 over 2048-row samples.
MlpSpec four_pairs() {
  MlpSpec spec;
  spec.name = "mlp-4x16k";
  spec.width = 4096;
  spec.hidden = {16384, 16384, 16384, 16384};
  spec.tokens_per_sample = 2048;
  return spec;
}

TEST(Mlp, CountsItsOwnParametersAndFlops) {
  const auto w = mlp_workload(four_pairs());
  EXPECT_DOUBLE_EQ(w->parameters(), 4 * 2 * 4096.0 * 16384);
  // 6 FLOPs per parameter per row (forward 2, backward 4).
  EXPECT_DOUBLE_EQ(w->model_flops(8), 6 * 8 * 2048.0 * w->parameters());
  EXPECT_EQ(w->layers(), 4);
  Strategy s;
  s.tp = 3;
  EXPECT_TRUE(w->check(s).has_value());
  s.tp = 2;
  s.sp = true;
  EXPECT_TRUE(w->check(s).has_value());
  EXPECT_THROW(mlp_workload(MlpSpec{}), InputError);
}

TEST(Mlp, OneFOneBBubbleIsPMinusOneOverM) {
  // Narayanan et al. 2021: the 1F1B bubble is (p-1)/m of the ideal time. Four equal stages,
  // but the last also runs the loss (a memory pass, about 2 % of a stage here).
  const auto w = mlp_workload(four_pairs());
  const Cluster c = load_cluster("dgx-h100", 8);
  const Strategy s = parse_strategy("tp=2,pp=4,mbs=1,gbs=16", 8);
  const Estimate e = estimate(*w, c, plan_of(s));
  auto part = [&](const char* name) {
    for (const auto& p : e.time)
      if (p.name == name) return p.seconds;
    return -1.0;
  };
  const double ideal =
      part("compute_forward") + part("compute_backward") + part("tp_comm") + part("pp_p2p");
  // The bubble is the three lighter stages' work once: just under (p-1)/m of the last's.
  const double fraction = part("pipeline_bubble") / ideal;
  EXPECT_LE(fraction, 3.0 / 16);
  EXPECT_GT(fraction, 0.97 * 3.0 / 16);
  EXPECT_TRUE(e.feasible);
  // Samples of 2048 rows: tokens/s counts rows.
  EXPECT_NEAR(e.tokens_per_s, 16 * 2048 / e.step_time_s, 1e-9 * e.tokens_per_s);
}

TEST(Mlp, TensorParallelPairsAllReduceOnceEachWay) {
  // Megatron's pair: identity then all-reduce forward, all-reduce then identity backward. With
  // the 2021 stack nothing hides them: 2 all-reduces of the pair's output per pair and
  // micro-batch, each priced as the catalog prices one.
  const auto w = mlp_workload(four_pairs());
  const Cluster c = load_cluster("dgx-h100", 8);
  EstimateOptions opt;
  opt.software = software_preset("megatron-lm-2021");
  const Strategy s = parse_strategy("tp=2,mbs=2,gbs=16", 8);  // dp=4: 2 micro-batches
  const Estimate e = estimate(*w, c, plan_of(s), opt);
  const NodeGroup& g = c.groups.front();
  const Pricer pr{g.device, g.intra_node, c.inter_node, g.gpus_per_node, nullptr};
  const double one = pr.collective(CollectiveOp::all_reduce, 2.0 * 2 * 2048 * 4096, {2, 1}).seconds;
  for (const auto& p : e.time) {
    if (p.name == "tp_comm") {
      EXPECT_NEAR(p.seconds, 2 * 4 * 2 * one, 1e-12);
    }
  }
}

TEST(Mlp, RankSearchesItThroughTheSamePath) {
  const auto w = mlp_workload(four_pairs());
  const Cluster c = load_cluster("dgx-h100", 16);
  RankOptions o;
  o.global_batch = 64;
  o.top = 5;
  const RankResult r = rank(*w, c, o);
  ASSERT_FALSE(r.best.empty());
  int64_t rejected = 0;
  for (const auto& [why, n] : r.rejected) rejected += n;
  EXPECT_EQ(r.evaluated, r.feasible + rejected);
  EXPECT_GT(r.rejected.count("sp=true needs a transformer (its norms and residuals split the "
                             "sequence)"),
            0u);
  for (size_t i = 1; i < r.best.size(); ++i)
    EXPECT_LE(r.best[i - 1].step_time_s, r.best[i].step_time_s);
  // The winner, priced alone, is what the search saw.
  const Estimate again = estimate(*w, c, plan_of(r.best.front().strategy));
  EXPECT_DOUBLE_EQ(again.step_time_s, r.best.front().step_time_s);
  for (const auto& e : r.best) {
    EXPECT_EQ(e.strategy.cp, 1);
    EXPECT_FALSE(e.strategy.sp);
    EXPECT_NE(e.strategy.recompute, Recompute::selective);
  }
}

}  // namespace
}  // namespace shardcost
