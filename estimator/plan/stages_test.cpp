// The layers per stage that balance a pipeline's stages (min_max_stage_layers), on costs by
// hand: each layer a unit, the first and last stages' own blocks a fixed extra.
#include "stages.h"

#include <gtest/gtest.h>

#include <numeric>

#include "shardcost/plan.h"

namespace shardcost {
namespace {

// A stage's seconds: its layers at `layer` each, the first stage's embedding and the last
// stage's head (and MTP) at their own.
std::function<double(const StageSpan&)> costs(double layer, double embedding, double head) {
  return [=](const StageSpan& s) {
    return s.units * layer + (s.first ? embedding : 0) + (s.last ? head : 0);
  };
}

double slowest(const std::vector<int>& split, const std::function<double(const StageSpan&)>& f) {
  double worst = 0;
  int unit = 0;
  for (size_t k = 0; k < split.size(); ++k) {
    worst = std::max(worst, f(StageSpan{unit, split[k], k == 0, k + 1 == split.size()}));
    unit += split[k];
  }
  return worst;
}

// DeepSeek-V3's 61 layers on 16 stages with a last stage whose MTP module and head cost three
// layers: the slowest stage is four layers' time at best (16 stages of 4 would be 64 layers'
// time with the head: 61 + 3 = 64), which only four layers a stage and one on the last reach,
// the layout Megatron-Bridge's recipes give it ("Et*4|(t*4|)*14tmL"). The even split (3, 4 x
// 13, 3, 3) has a last stage of 3 + 3 = 6.
TEST(StageSplit, AHeadWorthThreeLayersGivesTheDeepSeekV3RecipesLayout) {
  const auto f = costs(1, 0, 3);
  const std::vector<int> split = min_max_stage_layers(61, 16, 1, f);
  std::vector<int> recipe(16, 4);
  recipe.back() = 1;
  EXPECT_EQ(split, recipe);
  EXPECT_DOUBLE_EQ(slowest(split, f), 4);
  EXPECT_DOUBLE_EQ(slowest(default_stage_layers(61, 16), f), 6);
}

// Uniform stages: the even split is already the least slowest stage, and stays.
TEST(StageSplit, NoExtrasKeepTheEvenSplit) {
  EXPECT_EQ(min_max_stage_layers(32, 4, 1, costs(1, 0, 0)), (std::vector<int>{8, 8, 8, 8}));
  EXPECT_EQ(min_max_stage_layers(32, 4, 4, costs(1, 0, 0)), (std::vector<int>{8, 8, 8, 8}));
}

// With interleaving every middle stage holds at least vpp layers and an end stage vpp - 1
// (its embedding or head counting as one). A head worth 10 layers on 8 stages of 30 layers at
// vpp 3: the last stage holds its least, 2 (12 in all, the pace), and the other 28 layers go 4
// to each of the 7 stages, not 6 to some and 3 to others, which the pace alone would allow.
TEST(StageSplit, AnEndStageAtItsLeastLeavesTheOthersEven) {
  const auto f = costs(1, 0, 10);
  const std::vector<int> split = min_max_stage_layers(30, 8, 3, f);
  EXPECT_EQ(split, (std::vector<int>{4, 4, 4, 4, 4, 4, 4, 2}));
  EXPECT_DOUBLE_EQ(slowest(split, f), 12);
}

// A heavy embedding (a large vocabulary's gradient) moves layers off the first stage; with
// vpp 1 an end stage may hold none. 26 layers on 4 stages, the embedding 9 layers: 0 on the
// first would leave 26 for 3 stages (9 each at best: 9, 9, 8), so the first holds 0.
TEST(StageSplit, AHeavyEmbeddingMayLeaveTheFirstStageNoLayers) {
  const auto f = costs(1, 9, 0);
  const std::vector<int> split = min_max_stage_layers(26, 4, 1, f);
  EXPECT_EQ(std::accumulate(split.begin(), split.end(), 0), 26);
  EXPECT_EQ(split.front(), 0);
  EXPECT_DOUBLE_EQ(slowest(split, f), 9);
}

// Too few layers for the stages' least: no split.
TEST(StageSplit, TooFewLayersGiveNoSplit) {
  EXPECT_TRUE(min_max_stage_layers(5, 4, 2, costs(1, 0, 0)).empty());
}

}  // namespace
}  // namespace shardcost
