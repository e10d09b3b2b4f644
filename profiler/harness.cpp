#include "harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "shardcost/error.h"

namespace shardcost::bench {

void HostTimer::begin(int i) {
  if (static_cast<size_t>(i) >= begin_.size()) {
    begin_.resize(static_cast<size_t>(i) + 1);
    end_.resize(static_cast<size_t>(i) + 1);
  }
  begin_[static_cast<size_t>(i)] = Clock::now();
}

void HostTimer::end(int i) {
  end_[static_cast<size_t>(i)] = Clock::now();
}

std::vector<int64_t> HostTimer::durations_ns(int count) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    out.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      end_[static_cast<size_t>(i)] - begin_[static_cast<size_t>(i)])
                      .count());
  }
  return out;
}

std::vector<int64_t> timed_loop(Benchmark& b, Timer& t, int count) {
  for (int i = 0; i < count; ++i) {
    b.prepare(i);
    t.begin(i);
    b.run(i);
    t.end(i);
  }
  b.finish();
  std::vector<int64_t> ns = t.durations_ns(count);
  b.combine(ns);
  return ns;
}

Measured measure(Benchmark& b, Timer& t, const Timing& timing) {
  if (timing.iterations < 1 && timing.time_budget_s <= 0)
    throw InputError(fmt::format("--iters {} must be at least 1", timing.iterations));
  if (timing.warmup < 0)
    throw InputError(fmt::format("--warmup {} must be 0 or more", timing.warmup));
  // Every iteration's time is kept (the samples); past these counts a measurement holds more
  // samples than any statistic needs, and memory grows without bound.
  constexpr int kMaxCount = 1000000;
  if (timing.iterations > kMaxCount)
    throw InputError(fmt::format("--iters {} is above {}; a median needs far fewer",
                                 timing.iterations, kMaxCount));
  if (timing.warmup > kMaxCount)
    throw InputError(fmt::format("--warmup {} is above {}", timing.warmup, kMaxCount));
  if (!std::isfinite(timing.time_budget_s) || timing.time_budget_s < 0 ||
      timing.time_budget_s > 3600)
    throw InputError(
        fmt::format("--time-budget {} must be between 0 and 3600 seconds", timing.time_budget_s));
  int warmup = timing.warmup;
  if (timing.time_budget_s > 0) warmup = std::max(warmup, 1);
  int iterations = timing.iterations;
  if (warmup > 0) {
    const std::vector<int64_t> w = timed_loop(b, t, warmup);
    if (timing.time_budget_s > 0) {
      // Warm-up iterations price one iteration; fill the budget with that price.
      const int64_t per = std::max<int64_t>(1, *std::min_element(w.begin(), w.end()));
      const double fit = timing.time_budget_s * 1e9 / static_cast<double>(per);
      iterations = static_cast<int>(std::clamp(fit, 3.0, 100000.0));
    }
  }
  iterations = b.agree(iterations);
  Measured m;
  m.stats = summarize(timed_loop(b, t, iterations));
  m.wrong = b.check();
  return m;
}

}  // namespace shardcost::bench
