#pragma once
// The one timing harness every benchmark plugs into: warm-up, iteration count or time budget,
// per-iteration timing, statistics and a correctness check. It never prints.
#include <chrono>
#include <cstdint>
#include <vector>

#include "shardcost/profiler.h"

namespace shardcost::bench {

// Times iterations. Host timers read the clock; device timers record events and resolve
// them all at the end, so timing never stalls the device between iterations.
class Timer {
 public:
  virtual ~Timer() = default;
  virtual void begin(int iteration) = 0;
  virtual void end(int iteration) = 0;
  // Durations of iterations [0, count), after the last end().
  virtual std::vector<int64_t> durations_ns(int count) = 0;
};

class HostTimer final : public Timer {
 public:
  void begin(int i) override;
  void end(int i) override;
  std::vector<int64_t> durations_ns(int count) override;

 private:
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> begin_, end_;
};

// A benchmark plug-in. run() is the timed work; everything else is untimed.
class Benchmark {
 public:
  virtual ~Benchmark() = default;
  // Before iteration i's timer starts: barriers, cache flushes, picking a rotated buffer.
  virtual void prepare(int /*iteration*/) {}
  virtual void run(int iteration) = 0;
  // After the last iteration, before the timer resolves (e.g. wait for the device).
  virtual void finish() {}
  // Ranks must run the same number of iterations: the agreed count.
  virtual int agree(int iterations) { return iterations; }
  // Turns per-process durations into the figure to report (e.g. the slowest rank's).
  virtual void combine(std::vector<int64_t>& /*durations_ns*/) {}
  // Runs once more from fresh inputs and returns how many checked elements are wrong.
  virtual int64_t check() = 0;
  // How many elements check() looks at (for the report).
  virtual int64_t checked_elements() const { return 0; }
};

struct Measured {
  Stats stats;
  int64_t wrong = 0;
};

Measured measure(Benchmark&, Timer&, const Timing&);
// `count` timed iterations alone (each prepared, timed and run; no warm-up, no check): their
// durations, as measure() takes them.
std::vector<int64_t> timed_loop(Benchmark&, Timer&, int count);

}  // namespace shardcost::bench
