#pragma once
// A signal disposition for one scope: installed by the constructor, the previous one restored
// by the destructor (RAII, as every handle in shardcost).
#include <signal.h>

#include <cstddef>

namespace shardcost {

class ScopedSignals {
 public:
  // handler: a function, SIG_IGN or SIG_DFL, for the two signals named.
  ScopedSignals(int first, int second, void (*handler)(int)) : signals_{first, second} {
    struct sigaction sa {};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < 2; ++i) sigaction(signals_[i], &sa, &old_[i]);
  }
  ScopedSignals(const ScopedSignals&) = delete;
  ScopedSignals& operator=(const ScopedSignals&) = delete;
  ~ScopedSignals() {
    for (size_t i = 0; i < 2; ++i) sigaction(signals_[i], &old_[i], nullptr);
  }

 private:
  int signals_[2];
  struct sigaction old_[2]{};
};

}  // namespace shardcost
