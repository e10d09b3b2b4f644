#pragma once
// Bounds a measurement that may hang (a collective whose peer never arrives): a thread that
// wakes when the deadline passes, hands a message to the handler, then runs the abort.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "shardcost/profiler.h"

namespace shardcost::bench {

// A --timeout a watchdog can be armed with: a positive, finite number of seconds up to a day
// (NaN and inf refused too); an InputError otherwise.
void check_timeout(double seconds);

class Watchdog {
 public:
  // abort: ends the process (MPI_Abort, ncclCommAbort + exit); it must not return.
  Watchdog(TimeoutHandler handler, std::function<void()> abort);
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog();

  void arm(double seconds, std::string what);
  void disarm();

 private:
  void watch();
  TimeoutHandler handler_;
  std::function<void()> abort_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool armed_ = false, stop_ = false;
  double seconds_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  std::string what_;
  std::thread thread_;
};

}  // namespace shardcost::bench
