#include "stop.h"

#include <atomic>
#include <vector>

#include "mpi_api.h"

namespace shardcost::bench {
namespace {

// Set from a signal handler: a lock-free atomic is async-signal-safe.
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);

}  // namespace

void request_stop() {
  g_stop.store(true, std::memory_order_relaxed);
}

void clear_stop_request() {
  g_stop.store(false, std::memory_order_relaxed);
}

bool stop_requested() {
  return g_stop.load(std::memory_order_relaxed);
}

bool stop_before_next(Completion& c, bool across_mpi_ranks) {
  bool stop = stop_requested();
  if (across_mpi_ranks && mpi::world().size > 1) {
    std::vector<int64_t> any{stop ? 1 : 0};
    mpi::max_all(any);
    stop = any[0] != 0;
  }
  if (stop) c.interrupted = true;
  return stop;
}

}  // namespace shardcost::bench
