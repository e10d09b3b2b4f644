#pragma once
// Inputs several estimator tests share: the GPT of Korthikanti et al. 2022 (dropout on, GeLU,
// ffn = 4h; tests/fixtures/models/gpt-paper-175b.json), one tensor-parallel group's strategy,
// and the message of an input error.
#include <string>

#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost::test_models {

inline Model paper_gpt() {
  return load_model(SHARDCOST_SOURCE_DIR "/tests/fixtures/models/gpt-paper-175b.json");
}

inline Strategy tp(int t, bool sp, int b = 1) {
  Strategy s;
  s.tp = t;
  s.sp = sp;
  s.mbs = b;
  s.gbs = b;
  return s;
}

// The seconds of the breakdown's part `name`, or -1 where the breakdown does not say it.
inline double part(const Estimate& e, const std::string& name) {
  for (const auto& p : e.time)
    if (p.name == name) return p.seconds;
  return -1;
}

// The bytes of the memory breakdown's part `name`, or -1 where the breakdown does not say it.
inline double memory_part(const Estimate& e, const std::string& name) {
  for (const auto& p : e.memory)
    if (p.name == name) return p.bytes;
  return -1;
}

// The one line an InputError says, or "" when f throws none.
template <typename F>
std::string input_error_of(const F& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace shardcost::test_models
