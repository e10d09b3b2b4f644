#include "thread_pool.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>

#include "shardcost/error.h"

namespace shardcost::bench {

namespace {

void bind_to(pthread_t thread, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (const int rc = pthread_setaffinity_np(thread, sizeof(set), &set); rc != 0)
    throw Error(fmt::format("binding a thread to CPU {}: {}", cpu, std::strerror(rc)));
}

}  // namespace

ThreadPool::ThreadPool(int threads, const std::vector<int>& cpus) {
  if (!cpus.empty()) threads = static_cast<int>(cpus.size());
  if (threads <= 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
  if (cpus.empty()) return;
  try {
    cpu_set_t saved;
    if (const int rc = pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved); rc != 0)
      throw Error(fmt::format("reading this thread's CPU affinity: {}", std::strerror(rc)));
    for (size_t i = 1; i < cpus.size(); ++i) bind_to(workers_[i - 1].native_handle(), cpus[i]);
    bind_to(pthread_self(), cpus[0]);
    caller_mask_ = saved;
  } catch (...) {
    stop();
    throw;
  }
}

void ThreadPool::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : workers_)
    if (t.joinable()) t.join();
}

ThreadPool::~ThreadPool() {
  stop();
  if (caller_mask_)  // best effort in a destructor
    pthread_setaffinity_np(pthread_self(), sizeof(*caller_mask_), &*caller_mask_);
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
