#include "watchdog.h"

#include <fmt/format.h>

#include <cstdlib>

#include "shardcost/error.h"

namespace shardcost::bench {

Watchdog::Watchdog(TimeoutHandler handler, std::function<void()> abort)
    : handler_(std::move(handler)), abort_(std::move(abort)), thread_([this] { watch(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Watchdog::arm(double seconds, std::string what) {
  {
    std::lock_guard lock(mutex_);
    armed_ = true;
    seconds_ = seconds;
    deadline_ = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(seconds));
    what_ = std::move(what);
  }
  wake_.notify_all();
}

void Watchdog::disarm() {
  std::lock_guard lock(mutex_);
  armed_ = false;
}

void Watchdog::watch() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (stop_) return;
    if (!armed_) {
      wake_.wait(lock);
      continue;
    }
    if (wake_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ && !stop_ &&
        std::chrono::steady_clock::now() >= deadline_) {
      const std::string message = fmt::format(
          "{} did not finish within {:g} s (a rank stalled or the fabric hung); aborting every "
          "rank. Check that all ranks run the same command, or raise --timeout",
          what_, seconds_);
      if (handler_) handler_(message);
      abort_();
      std::_Exit(3);  // abort_ must not return; never let a hung run continue
    }
  }
}

void check_timeout(double seconds) {
  if (!(seconds > 0) || seconds > 86400)
    throw InputError(
        fmt::format("--timeout {} must be a positive number of seconds, at most 86400", seconds));
}

}  // namespace shardcost::bench
