// Learned size curves: monotone fits, the ends, rank counts carried only over uniform links,
// the cross-validation splits and damaged records.
#include "curve_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost::learned {
namespace {

using Points = std::vector<std::pair<double, double>>;

// latency + bytes / bandwidth at sizes 1 KiB .. 1 GiB, a factor 2 apart.
Points alpha_beta(double latency_s, double bandwidth_Bps) {
  Points p;
  for (double b = 1024; b <= (1 << 30); b *= 2) p.push_back({b, latency_s + b / bandwidth_Bps});
  return p;
}

TEST(SizeCurve, MeansPerSizeMadeMonotoneThenLinearInBytes) {
  // 2 KiB measured twice (its mean 13 us) and faster than 1 KiB: pooled into one level.
  const SizeCurve c =
      SizeCurve::fit({{1024, 14e-6}, {2048, 12e-6}, {2048, 14e-6}, {4096, 11e-6}, {8192, 20e-6}});
  ASSERT_EQ(c.bytes.size(), 4u);
  EXPECT_DOUBLE_EQ(c.seconds[0], c.seconds[1]);
  EXPECT_DOUBLE_EQ(c.seconds[1], c.seconds[2]);
  EXPECT_NEAR(c.seconds[0], (14e-6 + 13e-6 + 11e-6) / 3, 1e-18);
  for (size_t i = 1; i < c.seconds.size(); ++i) EXPECT_GE(c.seconds[i], c.seconds[i - 1]);
  EXPECT_NEAR(c.at(6144), 0.5 * (c.seconds[2] + c.seconds[3]), 1e-18);  // halfway in bytes
  EXPECT_TRUE(c.covers(1024));
  EXPECT_FALSE(c.covers(16384));
}

TEST(SizeCurve, AlphaBetaIsRecoveredExactlyAndCarriedBeyondItsEnds) {
  const SizeCurve c = SizeCurve::fit(alpha_beta(10e-6, 100e9));
  for (double b : {100.0, 3000.0, 5e6, 4e9, 1e10})
    EXPECT_NEAR(c.at(b), 10e-6 + b / 100e9, 1e-12) << b;
  // A first stretch steeper than its throughput (no latency left) is never extrapolated
  // below zero: the first knot's throughput bounds it.
  const SizeCurve steep = SizeCurve::fit({{1000, 1e-6}, {2000, 3e-6}, {4000, 7e-6}, {8000, 15e-6}});
  EXPECT_NEAR(steep.at(100), 1e-7, 1e-18);
  EXPECT_GT(steep.at(1), 0);
}

TEST(CollectiveFit, RankCountsAreCarriedOnlyOverUniformLinks) {
  const Device a100 = find_device("a100-sxm4-80gb");  // NVSwitch: uniform
  const Device l40s = find_device("l40s");            // PCIe: not
  ASSERT_TRUE(a100.uniform_node());
  ASSERT_FALSE(l40s.uniform_node());
  const std::vector<std::pair<int, Points>> rows = {{2, alpha_beta(10e-6, 100e9)},
                                                    {8, alpha_beta(22e-6, 50e9)}};
  const CollectiveFit fit =
      fit_collective(a100, CollectiveOp::all_reduce, FabricLevel::intra_node, rows);
  EXPECT_TRUE(fit.uniform);
  const auto four = fit.predict(1 << 20, 4);
  ASSERT_TRUE(four);
  EXPECT_TRUE(four->inside);
  const double t2 = 10e-6 + (1 << 20) / 100e9, t8 = 22e-6 + (1 << 20) / 50e9;
  EXPECT_NEAR(four->seconds, t2 + (t8 - t2) / 3, 1e-12);  // linear in the rank count
  // Measured rank count, beyond the measured sizes: an answer, said to be outside.
  const auto big = fit.predict(8.0 * (1 << 30), 8);
  ASSERT_TRUE(big);
  EXPECT_FALSE(big->inside);
  // Beyond the measured rank counts: extrapolated, never faster than the nearest.
  const auto sixteen = fit.predict(1 << 20, 16);
  ASSERT_TRUE(sixteen);
  EXPECT_FALSE(sixteen->inside);
  EXPECT_GT(sixteen->seconds, t8);
  // Across a PCIe node's rank counts the model says nothing; its measured ones it answers.
  const CollectiveFit pcie =
      fit_collective(l40s, CollectiveOp::all_reduce, FabricLevel::intra_node, rows);
  EXPECT_FALSE(pcie.uniform);
  EXPECT_FALSE(pcie.predict(1 << 20, 4));
  EXPECT_TRUE(pcie.predict(1 << 20, 8));
  // Between nodes the network is uniform whatever the node.
  EXPECT_TRUE(
      fit_collective(l40s, CollectiveOp::all_reduce, FabricLevel::inter_node, rows).uniform);
}

TEST(CollectiveFit, CrossValidationHoldsOutSizesRangesAndRankCounts) {
  const Device a100 = find_device("a100-sxm4-80gb");
  // Exactly alpha-beta per rank count, latency and time linear in the rank count: every
  // split must find its held-out points (up to rounding).
  std::vector<std::pair<int, Points>> rows;
  for (int n : {2, 4, 8}) rows.push_back({n, alpha_beta(5e-6 * n, 1e11)});
  rows.push_back({16, {{1024, 1e-5}, {2048, 1e-5}}});  // too few sizes: left out, said so
  const CollectiveFit fit =
      fit_collective(a100, CollectiveOp::all_gather, FabricLevel::intra_node, rows);
  ASSERT_EQ(fit.curves.size(), 3u);
  ASSERT_EQ(fit.dropped.size(), 1u);
  EXPECT_NE(fit.dropped[0].find("16 ranks: 2 sizes"), std::string::npos) << fit.dropped[0];
  std::vector<std::string> splits;
  for (const auto& c : fit.cv) {
    splits.push_back(c.split);
    EXPECT_LT(c.p90, 1e-6) << c.split;
    EXPECT_GT(c.rows, 0u) << c.split;
  }
  EXPECT_EQ(splits, (std::vector<std::string>{
                        "each size held out", "largest quarter of sizes held out",
                        "smallest quarter of sizes held out", "each rank count held out",
                        "largest rank count held out (from the two below it)",
                        "smallest rank count held out (from the two above it)"}));
  EXPECT_EQ(fit.cv[0].rows, 3u * 19);  // the interior sizes of three curves
  EXPECT_EQ(fit.cv[3].rows, 21u);      // the 4-rank curve's sizes
  EXPECT_EQ(fit.cv[4].rows, 21u);      // the 8-rank curve's, from 2 and 4
  // Each answer says what it rests on and which split measured its kind.
  EXPECT_EQ(fit.basis(1 << 20, 3)->split, "each rank count held out");
  EXPECT_NE(fit.basis(1 << 20, 3)->how.find("between the 2 and 4 measured"), std::string::npos);
  EXPECT_EQ(fit.basis(1 << 20, 4)->split, "each size held out");
  EXPECT_EQ(fit.basis(1e12, 4)->split, "largest quarter of sizes held out");
  EXPECT_EQ(fit.basis(1, 8)->split, "smallest quarter of sizes held out");
  EXPECT_EQ(fit.basis(1 << 20, 12)->split, "largest rank count held out");
  EXPECT_NE(fit.basis(1 << 20, 12)->how.find("above the 4 and 8 measured"), std::string::npos);
  // A curve that bends is missed by the held-out figures, and they say by how much.
  std::vector<std::pair<int, Points>> bent = {{8, alpha_beta(5e-6, 1e11)}};
  for (auto& [b, t] : bent[0].second)
    if (b >= (1 << 20)) t *= 1.5;  // a protocol switch at 1 MiB
  const CollectiveFit f2 =
      fit_collective(a100, CollectiveOp::all_gather, FabricLevel::intra_node, bent);
  EXPECT_GT(f2.cv[0].p90, 0.01);
  EXPECT_THROW(fit_collective(a100, CollectiveOp::all_gather, FabricLevel::intra_node,
                              {{8, {{1024, 1e-5}}}}),
               InputError);
}

TEST(CollectiveFit, RecordsRoundTripAndDamagedOnesAreRefused) {
  const Device a100 = find_device("a100-sxm4-80gb");
  CollectiveFit fit = fit_collective(a100, CollectiveOp::reduce_scatter, FabricLevel::inter_node,
                                     {{16, alpha_beta(2e-5, 4e10)}});
  fit.per_node = 8;  // the layout it was measured at travels with it
  const CollectiveFit back = CollectiveFit::from_json(fit.to_json());
  EXPECT_EQ(back.per_node, 8);
  EXPECT_EQ(back.op, CollectiveOp::reduce_scatter);
  EXPECT_EQ(back.level, FabricLevel::inter_node);
  EXPECT_EQ(back.rows, fit.rows);
  EXPECT_EQ(back.cv.size(), fit.cv.size());
  EXPECT_DOUBLE_EQ(back.predict(3e6, 16)->seconds, fit.predict(3e6, 16)->seconds);
  // The held-out predictions travel with the record (for report): every interior size's.
  ASSERT_EQ(back.cv[0].held_out.size(), 19u);
  EXPECT_EQ(back.cv[0].held_out, fit.cv[0].held_out);
  auto damaged = [&](const std::string& from, const std::string& to) {
    std::string j = fit.to_json();
    const size_t at = j.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return j.replace(at, from.size(), to);
  };
  EXPECT_THROW(CollectiveFit::from_json(damaged("curve-ab-1", "curve-ab-0")), InputError);
  EXPECT_THROW(CollectiveFit::from_json(damaged("\"ranks\":16", "\"ranks\":-16")), InputError);
  EXPECT_THROW(CollectiveFit::from_json(damaged("\"ranks\":16", "\"ranks\":1.5")), InputError);
  EXPECT_THROW(CollectiveFit::from_json(damaged("\"bytes\":[1024.0", "\"bytes\":[-1024.0")),
               InputError);
  EXPECT_THROW(CollectiveFit::from_json(damaged("\"op\":\"reduce_scatter\"", "\"op\":\"gather\"")),
               InputError);
  EXPECT_THROW(CollectiveFit::from_json(damaged("\"held_out\":[[", "\"held_out\":[[-")),
               InputError);
  EXPECT_THROW(CollectiveFit::from_json(damaged("\"held_out\":[[", "\"held_out\":[[1],[")),
               InputError);
  EXPECT_THROW(CollectiveFit::from_json("{}"), InputError);
  EXPECT_THROW(CollectiveFit::from_json("not json"), InputError);
}

TEST(MemoryFit, FitsPredictsAndRoundTrips) {
  const MemoryFit fit = fit_memory("h100-sxm5-80gb", "copy_d2d", alpha_beta(3e-6, 1.5e12));
  EXPECT_EQ(fit.rows, 21u);
  EXPECT_EQ(fit.cv.size(), 3u);
  EXPECT_TRUE(fit.predict(1 << 20).inside);
  EXPECT_FALSE(fit.predict(1e10).inside);
  EXPECT_NEAR(fit.predict(1e10).seconds, 3e-6 + 1e10 / 1.5e12, 1e-9);
  const MemoryFit back = MemoryFit::from_json(fit.to_json());
  EXPECT_EQ(back.kind, "copy_d2d");
  EXPECT_DOUBLE_EQ(back.predict(5e5).seconds, fit.predict(5e5).seconds);
  EXPECT_THROW(fit_memory("h100-sxm5-80gb", "read", {{1024, 1e-6}, {2048, 2e-6}}), InputError);
}

}  // namespace
}  // namespace shardcost::learned

namespace shardcost::learned {
namespace {

TEST(HeldOut, SummariesKeepEveryKthPairAndTheFiguresOfAll) {
  HeldOut h;
  for (int i = 1; i <= 2000; ++i)
    h.add(i % 20 == 0 ? 2.0 : 1.01, 1.0);  // 1 % off, every 20th 100 %
  const CrossValidation cv = h.summary("x");
  EXPECT_EQ(cv.rows, 2000u);
  EXPECT_NEAR(cv.median, 0.01, 1e-9);
  EXPECT_NEAR(cv.p90, 0.01, 1e-9);  // 5 % of rows are 100 % off: beyond the 90th percentile
  EXPECT_EQ(cv.held_out.size(), kKeptHeldOut);
  EXPECT_EQ(cv.held_out[0], (std::pair<double, double>{1.0, 1.01}));
  EXPECT_EQ(HeldOut().summary("none").rows, 0u);
}

}  // namespace
}  // namespace shardcost::learned
