#include "memory.h"

#include <gtest/gtest.h>

namespace shardcost {
namespace {

// The GPT of Korthikanti et al. 2022 (dropout on, GeLU, ffn = 4h).
Model paper_gpt() {
  Model m;
  m.layers = 96;
  m.hidden = 12288;
  m.heads = 96;
  m.kv_heads = 96;
  m.ffn_hidden = 4 * 12288;
  m.vocab = 51200;
  m.seq_len = 2048;
  m.dropout = 0.1;
  return m;
}

Strategy tp(int t, bool sp, int b = 1) {
  Strategy s;
  s.tp = t;
  s.sp = sp;
  s.mbs = b;
  s.gbs = b;
  return s;
}

// Korthikanti et al. 2022, Section 4: activation bytes per layer.
TEST(Memory, ActivationsMatchKorthikantiWithoutParallelism) {
  const Model m = paper_gpt();
  const double s = 2048, b = 2, h = 12288, a = 96;
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(m, tp(1, false, 2), AttentionKernel::standard, Recompute::none),
      s * b * h * (34 + 5 * a * s / h));
}

TEST(Memory, ActivationsMatchKorthikantiWithTensorParallelism) {
  const Model m = paper_gpt();
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(m, tp(8, false), AttentionKernel::standard, Recompute::none),
      s * b * h * (10 + 24 / t + 5 * a * s / (h * t)));
}

TEST(Memory, ActivationsMatchKorthikantiWithSequenceParallelism) {
  const Model m = paper_gpt();
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(m, tp(8, true), AttentionKernel::standard, Recompute::none),
      s * b * h / t * (34 + 5 * a * s / h));
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(m, tp(8, true), AttentionKernel::standard, Recompute::selective),
      34 * s * b * h / t);
}

TEST(Memory, FullRecomputationKeepsOnlyTheLayerInput) {
  const Model m = paper_gpt();
  const double s = 2048, b = 1, h = 12288;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, tp(8, false), AttentionKernel::standard, Recompute::full),
                   2 * s * b * h);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, tp(8, true), AttentionKernel::standard, Recompute::full),
                   2 * s * b * h / 8);
}

TEST(Memory, ContextParallelismSplitsTheSequence) {
  const Model m = paper_gpt();
  Strategy one = tp(8, true), four = tp(8, true);
  four.cp = 4;
  const double full = layer_activation_bytes(m, one, AttentionKernel::flash, Recompute::none);
  const double split = layer_activation_bytes(m, four, AttentionKernel::flash, Recompute::none);
  EXPECT_DOUBLE_EQ(split * 4, full);
}

TEST(Memory, ZeroStagesShardOptimizerThenGradientsThenWeights) {
  const Model m = paper_gpt();
  Strategy s = tp(8, true);
  s.pp = 8;
  s.dp = 8;
  s.gbs = 64;
  const Software sw = software_preset("megatron-core");
  MemoryBreakdown z[4];
  for (int zero = 0; zero < 4; ++zero) {
    s.zero = zero;
    z[zero] = stage_memory(m, s, sw, 0);
  }
  EXPECT_DOUBLE_EQ(z[1].optimizer * 8, z[0].optimizer);
  EXPECT_DOUBLE_EQ(z[1].gradients, z[0].gradients);
  EXPECT_DOUBLE_EQ(z[2].gradients * 8, z[0].gradients);
  EXPECT_DOUBLE_EQ(z[2].weights, z[0].weights);
  EXPECT_LT(z[3].weights, z[0].weights / 2);
  // Mixed-precision Adam: 2 + 4 + 12 bytes per parameter without sharding.
  const double params = stage_parameters(m, s, 0).total();
  EXPECT_DOUBLE_EQ(z[0].weights + z[0].gradients + z[0].optimizer, 18 * params);
}

TEST(Memory, FirstPipelineStageHoldsPMicroBatches) {
  const Model m = paper_gpt();
  Strategy s = tp(8, true);
  s.pp = 8;
  s.gbs = 64;
  const Software sw = software_preset("megatron-lm-2021");
  const double per_layer = layer_activation_bytes(m, s, sw.attention, s.recompute);
  const MemoryBreakdown first = stage_memory(m, s, sw, 0);
  // 12 layers per stage, 8 micro-batches in flight, plus the embedding dropout mask.
  EXPECT_NEAR(first.activations, per_layer * 12 * 8 + 8 * 2048.0 * 12288, 1);
  s.vpp = 3;
  const MemoryBreakdown interleaved = stage_memory(m, s, sw, 0);
  EXPECT_NEAR(interleaved.activations / first.activations, 1 + 7.0 / 24, 0.01);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

TEST(Memory, UnevenPipelineStagesGiveTheRemainderToMiddleStages) {
  const Model m = load_model("llama3-405b");  // 126 layers
  Strategy s;
  s.pp = 16;
  int total = 0;
  for (int i = 0; i < s.pp; ++i) total += stage_layers(m, s, i);
  EXPECT_EQ(total, 126);
  EXPECT_EQ(stage_layers(m, s, 0), 7);
  EXPECT_EQ(stage_layers(m, s, 1), 8);
  EXPECT_EQ(stage_layers(m, s, 14), 8);
  EXPECT_EQ(stage_layers(m, s, 15), 7);
  s.pp = 2;
  EXPECT_EQ(stage_layers(m, s, 0) + stage_layers(m, s, 1), 126);
  s.pp = 5;  // 25 each, one extra for the first middle stage
  EXPECT_EQ(stage_layers(m, s, 1), 26);
  EXPECT_EQ(stage_layers(m, s, 2), 25);
}

}  // namespace
}  // namespace shardcost
