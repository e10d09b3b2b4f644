#pragma once
// A fixed set of worker threads that run one function on every thread and wait for all of
// them: thread start-up stays out of the timed region of host memory benchmarks.
#include <sched.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace shardcost::bench {

class ThreadPool {
 public:
  // threads 0 = one per logical CPU. With cpus, one thread per entry, thread t bound to
  // cpus[t] (the caller, thread 0, until the pool ends, when its own affinity comes back).
  // Throws Error when the kernel refuses a binding.
  explicit ThreadPool(int threads, const std::vector<int>& cpus = {});
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool();

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls fn(thread_index) on every thread (the caller is thread 0) and returns when all are done.
  void run(const std::function<void(int)>& fn);

 private:
  void work(int index);
  void stop();
  std::optional<cpu_set_t> caller_mask_;  // the caller's affinity before binding
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void(int)>* fn_ = nullptr;
  int64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

// [begin, end) of thread t's share of n items, aligned to `align` items.
struct Range {
  int64_t begin = 0, end = 0;
};
Range share(int64_t n, int thread, int threads, int64_t align = 64);

}  // namespace shardcost::bench
