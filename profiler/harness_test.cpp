#include "harness.h"

#include <gtest/gtest.h>

#include "shardcost/error.h"
#include "thread_pool.h"

namespace shardcost::bench {
namespace {

// A timer that reports a scripted duration per iteration: the harness logic without clocks.
class FakeTimer final : public Timer {
 public:
  explicit FakeTimer(std::vector<int64_t> script) : script_(std::move(script)) {}
  void begin(int) override { ++begins; }
  void end(int) override {}
  std::vector<int64_t> durations_ns(int count) override {
    std::vector<int64_t> out;
    for (int i = 0; i < count; ++i)
      out.push_back(script_[static_cast<size_t>(next_++) % script_.size()]);
    return out;
  }
  int begins = 0;

 private:
  std::vector<int64_t> script_;
  int next_ = 0;
};

class CountingBench final : public Benchmark {
 public:
  void prepare(int) override { ++prepared; }
  void run(int) override { ++runs; }
  int64_t check() override {
    ++checks;
    return wrong;
  }
  int prepared = 0, runs = 0, checks = 0;
  int64_t wrong = 0;
};

TEST(Measure, WarmsUpThenTimesThenChecks) {
  CountingBench b;
  FakeTimer t({100, 200, 300});
  Timing timing;
  timing.warmup = 3;
  timing.iterations = 9;
  const Measured m = measure(b, t, timing);
  EXPECT_EQ(b.runs, 12);
  EXPECT_EQ(b.prepared, 12);
  EXPECT_EQ(b.checks, 1);
  EXPECT_EQ(m.stats.iterations, 9);
  EXPECT_EQ(m.stats.median_ns, 200);
  EXPECT_EQ(m.wrong, 0);
}

TEST(Measure, KeepsEveryTimedIterationAfterWarmUpInOrder) {
  CountingBench b;
  FakeTimer t({10, 20, 30, 40, 50});  // warm-up takes 10, 20; then 30, 40, 50, 10
  Timing timing;
  timing.warmup = 2;
  timing.iterations = 4;
  const Measured m = measure(b, t, timing);
  EXPECT_EQ(m.stats.samples_ns, (std::vector<int64_t>{30, 40, 50, 10}));
  EXPECT_EQ(m.stats.iterations, 4);
}

TEST(Measure, TimeBudgetSetsTheIterationCountFromWarmUp) {
  CountingBench b;
  FakeTimer t({1'000'000});  // 1 ms per iteration
  Timing timing;
  timing.warmup = 2;
  timing.time_budget_s = 0.05;
  const Measured m = measure(b, t, timing);
  EXPECT_EQ(m.stats.iterations, 50);
}

TEST(Measure, ReportsWrongResultsAndRejectsBadCounts) {
  CountingBench b;
  b.wrong = 3;
  FakeTimer t({10});
  EXPECT_EQ(measure(b, t, Timing{}).wrong, 3);
  Timing bad;
  bad.iterations = 0;
  EXPECT_THROW(measure(b, t, bad), InputError);
}

TEST(HostTimer, MeasuresRealTime) {
  HostTimer t;
  t.begin(0);
  volatile double x = 0;
  for (int i = 0; i < 100000; ++i) x = x + i;
  t.end(0);
  EXPECT_GT(t.durations_ns(1)[0], 0);
}

TEST(ThreadPool, RunsOnEveryThreadAndSharesCoverTheRange) {
  ThreadPool pool(3);
  std::vector<int> hits(3, 0);
  pool.run([&](int t) { hits[static_cast<size_t>(t)]++; });
  pool.run([&](int t) { hits[static_cast<size_t>(t)]++; });
  EXPECT_EQ(hits, (std::vector<int>{2, 2, 2}));
  int64_t covered = 0, last = 0;
  for (int t = 0; t < 3; ++t) {
    const Range r = share(1000, t, 3, 64);
    EXPECT_EQ(r.begin, last);
    covered += r.end - r.begin;
    last = r.end;
  }
  EXPECT_EQ(covered, 1000);
}

}  // namespace
}  // namespace shardcost::bench
