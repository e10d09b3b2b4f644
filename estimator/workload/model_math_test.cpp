#include "model_math.h"

#include <gtest/gtest.h>

#include "shardcost/workload.h"

namespace shardcost {
namespace {

constexpr LayerKind kDense{Mixer::attention, Ffn::dense};
constexpr LayerKind kMoe{Mixer::attention, Ffn::moe};

Model gpt(int layers, int hidden, int heads, int vocab, int seq) {
  Model m;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn_hidden = 4 * hidden;
  m.vocab = vocab;
  m.seq_len = seq;
  return m;
}

TEST(ModelMath, GptParametersAreMegatronEquation2PlusTheFinalNorm) {
  // Narayanan et al. 2021, Eq. 2: P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12lh)). The equation
  // leaves out the final layer norm (2h), which a real model has.
  for (const auto& [l, h, a] : {std::tuple{24, 2304, 24}, {96, 12288, 96}, {128, 25600, 160}}) {
    const Model m = gpt(l, h, a, 51200, 2048);
    const double L = l, H = h, V = 51200, S = 2048;
    const double eq2 = 12 * L * H * H * (1 + 13 / (12 * H) + (V + S) / (12 * L * H));
    EXPECT_DOUBLE_EQ(parameter_count(m), eq2 + 2 * H) << l << "x" << h;
  }
}

TEST(ModelMath, LlamaParameterCountsMatchTheReleasedCheckpoints) {
  // Exact parameter counts of the released Hugging Face checkpoints.
  EXPECT_DOUBLE_EQ(parameter_count(load_model("llama2-7b")), 6738415616.0);
  EXPECT_DOUBLE_EQ(parameter_count(load_model("llama3-8b")), 8030261248.0);
  EXPECT_DOUBLE_EQ(parameter_count(load_model("llama3-70b")), 70553706496.0);
  EXPECT_DOUBLE_EQ(parameter_count(load_model("mixtral-8x7b")), 46702792704.0);
}

TEST(ModelMath, TodaysFamiliesMatchTheReleasedCheckpointsExactly) {
  // Qwen3: GQA with head_dim 128 over 64 heads (8192 wide queries on a 4096 model), per-head
  // query and key norms, 128 experts in every layer.
  EXPECT_DOUBLE_EQ(parameter_count(load_model("qwen3-235b-a22b")), 235093634560.0);
  EXPECT_DOUBLE_EQ(parameter_count(load_model("mixtral-8x22b")), 140620634112.0);
  // DeepSeek-V3: the checkpoint's 684,531,386,000 less its 41,540,496 FP8 scales is the main
  // model, the MTP module's own weights and the module's stored copies of the embedding and
  // the output head.
  const Model ds = load_model("deepseek-v3");
  EXPECT_DOUBLE_EQ(parameter_count(ds), 671026419200.0);
  EXPECT_DOUBLE_EQ(mtp_parameter_count(ds), 11610068224.0);
  EXPECT_DOUBLE_EQ(parameter_count(ds) + mtp_parameter_count(ds) + mtp_checkpoint_copies(ds),
                   684531386000.0 - 41540496.0);
  // What the workload trains: the main model and the module's own weights.
  EXPECT_DOUBLE_EQ(transformer_workload(ds)->parameters(), 671026419200.0 + 11610068224.0);
}

TEST(ModelMath, HybridMambaCountsMatchTheReleasedNemotronH8B) {
  // Nemotron-H-8B-Base-8K: 52 layers of one mixer or MLP each; its checkpoint's
  // named_parameters() add up to 8,100,852,736.
  const Model m = parse_model_json(R"({"layers": 52, "hidden": 4096, "heads": 32, "kv_heads": 8,
    "head_dim": 128, "ffn_hidden": 21504, "vocab": 131072, "seq_len": 8192, "activation": "relu2",
    "norm": "rmsnorm", "position_embedding": "none", "bias": false, "tied_embeddings": false,
    "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
    "mamba_num_heads": 128, "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8})",
                                   "nemotron-h-8b.json");
  EXPECT_DOUBLE_EQ(parameter_count(m), 8100852736.0);
  // 56B by the same formula (no exact count is published).
  EXPECT_DOUBLE_EQ(parameter_count(load_model("nemotron-h-56b")), 56324350464.0);
  // A Mamba-2 layer's FLOPs per token: in_proj (2 x 4096 x 18560), out_proj (2 x 8192 x 4096),
  // the convolution (2 x 4 x 10240) and the scan.
  const LayerKind mamba{Mixer::mamba, Ffn::none};
  EXPECT_DOUBLE_EQ(layer_forward_flops_per_token(m, mamba),
                   2.0 * 4096 * 18560 + 2.0 * 8192 * 4096 + 2.0 * 4 * 10240 +
                       (2.0 * 128 * 128 * 8 + 128 * (2.0 * 128 * 64 + 4.0 * 128 * 64)));
  // An MLP layer has no attention core; an attention layer no MLP.
  EXPECT_DOUBLE_EQ(layer_forward_flops_per_token(m, {Mixer::none, Ffn::dense}),
                   2 * 2.0 * 4096 * 21504);
  EXPECT_DOUBLE_EQ(layer_forward_flops_per_token(m, {Mixer::attention, Ffn::none}),
                   2.0 * (4096 * (4096 + 2 * 1024) + 4096.0 * 4096) + 2.0 * 8192 * 2 * 4096);
}

TEST(ModelMath, MlaLayerParametersByHand) {
  // DeepSeek-V3's attention, tensor by tensor (modeling_deepseek.py): q_a_proj 7168x1536,
  // q_a_layernorm 1536, q_b_proj 1536x(128x192), kv_a_proj_with_mqa 7168x576,
  // kv_a_layernorm 512, kv_b_proj 512x(128x256), o_proj (128x128)x7168.
  const Model ds = load_model("deepseek-v3");
  const LayerParameters p = layer_parameters(ds, {Mixer::attention, Ffn::moe});
  EXPECT_DOUBLE_EQ(p.replicated, 7168.0 * 1536 + 1536 + 7168.0 * 576 + 512);
  EXPECT_DOUBLE_EQ(p.attention, 1536.0 * 128 * 192 + 512.0 * 128 * 256 + 128.0 * 128 * 7168);
  EXPECT_DOUBLE_EQ(p.mlp, 3.0 * 7168 * 2048);
  EXPECT_DOUBLE_EQ(p.shared, 3.0 * 7168 * 2048);
  EXPECT_DOUBLE_EQ(p.router, 7168.0 * 256 + 256);  // the gate and its correction bias
  EXPECT_DOUBLE_EQ(layer_parameters(ds, {Mixer::attention, Ffn::dense}).mlp, 3.0 * 7168 * 18432);
}

// Megatron-core's own MLA unit test (tests/unit_tests/transformer/test_multi_latent_attention.py)
// builds MLASelfAttention at hidden 12, 4 heads, q_lora_rank and kv_lora_rank 32 (latents wider
// than the hidden states), qk_head_dim 128, qk_pos_emb_head_dim 64, v_head_dim 128, with
// add_bias_linear's default bias, and asserts 65,036 parameters: q down 12x32, q up
// 32x(4x192), kv down 12x(32+64), kv up 32x(4x256), the output projection (4x128)x12 and its
// bias 12 (every other MLA linear is built with bias=False). Its latents' norms are IdentityOp
// (qk_layernorm off); the model here has them, RMSNorms of 32 each.
TEST(ModelMath, MlaWiderThanItsHiddenStatesCountsAsMegatronsUnitTest) {
  Model m = gpt(2, 12, 4, 100, 32);
  m.rmsnorm = true;
  m.bias = true;
  m.mla.q_lora_rank = 32;
  m.mla.kv_lora_rank = 32;
  m.mla.qk_nope_head_dim = 128;
  m.mla.qk_rope_head_dim = 64;
  m.mla.v_head_dim = 128;
  ASSERT_TRUE(m.is_mla());
  const LayerParameters p = layer_parameters(m, kDense);
  EXPECT_DOUBLE_EQ(p.attention + p.replicated - 2 * 32, 65036);
}

TEST(ModelMath, FineGrainedMoeFlopsCountActiveAndSharedExperts) {
  const Model ds = load_model("deepseek-v3");
  const double h = 7168, f = 2048;
  // Per token of an expert layer: 8 routed and 1 shared expert of 3 h f MACs, the router.
  const double mla = 2 * (h * 1536 + 1536 * 128 * 192 + h * 576 + 512 * 128 * 256 + 128 * 128 * h);
  const double core = 2.0 * 4096 * 128 * (192 + 128);
  EXPECT_DOUBLE_EQ(layer_forward_flops_per_token(ds, kMoe),
                   mla + 2 * (9 * 3 * h * f + h * 256) + core);
  EXPECT_DOUBLE_EQ(layer_forward_flops_per_token(ds, kDense), mla + 2 * 3 * h * 18432 + core);
  // A step: 3 x (forward) over 3 dense and 58 expert layers, the head, and the MTP module
  // (its projection, an expert layer and the head again).
  const double tokens = 4096, logits = 2 * h * 129280;
  const double forward = 3 * layer_forward_flops_per_token(ds, kDense) +
                         58 * layer_forward_flops_per_token(ds, kMoe) + logits +
                         (2 * 2 * h * h + layer_forward_flops_per_token(ds, kMoe) + logits);
  EXPECT_NEAR(model_flops_per_step(ds, 1) / (3 * tokens * forward), 1.0, 1e-12);
}

TEST(ModelMath, ModelFlopsAreMegatrons72Formula) {
  // Without recomputation: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
  const Model m = gpt(96, 12288, 96, 51200, 2048);
  const double B = 1536, s = 2048, l = 96, h = 12288, V = 51200;
  const double expected = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  EXPECT_NEAR(model_flops_per_step(m, 1536) / expected, 1.0, 1e-12);
}

TEST(ModelMath, MoeCountsEveryExpertButOnlyActiveFlops) {
  const Model moe = load_model("mixtral-8x7b");
  Model dense = moe;
  dense.moe = Moe{};
  EXPECT_GT(parameter_count(moe), 4 * parameter_count(dense));
  // Two of eight experts run per token: about twice the dense FLOPs, far from eight times.
  const double ratio = model_flops_per_step(moe, 1) / model_flops_per_step(dense, 1);
  EXPECT_GT(ratio, 1.5);
  EXPECT_LT(ratio, 2.0);
}

}  // namespace
}  // namespace shardcost
