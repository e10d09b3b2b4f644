#pragma once
// Independent pieces of work shared out over a few threads: work(i) for every i in [0, n), each
// taken by the next free thread (the caller is one of them). Every piece runs even where others
// throw; the first failure in index order is then rethrown, so the outcome does not depend on
// how many threads ran or in what order they finished.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace shardcost {

template <class F>
void parallel_for(size_t n, int threads, F&& work) {
  std::vector<std::exception_ptr> errors(n);
  std::atomic<size_t> next{0};
  auto run = [&] {
    for (size_t i = next++; i < n; i = next++) {
      try {
        work(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const size_t used =
      std::clamp<size_t>(static_cast<size_t>(std::max(threads, 1)), 1, std::max<size_t>(n, 1));
  std::vector<std::thread> pool;
  for (size_t k = 1; k < used; ++k) pool.emplace_back(run);
  run();
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace shardcost
