#include "model_math.h"

#include <gtest/gtest.h>

namespace shardcost {
namespace {

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
  dense.experts = dense.top_k = 0;
  EXPECT_GT(parameter_count(moe), 4 * parameter_count(dense));
  // Two of eight experts run per token: about twice the dense FLOPs, far from eight times.
  const double ratio = model_flops_per_step(moe, 1) / model_flops_per_step(dense, 1);
  EXPECT_GT(ratio, 1.5);
  EXPECT_LT(ratio, 2.0);
}

}  // namespace
}  // namespace shardcost
