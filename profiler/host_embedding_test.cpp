// Embedding bags on the host: the inputs (bags of a fractional mean, uniform and Zipf draws)
// and both passes checked end to end on small tables, every weight type and optimizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "embedding_inputs.h"
#include "shardcost/error.h"
#include "shardcost/profiler.h"

namespace shardcost::bench {
namespace {

TEST(EmbeddingInputs, BagsKeepAFractionalMean) {
  const EmbeddingShape s{1000, 8, 2.5, 10, 0, {}};
  const auto off = bag_offsets(s);
  ASSERT_EQ(off.size(), 11u);
  EXPECT_EQ(off.front(), 0);
  EXPECT_EQ(off.back(), 25);
  for (size_t b = 0; b + 1 < off.size(); ++b) {
    EXPECT_GE(off[b + 1] - off[b], 2);
    EXPECT_LE(off[b + 1] - off[b], 3);
  }
  // A row-wise shard's share of a one-hot table: most bags empty, the mean kept.
  EXPECT_EQ(bag_offsets({1000, 8, 0.125, 64, 0, {}}).back(), 8);
}

// Zipf 1.2 over 1,000 rows: the hottest row is drawn about 1/H(1000, 1.2) of the time, and
// the draws' ranks are scattered over the table (the hottest row is not row 0's neighbourhood).
TEST(EmbeddingInputs, DrawsFollowTheSkew) {
  const EmbeddingShape s{1000, 8, 1, 200000, 1.2, {}};
  const auto idx = draw_indices(s, 200000, 5);
  std::map<int64_t, int> count;
  for (int64_t i : idx) {
    ASSERT_GE(i, 0);
    ASSERT_LT(i, 1000);
    ++count[i];
  }
  double h = 0;
  for (int r = 1; r <= 1000; ++r) h += std::pow(r, -1.2);
  int top = 0;
  for (const auto& [row, n] : count) top = std::max(top, n);
  EXPECT_NEAR(top / 200000.0, 1 / h, 0.01);
  EXPECT_EQ(count.count(0), 1u);  // rank 1 lands on row 0 ((1 - 1) * a mod R)
  const auto uniform = draw_indices({1000, 8, 1, 200000, 0, {}}, 200000, 5);
  std::map<int64_t, int> u;
  for (int64_t i : uniform) ++u[i];
  EXPECT_GT(u.size(), 990u);
  int most = 0;
  for (const auto& [row, n] : u) most = std::max(most, n);
  EXPECT_LT(most, 330);  // 200 expected per row
}

// A histogram: its hot bucket (1 % of the rows) takes its 60 % of the draws, on 1 % of rows.
TEST(EmbeddingInputs, DrawsFollowAHistogram) {
  EmbeddingShape s{10000, 8, 1, 100000, 0, {}};
  s.histogram = {{0.01, 0.6}, {0.99, 0.4}};
  std::map<int64_t, int> count;
  for (int64_t i : draw_indices(s, 100000, 3)) ++count[i];
  std::vector<int> n;
  for (const auto& [row, c] : count) n.push_back(c);
  std::sort(n.rbegin(), n.rend());
  int top = 0;
  for (size_t i = 0; i < 100; ++i) top += n[i];
  EXPECT_NEAR(top / 100000.0, 0.6, 0.02);
  s.histogram = {{0.5, 0.5}, {0.4, 0.5}};
  EXPECT_THROW(check_shape(s), InputError);
  s.histogram = {{0.5, 1.0}, {0.5, 0.0}};  // a cold half never drawn: fine
  EXPECT_NO_THROW(check_shape(s));
  EXPECT_LE(count.size(), 10000u);
}

TEST(EmbeddingInputs, ShapesThatCannotRunAreOneLine) {
  EXPECT_THROW(check_shape({0, 8, 1, 10, 0, {}}), InputError);
  EXPECT_THROW(check_shape({10, 0, 1, 10, 0, {}}), InputError);
  EXPECT_THROW(check_shape({10, 8, 0, 10, 0, {}}), InputError);
  EXPECT_THROW(check_shape({10, 8, 0.01, 10, 0, {}}), InputError);  // no lookup at all
  EXPECT_THROW(check_shape({10, 8, 1, 10, -1, {}}), InputError);
  EXPECT_NO_THROW(check_shape({10, 8, 0.5, 10, 1.05, {}}));
}

TEST(HostEmbedding, BothPassesAreChecked) {
  for (const char* dtype : {"fp32", "bf16"})
    for (const char* optimizer : {"rowwise_adagrad", "sgd"}) {
      EmbeddingOptions o;
      o.dtype = dtype;
      o.optimizer = optimizer;
      o.shapes = {
          {5000, 16, 4, 300, 0, {}}, {20000, 33, 2.5, 129, 1.05, {}}, {7, 64, 20, 50, 0, {}}};
      o.timing.warmup = 1;
      o.timing.iterations = 3;
      o.threads = 2;
      const EmbeddingReport r = bench_embedding(o);
      ASSERT_EQ(r.results.size(), 6u);
      for (const auto& e : r.results) {
        EXPECT_EQ(e.wrong, 0) << dtype << " " << optimizer << " " << e.pass << " dim "
                              << e.shape.dim;
        EXPECT_GT(e.stats.median_ns, 0);
        EXPECT_GT(e.lookups_per_s, 0);
        EXPECT_EQ(e.optimizer, e.pass == "forward" ? "none" : optimizer);
      }
    }
}

TEST(HostEmbedding, BadOptionsAreInputErrors) {
  EmbeddingOptions o;
  o.shapes = {{100, 8, 1, 10, 0, {}}};
  o.dtype = "fp16";
  EXPECT_THROW((void)bench_embedding(o), InputError);
  o.dtype = "fp32";
  o.passes = {"sideways"};
  EXPECT_THROW((void)bench_embedding(o), InputError);
  o.passes = {"forward"};
  o.optimizer = "adam";
  EXPECT_THROW((void)bench_embedding(o), InputError);
  o.optimizer = "sgd";
  o.shapes = {};
  EXPECT_THROW((void)bench_embedding(o), InputError);
}

}  // namespace
}  // namespace shardcost::bench
