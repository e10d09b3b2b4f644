#pragma once
// Inputs several estimator tests share: the GPT of Korthikanti et al. 2022 (dropout on, GeLU,
// ffn = 4h; tests/fixtures/models/gpt-paper-175b.json) and one tensor-parallel group's strategy.
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

}  // namespace shardcost::test_models
