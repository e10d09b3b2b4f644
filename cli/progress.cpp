#include "progress.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <memory>

#include "format.h"

namespace shardcost::cli {

Progress progress_lines(std::string command) {
  using Clock = std::chrono::steady_clock;
  struct State {
    Clock::time_point start = Clock::now();
    double after_s = 2;
    double last_s = -1;  // when a line was last said; -1: none yet
  };
  auto st = std::make_shared<State>();
  if (const char* env = std::getenv("SHARDCOST_PROGRESS_AFTER_S")) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end != env && v >= 0) st->after_s = v;
  }
  return [st, command = std::move(command)](std::string_view what, int64_t done, int64_t total) {
    const double now = std::chrono::duration<double>(Clock::now() - st->start).count();
    const bool last = done >= total;
    if (now < st->after_s || (last ? st->last_s < 0 : now - st->last_s < 1)) return;
    st->last_s = now;
    fmt::print(stderr, "shardcost: {}: {} of {} {} ({:.0f} s)\n", command,
               thousands(static_cast<double>(done)), thousands(static_cast<double>(total)), what,
               now);
    std::fflush(stderr);
  };
}

}  // namespace shardcost::cli
