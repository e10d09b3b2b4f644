// Learned embedding-bag costs: the prior recovers the constants of times it generated, the
// trees bring a cache step the prior cannot see within reach, records survive a round trip and
// damaged ones are refused, the shares of the hot rows follow the draws.
#include "embedding_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "costs/embedding_bytes.h"
#include "shardcost/error.h"
#include "xgboost_api.h"

namespace shardcost::learned {
namespace {

std::vector<EmbeddingRow> grid(bool backward,
                               const std::function<double(const EmbeddingPass&)>& t) {
  std::vector<EmbeddingRow> rows;
  for (double r : {1e4, 1e5, 1e6, 1e7})
    for (double dim : {16.0, 64.0, 256.0})
      for (double pooling : {1.0, 8.0, 64.0})
        for (double batch : {512.0, 4096.0})
          for (double zipf : {0.0, 1.1}) {
            const EmbeddingPass p{backward, 4, "rowwise_adagrad", r, dim, pooling, batch, zipf, {}};
            rows.push_back({p, t(p)});
          }
  return rows;
}

TEST(EmbeddingBytes, TopMassFollowsTheDraws) {
  EXPECT_DOUBLE_EQ(embedding_bytes::top_mass(1000, 0, 100), 0.1);
  EXPECT_DOUBLE_EQ(embedding_bytes::top_mass(1000, 1.1, 2000), 1.0);
  EXPECT_EQ(embedding_bytes::top_mass(1000, 1.1, 0), 0.0);
  // Zipf 1.1 over a million rows: the top 1 % of rows take most of the draws.
  const double top = embedding_bytes::top_mass(1e6, 1.1, 1e4);
  EXPECT_GT(top, 0.6);
  EXPECT_LT(top, 0.95);
  EXPECT_LT(embedding_bytes::top_mass(1e6, 1.1, 1e3), top);
}

// Times made by two cache levels and memory (1 MiB at 1 ns per 100 B, 32 MiB at 1 ns per 33 B,
// memory at 1 ns per 5 B), 20 ns a lookup and 5 us fixed: the fit finds them within a few per
// cent, on the grid and off it.
TEST(EmbeddingModelFit, ThePriorRecoversTimesItCouldHaveMade) {
  if (!xgb::available()) GTEST_SKIP() << "this build has no XGBoost (libxgboost-dev)";
  EmbeddingFit truth;
  truth.fixed_s = 5e-6, truth.near_s_per_byte = 1e-11, truth.far_s_per_byte = 3e-11;
  truth.miss_s_per_byte = 2e-10, truth.lookup_s = 2e-8;
  truth.near_bytes = 1 << 20, truth.far_bytes = 32.0 * (1 << 20);
  for (bool backward : {false, true}) {
    const auto rows = grid(backward, [&](const EmbeddingPass& p) { return truth.prior_s(p); });
    const EmbeddingFit f = fit_embedding("test CPU", backward, "fp32", "rowwise_adagrad", rows);
    EXPECT_NEAR(f.miss_s_per_byte, truth.miss_s_per_byte, 0.1 * truth.miss_s_per_byte);
    for (const auto& cv : f.cv) EXPECT_LT(cv.median, 0.02) << cv.split;
    // Outside the grid: a 3M-row table, dim 128, pooling 20, batch 2048.
    const EmbeddingPass p{backward, 4, "rowwise_adagrad", 3e6, 128, 20, 2048, 0.6, {}};
    const auto [seconds, inside] = f.predict(p);
    EXPECT_NEAR(seconds / truth.prior_s(p), 1, 0.03);
    EXPECT_TRUE(inside);
    EXPECT_FALSE(f.predict({backward, 4, "rowwise_adagrad", 1e8, 128, 20, 2048, 0, {}}).second);
  }
}

// A cost the prior does not know (every table past 2M rows is 1.6x slower: a TLB reach, say)
// with noise of a few per cent: the trees bring the held-out error below the prior's.
TEST(EmbeddingModelFit, TreesLearnWhatThePriorMisses) {
  if (!xgb::available()) GTEST_SKIP() << "this build has no XGBoost (libxgboost-dev)";
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 0.03);
  const auto rows = grid(false, [&](const EmbeddingPass& p) {
    const double base = 2e-6 + embedding_bytes::pass_bytes(p) / 20e9;
    return base * (p.rows > 2e6 ? 1.6 : 1.0) * std::exp(noise(rng));
  });
  const EmbeddingFit f = fit_embedding("test CPU", false, "fp32", "none", rows);
  ASSERT_GE(f.cv.size(), 2u);
  EXPECT_EQ(f.cv[1].split, "5-fold, prior alone");
  EXPECT_LT(f.cv[0].median, 0.06);
  EXPECT_LT(f.cv[0].median, f.cv[1].median);
  EXPECT_EQ(f.rows, rows.size());
}

// A skew given as a histogram is a skew to the backward's cache too: 100 lookups into the
// hottest 100 of 10 M rows update rows a 1 MiB cache holds, so only the pooled gradients
// (streamed) reach memory; uniform access over the same table misses on nearly every row.
TEST(EmbeddingModelFit, AHistogramsHotRowsAreCachedInTheBackward) {
  EmbeddingFit f;
  f.miss_s_per_byte = 1e-9, f.near_bytes = 1 << 20, f.far_bytes = 2 << 20;
  EmbeddingPass p{true, 4, "rowwise_adagrad", 1e7, 64, 1, 100, 0, {{1e-5, 1.0}, {1 - 1e-5, 0}}};
  EXPECT_NEAR(f.prior_s(p), 100 * 64 * 4 * 1e-9, 1e-12);
  p.histogram.clear();
  // Uniform: the ~100 distinct rows, each read and written with its Adagrad state, miss too,
  // but for the share of the table the far cache holds (8,192 of 10 M rows); 99.9995 distinct
  // rows, not 100: a byte's worth.
  EXPECT_NEAR(f.prior_s(p), (100 * 64 * 4 + 100 * (2 * 256 + 2 * 4) * (1 - 8192 / 1e7)) * 1e-9,
              1e-9);
}

TEST(EmbeddingModelFit, RecordsRoundTripAndDamagedOnesAreRefused) {
  if (!xgb::available()) GTEST_SKIP() << "this build has no XGBoost (libxgboost-dev)";
  const auto rows = grid(
      true, [](const EmbeddingPass& p) { return 1e-5 + embedding_bytes::pass_bytes(p) / 10e9; });
  const EmbeddingFit f = fit_embedding("AMD EPYC", true, "bf16", "sgd", rows);
  const EmbeddingFit g = EmbeddingFit::from_json(f.to_json());
  EXPECT_EQ(g.device, "AMD EPYC");
  EXPECT_TRUE(g.backward);
  EXPECT_EQ(g.optimizer, "sgd");
  const EmbeddingPass p{true, 2, "sgd", 5e5, 32, 4, 1000, 0.3, {}};
  EXPECT_DOUBLE_EQ(f.predict(p).first, g.predict(p).first);
  std::string text = f.to_json();
  text.replace(text.find("\"fixed_s\""), 9, "\"fixed_z\"");
  EXPECT_THROW((void)EmbeddingFit::from_json(text), InputError);
  EXPECT_THROW((void)EmbeddingFit::from_json("{\"fitter\": \"embedding-xgb-0\"}"), InputError);
  EXPECT_THROW((void)fit_embedding("x", false, "fp32", "none", {rows.begin(), rows.begin() + 5}),
               InputError);
}

}  // namespace
}  // namespace shardcost::learned
