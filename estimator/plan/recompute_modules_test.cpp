// Megatron-core's checkpointed recompute modules (--recompute-modules mlp, moe,
// shared_experts): what each runs again before its backward, what it keeps, where it is
// refused, and the search offering them; hand calculations beside each.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "plan/block_times.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "test_models.h"
#include "workload/transformer.h"
#include "workload/transformer_ops.h"

namespace shardcost {
namespace {

std::vector<Op> ops_of(const Model& m, const Strategy& s, LayerKind kind) {
  std::vector<Op> out;
  const double n = m.seq_len;
  layer_ops(m, s, AttentionKernel::flash, {static_cast<double>(s.mbs), s.mbs * n, s.mbs * n * n},
            kind, out);
  return out;
}

std::vector<std::string> recomputed_names(const std::vector<Op>& ops) {
  std::vector<std::string> out;
  for (const Op& op : ops)
    if (op.selective) out.push_back(op.name);
  return out;
}

struct H100Node {
  Cluster c = load_cluster("dgx-h100", 8);
  const NodeGroup& g = c.groups.front();
  Pricer pr{g.device, g.intra_node, c.inter_node, g.gpus_per_node, nullptr};
};

// A dense layer's MLP with the norm Transformer Engine fuses into fc1 and the
// sequence-parallel all-gather and reduce-scatter around it: each runs forward twice, once more
// inside the backward; nothing of the attention does.
TEST(RecomputeModules, MlpRunsTheDenseMlpAgainWithItsNormAndCollectives) {
  const Model m = load_model("llama3-8b");
  const Strategy s = parse_strategy(
      "tp=8,sp=true,mbs=1,gbs=8,recompute=selective,recompute_modules=mlp,precision=bf16", 8);
  const std::vector<Op> ops = ops_of(m, s, {Mixer::attention, Ffn::dense});
  EXPECT_EQ(recomputed_names(ops),
            (std::vector<std::string>{"mlp_norm", "tp_all_gather", "mlp_fc1", "swiglu", "mlp_fc2",
                                      "tp_reduce_scatter"}));
  H100Node n;
  const Placement place = placement(s);
  const Software sw = software_preset("megatron-core");
  const Times none = block_times(ops, n.pr, place, Recompute::none, sw, false);
  const Times sel = block_times(ops, n.pr, place, Recompute::selective, sw, false);
  // The MLP's passes and GEMMs priced alone, forward: what the recomputation adds.
  // Each by its name (Op::name is a C string: compared as text), the first of that name.
  auto named = [&](std::initializer_list<std::string_view> names) {
    std::vector<Op> out;
    for (std::string_view name : names)
      for (const Op& op : ops)
        if (std::string_view(op.name) == name) {
          out.push_back(op);
          break;
        }
    return out;
  };
  double forward = 0;
  for (const Op& op : named({"mlp_norm", "mlp_fc1", "swiglu", "mlp_fc2"}))
    forward += block_times({op}, n.pr, place, Recompute::none, sw, false).s[kComputeForward];
  EXPECT_NEAR(sel.s[kComputeRecompute], forward, 1e-15);
  EXPECT_EQ(none.s[kComputeRecompute], 0);
  // The gather rides behind fc1 and the scatter behind fc2 again, as in the forward: the
  // MLP's second all-gather and reduce-scatter (the attention's come first in the layer).
  std::vector<Op> gather, scatter;
  int seen_ag = 0, seen_rs = 0;
  for (size_t i = 0; i + 1 < ops.size(); ++i) {
    if (ops[i].name == std::string("tp_all_gather") && ++seen_ag == 2)
      gather = {ops[i], ops[i + 1]};
    if (ops[i + 1].name == std::string("tp_reduce_scatter") && ++seen_rs == 2)
      scatter = {ops[i], ops[i + 1]};
  }
  ASSERT_EQ(gather.size(), 2u);
  ASSERT_EQ(scatter.size(), 2u);
  // Their forwards only: what the recomputation repeats.
  for (Op* op : {&gather[0], &scatter[1]}) {
    op->backward_op.reset();
    op->backward_regather = false;
  }
  const double comm = block_times(gather, n.pr, place, Recompute::none, sw, false).s[kTpComm] +
                      block_times(scatter, n.pr, place, Recompute::none, sw, false).s[kTpComm];
  EXPECT_GT(comm, 0);
  EXPECT_NEAR(sel.s[kTpComm] - none.s[kTpComm], comm, 1e-15);
}

// Llama 3 8B at tp 8 with sequence parallelism, 8,192 tokens, bf16: the MLP keeps its norm's
// output (fc1's input, 2 B x T x h / 8), fc1's output (the two SwiGLU inputs, 2 B x T x 2f)
// and fc2's input (2 B x T x f), f = 14,336 / 8; under mlp only the norm's input remains,
// which the layer keeps anyway.
TEST(RecomputeModules, MlpKeepsOnlyTheMlpsInput) {
  const Model m = load_model("llama3-8b");
  const Strategy none = parse_strategy("tp=8,sp=true,mbs=1,gbs=8,precision=bf16", 8);
  const Strategy mlp = parse_strategy(
      "tp=8,sp=true,mbs=1,gbs=8,recompute=selective,recompute_modules=mlp,precision=bf16", 8);
  const MicroBatch mb{1, 8192, 8192.0 * 8192};
  const LayerKind dense{Mixer::attention, Ffn::dense};
  const double kept_none =
      layer_activation_bytes(m, none, AttentionKernel::flash, Recompute::none, mb, dense);
  const double kept_mlp =
      layer_activation_bytes(m, mlp, AttentionKernel::flash, Recompute::selective, mb, dense);
  const double T = 8192, h = 4096, f = 14336.0 / 8;
  EXPECT_DOUBLE_EQ(kept_none - kept_mlp, 2 * T * h / 8 + 2 * T * 2 * f + 2 * T * f);
}

// DeepSeek-V3 (FP8, tp 1, ep 64): "moe" runs the whole MoE layer again, from the router to the
// combine, the all-to-alls and the shared expert too, but not the norm before it (a module of
// its own in MoE layers); "shared_experts" only the shared expert.
TEST(RecomputeModules, MoeRunsTheWholeMoeLayerAgainAndSharedExpertsTheirOwnMlp) {
  const Model m = load_model("deepseek-v3");
  const LayerKind moe_layer{Mixer::attention, Ffn::moe};
  const std::vector<Op> moe = ops_of(
      m,
      parse_strategy("tp=1,pp=16,ep=64,mbs=1,gbs=1024,recompute=selective,recompute_modules=moe,"
                     "precision=fp8",
                     2048),
      moe_layer);
  const std::vector<std::string> names = recomputed_names(moe);
  const std::set<std::string> want = {"shared_expert_fc1",
                                      "shared_expert_fc1_fp8_casts",
                                      "swiglu",
                                      "shared_expert_fc2",
                                      "shared_expert_fc2_fp8_casts",
                                      "moe_router",
                                      "moe_router_topk",
                                      "ep_dispatch",
                                      "moe_permute",
                                      "expert_fc1",
                                      "expert_fc1_fp8_casts",
                                      "expert_swiglu",
                                      "expert_fc2",
                                      "expert_fc2_fp8_casts",
                                      "moe_unpermute",
                                      "ep_combine"};
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), want);
  EXPECT_EQ(names.size(), want.size());
  const std::vector<Op> shared =
      ops_of(m,
             parse_strategy("tp=1,pp=16,ep=64,mbs=1,gbs=1024,recompute=selective,"
                            "recompute_modules=shared_experts,precision=fp8",
                            2048),
             moe_layer);
  EXPECT_EQ(recomputed_names(shared),
            (std::vector<std::string>{"shared_expert_fc1", "shared_expert_fc1_fp8_casts", "swiglu",
                                      "shared_expert_fc2", "shared_expert_fc2_fp8_casts"}));
  // Neither touches a dense layer.
  EXPECT_TRUE(
      recomputed_names(ops_of(m,
                              parse_strategy("tp=1,pp=16,ep=64,mbs=1,gbs=1024,recompute="
                                             "selective,recompute_modules=moe/shared_experts,"
                                             "precision=fp8",
                                             2048),
                              {Mixer::attention, Ffn::dense}))
          .empty());
}

// What they keep, 4,096 tokens of DeepSeek-V3 in FP8 at tp 1 (h 7,168; experts and the shared
// one of 2,048 features, SwiGLU). The shared expert keeps its FP8 input (1 B x T x h), fc1's
// output (2 B x T x 2 x 2,048) and fc2's FP8 input (1 B x T x 2,048). The MoE layer keeps
// besides, on the busiest rank's R routed copies, the experts' FP8 inputs (1 B x R x h), their
// SwiGLU inputs (2 B x R x 2 x 2,048) and fc2's FP8 inputs (1 B x R x 2,048); its checkpoint
// keeps the norm's output in 16 bits, which the experts' dispatch kept anyway.
TEST(RecomputeModules, MoeAndSharedExpertsKeepOnlyTheirInput) {
  const Model m = load_model("deepseek-v3");
  const std::string base = "tp=1,pp=16,ep=64,mbs=1,gbs=1024,precision=fp8";
  const Strategy none = parse_strategy(base, 2048);
  const Strategy moe = parse_strategy(base + ",recompute=selective,recompute_modules=moe", 2048);
  const Strategy shared =
      parse_strategy(base + ",recompute=selective,recompute_modules=shared_experts", 2048);
  const MicroBatch mb{1, 4096, 4096.0 * 4096};
  const LayerKind moe_layer{Mixer::attention, Ffn::moe};
  auto kept = [&](const Strategy& s, Recompute r) {
    return layer_activation_bytes(m, s, AttentionKernel::flash, r, mb, moe_layer);
  };
  const double T = 4096, h = 7168, f = 2048;
  const double shared_bytes = 1 * T * h + 2 * T * 2 * f + 1 * T * f;
  EXPECT_DOUBLE_EQ(kept(none, Recompute::none) - kept(shared, Recompute::selective), shared_bytes);
  const double R = tokens_on_experts(m, none, T);
  EXPECT_GE(R, 8 * T);  // eight copies a token, the busiest rank's at least the mean
  EXPECT_NEAR(kept(none, Recompute::none) - kept(moe, Recompute::selective),
              shared_bytes + 1 * R * h + 2 * R * 2 * f + 1 * R * f, 1e-3);
}

TEST(RecomputeModules, NamesRoundTripAndTheOverlapRefusesTheMoeCheckpoint) {
  const Strategy s = parse_strategy(
      "tp=1,pp=4,vpp=4,ep=64,mbs=1,gbs=4096,recompute=selective,"
      "recompute_modules=shared_experts/mlp/mla_up_proj",
      256);
  EXPECT_EQ(s.recompute_modules, kRecomputeMlaUpProj | kRecomputeMlp | kRecomputeSharedExperts);
  EXPECT_NE(to_string(s).find("recompute_modules=mla_up_proj/mlp/shared_experts"),
            std::string::npos);
  const Model m = load_model("deepseek-v3");
  const Cluster c = load_cluster("gb200-nvl72", 256);
  const std::string why = test_models::input_error_of([&] {
    (void)estimate(m, c,
                   parse_strategy("tp=1,pp=4,vpp=4,ep=64,mbs=1,gbs=4096,ep_overlap=true,"
                                  "recompute=selective,recompute_modules=moe,precision=mxfp8",
                                  256));
  });
  EXPECT_NE(why.find("ep_overlap=true does not run with recompute_modules=moe"), std::string::npos)
      << why;
  EXPECT_EQ(why.find('\n'), std::string::npos);
}

// Llama 3 70B at tp 8, pp 2, two sequences a micro-batch on 32 H100s: without recomputation
// it does not fit, and recomputing the MLPs alone (two thirds of a layer's GEMM FLOPs, most of
// its activations) fits for less than full recomputation costs; the search offers it.
TEST(RecomputeModules, TheSearchOffersTheMlpCheckpointWhereItFitsForLessThanFull) {
  const Model m = load_model("llama3-70b");
  const Cluster c = load_cluster("dgx-h100", 32);
  RankOptions ro;
  ro.global_batch = 128;
  ro.top = 1;
  ro.fixed = "tp=8,pp=2,cp=1,mbs=2";
  const RankResult searched = rank(m, c, ro);
  ASSERT_FALSE(searched.best.empty());
  const Strategy& s = searched.best.front().strategy;
  EXPECT_EQ(s.recompute, Recompute::selective);
  EXPECT_EQ(s.recompute_modules, kRecomputeMlp);
  ro.fixed += ",recompute=full";
  const RankResult full = rank(m, c, ro);
  ASSERT_FALSE(full.best.empty());
  EXPECT_LT(searched.best.front().step_time_s, full.best.front().step_time_s);
  ro.fixed = "tp=8,pp=2,cp=1,mbs=2,recompute=none";
  EXPECT_TRUE(rank(m, c, ro).best.empty());
}

}  // namespace
}  // namespace shardcost
