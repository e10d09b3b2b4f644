// libFuzzer entry point (build with -DSHARDCOST_FUZZ=ON and clang).
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  shardcost::fuzz::nemo_log(data, size);
  return 0;
}
