#include "thread_pool.h"

#include <algorithm>

namespace shardcost::bench {

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run(const std::function<void(int)>& fn) {
  {
    std::lock_guard lock(mutex_);
    fn_ = &fn;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_.notify_all();
  fn(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  fn_ = nullptr;
}

void ThreadPool::work(int index) {
  int64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* fn = nullptr;
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      fn = fn_;
    }
    (*fn)(index);
    std::lock_guard lock(mutex_);
    if (--pending_ == 0) done_.notify_one();
  }
}

Range share(int64_t n, int thread, int threads, int64_t align) {
  const int64_t blocks = (n + align - 1) / align;
  const int64_t per = blocks / threads, extra = blocks % threads;
  const int64_t first = thread * per + std::min<int64_t>(thread, extra);
  const int64_t count = per + (thread < extra ? 1 : 0);
  return {std::min(n, first * align), std::min(n, (first + count) * align)};
}

}  // namespace shardcost::bench
