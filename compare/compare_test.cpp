#include "shardcost/compare.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "shardcost/error.h"

namespace shardcost::regress {
namespace {

Measure gemm(int64_t m, double median, int64_t run = 1) {
  Measure x;
  x.table = "gemm";
  x.key = {{"device", "cpu"}, {"dtype", "fp32"}, {"m", std::to_string(m)}};
  x.run_id = run;
  x.median_ns = median;
  return x;
}

// n samples around median with a relative half-spread, deterministic per seed.
Measure sampled(int64_t m, double median, double rel, size_t n, unsigned seed) {
  Measure x = gemm(m, median);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-rel, rel);
  for (size_t i = 0; i < n; ++i)
    x.samples_ns.push_back(static_cast<int64_t>(median * (1 + u(rng))));
  x.median_ns = stats::median(x.samples_ns);
  x.p10_ns = stats::percentile(x.samples_ns, 0.1);
  x.p90_ns = stats::percentile(x.samples_ns, 0.9);
  x.iterations = static_cast<int64_t>(n);
  return x;
}

TEST(CompareStats, MannWhitneyMatchesScipy) {
  // scipy.stats.mannwhitneyu([1..5], [6..10], method="asymptotic") -> p = 0.01219
  EXPECT_NEAR(stats::mann_whitney_p({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), 0.01219, 1e-4);
  EXPECT_NEAR(stats::mann_whitney_p({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}), 0.01219, 1e-4);
  EXPECT_DOUBLE_EQ(stats::mann_whitney_p({5, 5, 5}, {5, 5, 5}), 1.0);
  EXPECT_GT(stats::mann_whitney_p({1, 3, 5, 7}, {2, 4, 6, 8}), 0.5);
}

TEST(CompareStats, MedianZFromSpread) {
  // sigma = 25.631 / 2.5631 = 10; se = 1.2533 * 10 per side; z = 10 / 17.72
  auto p = stats::median_z_p(100, 25.631, 1, 110, 25.631, 1);
  ASSERT_TRUE(p);
  EXPECT_NEAR(*p, 2 * (1 - stats::normal_cdf(10 / std::hypot(12.533, 12.533))), 1e-6);
  EXPECT_FALSE(stats::median_z_p(100, 0, 10, 110, 0, 10));
  EXPECT_LT(*stats::median_z_p(100, 5, 100, 120, 5, 100), 1e-6);
}

TEST(CompareStats, HolmStepDown) {
  const auto adj = stats::holm({0.01, 0.04, 0.03});
  EXPECT_NEAR(adj[0], 0.03, 1e-12);
  EXPECT_NEAR(adj[1], 0.06, 1e-12);
  EXPECT_NEAR(adj[2], 0.06, 1e-12);
  EXPECT_TRUE(stats::holm({}).empty());
}

TEST(CompareStats, Percentiles) {
  EXPECT_DOUBLE_EQ(stats::median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(stats::median({1, 2, 3, 4}), 2.5);
  EXPECT_DOUBLE_EQ(stats::percentile({0, 10}, 0.1), 1);
}

TEST(Compare, MatchesByIdentityAndListsTheRest) {
  std::vector<Measure> base = {gemm(1, 100), gemm(2, 100)};
  std::vector<Measure> next = {gemm(2, 100), gemm(3, 100)};
  next[0].key[0].second = "cpu";  // same device name, other host: still a match
  const Comparison c = compare(base, next, {});
  ASSERT_EQ(c.pairs.size(), 1u);
  EXPECT_EQ(c.pairs[0].base.key[2].second, "2");
  ASSERT_EQ(c.only_base.size(), 1u);
  EXPECT_EQ(c.only_base[0].label(), "device=cpu dtype=fp32 m=1");
  ASSERT_EQ(c.only_next.size(), 1u);
  EXPECT_EQ(c.only_next[0].key[2].second, "3");
}

TEST(Compare, NewestRunOfAnIdentityWins) {
  const Comparison c = compare({gemm(1, 100, 1), gemm(1, 200, 2)}, {gemm(1, 200, 3)}, {});
  EXPECT_EQ(c.superseded, 1);
  ASSERT_EQ(c.pairs.size(), 1u);
  EXPECT_DOUBLE_EQ(c.pairs[0].change, 0);
  EXPECT_EQ(c.pairs[0].verdict, Verdict::unchanged);
}

TEST(Compare, SamplesFindARealSlowdown) {
  std::vector<Measure> base, next;
  for (int i = 0; i < 20; ++i) {
    base.push_back(sampled(i, 1000, 0.05, 30, static_cast<unsigned>(i)));
    next.push_back(sampled(i, i == 7 ? 1200 : 1000, 0.05, 30, static_cast<unsigned>(100 + i)));
  }
  const Comparison c = compare(base, next, {});
  EXPECT_EQ(c.count(Verdict::regressed), 1);
  for (const auto& p : c.pairs) {
    EXPECT_EQ(p.method, Method::mann_whitney);
    if (p.verdict == Verdict::regressed) {
      EXPECT_EQ(p.base.key[2].second, "7");
    }
  }
}

TEST(Compare, NoiseBiggerThanTheThresholdIsNotARegression) {
  // +-30 % jitter, 8 iterations: medians move by more than 5 % without anything changing.
  std::vector<Measure> base, next;
  for (int i = 0; i < 50; ++i) {
    base.push_back(sampled(i, 1000, 0.3, 8, static_cast<unsigned>(i)));
    next.push_back(sampled(i, 1000, 0.3, 8, static_cast<unsigned>(1000 + i)));
  }
  const Comparison c = compare(base, next, {});
  int beyond_threshold = 0;
  for (const auto& p : c.pairs) beyond_threshold += std::abs(p.change) > 0.05;
  EXPECT_GT(beyond_threshold, 5);  // a threshold alone would fail this CI run
  EXPECT_EQ(c.count(Verdict::regressed), 0);
  EXPECT_EQ(c.count(Verdict::improved), 0);
  // Said as such: the rows past the threshold sit in a noise wider than it.
  EXPECT_GT(c.count(Verdict::inconclusive), 0);
  for (const auto& p : c.pairs) {
    if (p.verdict == Verdict::inconclusive) {
      EXPECT_GT(p.noise, 0.05);
    }
  }
}

TEST(CompareStats, StudentTMatchesScipy) {
  // scipy.stats.t.sf(|t|, df) * 2 and t.ppf(1 - alpha / 2, df).
  EXPECT_NEAR(stats::student_t_p(2.0, 5), 0.101939, 1e-6);
  EXPECT_NEAR(stats::student_t_p(3.0, 10), 0.0133437, 1e-6);
  EXPECT_NEAR(stats::student_t_p(-1.0, 1), 0.5, 1e-9);
  EXPECT_NEAR(stats::student_t_critical(0.05, 10), 2.228139, 1e-5);
  EXPECT_NEAR(stats::student_t_critical(0.01, 4), 4.604095, 1e-5);
  EXPECT_NEAR(stats::student_t_critical(0.01, 1e7), 2.575829, 1e-5);
  EXPECT_NEAR(stats::robust_scatter({1, 2, 3, 4, 100}), 1.4826, 1e-12);
  EXPECT_DOUBLE_EQ(stats::median_of({4, 1, 3, 2}), 2.5);
}

// Rows of one run a side whose changes scatter by about 2 % (the run-to-run noise they show),
// deterministic per seed; `slow` rows changed by `factor`.
std::pair<std::vector<Measure>, std::vector<Measure>> scattered(int rows, double scatter,
                                                                double factor, int slow,
                                                                unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, scatter);
  std::vector<Measure> base, next;
  for (int i = 0; i < rows; ++i) {
    base.push_back(gemm(i, 1000));
    next.push_back(gemm(i, 1000 * std::exp(noise(rng)) * (i < slow ? factor : 1.0), 2));
  }
  return {base, next};
}

TEST(Compare, OneRunASideARowMustStandOutOfTheOthersScatter) {
  // Threshold-only rows (no within-run spread): 30 rows with 2 % scatter, one 30 % slower.
  auto [base, next] = scattered(30, 0.02, 1.3, 1, 7);
  Comparison c = compare(base, next, {});
  ASSERT_EQ(c.noise.size(), 1u);
  EXPECT_TRUE(c.noise[0].estimated);
  EXPECT_NEAR(c.noise[0].scatter, 0.02, 0.01);
  EXPECT_EQ(c.count(Verdict::regressed), 1);
  EXPECT_EQ(c.pairs[0].verdict, Verdict::regressed);  // m=0
  // Scatter of 10 %: a 12 % row is inside it; the noise is wider than the threshold.
  auto [wb, wn] = scattered(30, 0.10, 1.12, 1, 7);
  c = compare(wb, wn, {});
  EXPECT_EQ(c.count(Verdict::regressed), 0);
  EXPECT_GT(c.count(Verdict::inconclusive), 0);
  // Every row 8 % slower together: a slower machine or a slower build; one run a side cannot
  // tell them apart, so nothing is called regressed and nothing passes either.
  auto [ub, un] = scattered(30, 0.01, 1.08, 30, 9);
  c = compare(ub, un, {});
  EXPECT_NEAR(c.noise[0].shift, 0.08, 0.01);
  EXPECT_EQ(c.count(Verdict::regressed), 0);
  EXPECT_GT(c.inconclusive_slower(), 20);
  // Few rows: no scatter to estimate; the threshold decides as before.
  auto [fb, fn] = scattered(4, 0.02, 1.3, 1, 7);
  c = compare(fb, fn, {});
  EXPECT_FALSE(c.noise[0].estimated);
  EXPECT_EQ(c.count(Verdict::regressed), 1);
}

// Repeats: each side's runs of one build; their own spread is the noise.
TEST(Compare, RepeatedRunsJudgeEachRowByItsRunToRunSpread) {
  std::mt19937 rng(3);
  std::normal_distribution<double> jitter(0, 0.02);
  auto runs = [&](double factor, int64_t first_run) {
    std::vector<Measure> out;
    for (int64_t r = 0; r < 4; ++r)
      for (int i = 0; i < 10; ++i)
        out.push_back(
            gemm(i, 1000 * std::exp(jitter(rng)) * (i == 3 ? factor : 1.0), first_run + r));
    return out;
  };
  CompareOptions o;
  o.repeats = true;
  Comparison c = compare(runs(1.0, 1), runs(1.15, 10), o);
  ASSERT_EQ(c.pairs.size(), 10u);
  for (const auto& p : c.pairs) {
    EXPECT_EQ(p.method, Method::runs_t);
    EXPECT_EQ(p.base_runs, 4);
    EXPECT_EQ(p.next_runs, 4);
    EXPECT_EQ(p.verdict, p.base.key[2].second == "3" ? Verdict::regressed : Verdict::unchanged)
        << p.base.label() << " " << p.change;
  }
  EXPECT_EQ(c.noise[0].base_runs, 4);
  EXPECT_NEAR(c.noise[0].scatter, 0.02, 0.01);
  // The same build on both sides: nothing regressed.
  c = compare(runs(1.0, 1), runs(1.0, 10), o);
  EXPECT_EQ(c.count(Verdict::regressed), 0);
  EXPECT_EQ(c.count(Verdict::improved), 0);
  // Every row 12 % slower, each row's runs scattered by 8 % on their own (a noisy size, a
  // bimodal one): no row alone passes Holm at 4 runs a side, the table's run means do.
  std::normal_distribution<double> wide(0, 0.08);
  auto noisy = [&](double factor, int64_t first_run) {
    std::vector<Measure> out;
    for (int64_t r = 0; r < 4; ++r)
      for (int i = 0; i < 12; ++i)
        out.push_back(gemm(i, 1000 * std::exp(wide(rng)) * factor, first_run + r));
    return out;
  };
  c = compare(noisy(1.0, 1), noisy(1.12, 10), o);
  ASSERT_EQ(c.tables.size(), 1u);
  EXPECT_TRUE(c.tables[0].significant) << c.tables[0].p_value << " " << c.tables[0].change;
  EXPECT_EQ(c.tables[0].rows, 12);
  int by_table = 0;
  for (const auto& p : c.pairs) by_table += p.by_table;
  EXPECT_GT(by_table, 0);
  EXPECT_EQ(c.count(Verdict::improved), 0);
  // The same build: the table's run means stay within their spread.
  c = compare(noisy(1.0, 1), noisy(1.0, 10), o);
  EXPECT_FALSE(c.tables[0].significant);
  EXPECT_EQ(c.count(Verdict::regressed), 0);
  // Without --repeats the newest run of each row is compared, as before.
  c = compare(runs(1.0, 1), runs(1.0, 10), {});
  EXPECT_EQ(c.pairs[0].method, Method::threshold);
  EXPECT_EQ(c.superseded, 60);
}

TEST(Compare, SummariesUseTheSpreadAndIterations) {
  Measure a = gemm(1, 1000), b = gemm(1, 1100);
  a.p10_ns = 950, a.p90_ns = 1050, a.iterations = 200;
  b.p10_ns = 1045, b.p90_ns = 1155, b.iterations = 200;
  Comparison c = compare({a}, {b}, {});
  EXPECT_EQ(c.pairs[0].method, Method::median_z);
  EXPECT_EQ(c.pairs[0].verdict, Verdict::regressed);
  // The same change with a wide spread over few iterations is within a noise wider than the
  // threshold: inconclusive, not a regression.
  a.p10_ns = 600, a.p90_ns = 1400, a.iterations = 5;
  b.p10_ns = 700, b.p90_ns = 1500, b.iterations = 5;
  c = compare({a}, {b}, {});
  EXPECT_EQ(c.pairs[0].verdict, Verdict::inconclusive);
  EXPECT_FALSE(c.pairs[0].significant);
  EXPECT_GT(c.pairs[0].noise, 0.1);
}

TEST(Compare, OneSideWithoutSpreadBorrowsTheOther) {
  Measure a = gemm(1, 1000), b = gemm(1, 1300);
  a.p10_ns = 990, a.p90_ns = 1010, a.iterations = 50;
  b.iterations = 20;
  const Comparison c = compare({a}, {b}, {});
  EXPECT_EQ(c.pairs[0].method, Method::median_z);
  EXPECT_EQ(c.pairs[0].verdict, Verdict::regressed);
}

TEST(Compare, WithoutAnySpreadTheThresholdDecides) {
  const Comparison c = compare({gemm(1, 1000), gemm(2, 1000), gemm(3, 1000)},
                               {gemm(1, 1040), gemm(2, 1200), gemm(3, 800)}, {});
  ASSERT_EQ(c.pairs.size(), 3u);
  EXPECT_EQ(c.pairs[0].method, Method::threshold);
  EXPECT_EQ(c.pairs[0].verdict, Verdict::unchanged);
  EXPECT_EQ(c.pairs[1].verdict, Verdict::regressed);
  EXPECT_EQ(c.pairs[2].verdict, Verdict::improved);
  EXPECT_NEAR(c.pairs[1].change, 0.2, 1e-12);
  CompareOptions loose;
  loose.threshold = 0.25;
  EXPECT_EQ(compare({gemm(2, 1000)}, {gemm(2, 1200)}, loose).count(Verdict::regressed), 0);
}

}  // namespace
}  // namespace shardcost::regress
