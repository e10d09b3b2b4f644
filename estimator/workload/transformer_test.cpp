#include "transformer.h"

#include <gtest/gtest.h>

#include "test_models.h"

#include "shardcost/estimator.h"

namespace shardcost {
namespace {

using test_models::paper_gpt;
using test_models::tp;

// Korthikanti et al. 2022, Section 4: activation bytes per layer.
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
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, tp(8, false), AttentionKernel::standard, Recompute::full),
                   2 * s * b * h);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, tp(8, true), AttentionKernel::standard, Recompute::full),
                   2 * s * b * h / 8);
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
