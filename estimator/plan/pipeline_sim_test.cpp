#include "pipeline_sim.h"

#include <gtest/gtest.h>

#include <numeric>

namespace shardcost {
namespace {

TEST(PipelineSim, WithoutAPipelineTheMicroBatchesAdd) {
  EXPECT_DOUBLE_EQ(pipeline_seconds({1, 1, {}, 0.3}, {1, 2, 3.5}), 6.5);
}

// Equal micro-batches: the closed forms of Narayanan et al. (2021): (m + p - 1) t for 1F1B,
// m t + (p - 1) t / v interleaved.
TEST(PipelineSim, EqualMicroBatchesGiveTheClosedForm) {
  for (int pp : {2, 4, 8})
    for (int m : {8, 16, 32}) {
      const std::vector<double> t(static_cast<size_t>(m), 0.01);
      EXPECT_NEAR(pipeline_seconds({pp, 1, {}, 1.0 / 3}, t), (m + pp - 1) * 0.01, 1e-12)
          << pp << " " << m;
      for (int vpp : {2, 4})
        EXPECT_NEAR(pipeline_seconds({pp, vpp, {}, 1.0 / 3}, t), m * 0.01 + (pp - 1) * 0.01 / vpp,
                    1e-12)
            << pp << " " << m << " " << vpp;
    }
}

// One long micro-batch stalls every stage behind it: more than its extra seconds once.
TEST(PipelineSim, ALongMicroBatchCostsItsFillAndDrainToo) {
  const int pp = 4, m = 8;
  std::vector<double> t(m, 1.0);
  const double equal = pipeline_seconds({pp, 1, {}, 0.5}, t);
  t[3] = 3;
  const double one_long = pipeline_seconds({pp, 1, {}, 0.5}, t);
  EXPECT_GT(one_long, equal + 2);  // the sum grew by 2; the pipeline by more
  EXPECT_LE(one_long, equal + 2 * pp);
  // The same work in equal micro-batches is faster: imbalance inside a rank costs too.
  const double total = std::accumulate(t.begin(), t.end(), 0.0);
  EXPECT_LT(pipeline_seconds({pp, 1, {}, 0.5}, std::vector<double>(m, total / m)), one_long);
}

// A device lighter than the pace-setting one shortens only the fill and drain.
TEST(PipelineSim, LighterStagesShortenTheFill) {
  const std::vector<double> t(16, 1.0);
  const double alike = pipeline_seconds({4, 1, {1, 1, 1, 1}, 0.4}, t);
  const double lighter = pipeline_seconds({4, 1, {0.5, 0.5, 0.5, 1}, 0.4}, t);
  EXPECT_LT(lighter, alike);
  EXPECT_GE(lighter, 16.0);  // the pace-setting device's own work
}

TEST(PipelineSim, InterleavingPadsToAMultipleOfTheStages) {
  // 5 micro-batches over pp=4, vpp=2: 8 with three empty; the result is finite and at least
  // the work of the 5.
  const double t = pipeline_seconds({4, 2, {}, 1.0 / 3}, std::vector<double>(5, 1.0));
  EXPECT_GE(t, 5.0);
  EXPECT_LT(t, 5.0 + 3 * 1.0 + 1e-9);
}

}  // namespace
}  // namespace shardcost
