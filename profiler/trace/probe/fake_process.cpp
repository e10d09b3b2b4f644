// Stands in for a traced CUDA process in the end-to-end tests of `shardcost trace -- CMD`
// (tests/e2e/trace_steps.sh): writes into $SHARDCOST_TRACE_DIR what the injection library
// writes, three training steps of test_support.h's fixed step, each inside an NVTX range named
// PREFIX<n> (argv[1], default "ProfilerStep#"), and one unrelated range.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "test_support.h"
#include "trace_file.h"

int main(int argc, char** argv) {
  using namespace shardcost::trace;
  const char* dir = std::getenv("SHARDCOST_TRACE_DIR");
  if (!dir) {
    std::fprintf(stderr, "trace_fake_process: run it under 'shardcost trace --'\n");
    return 2;
  }
  const std::string prefix = argc > 1 ? argv[1] : "ProfilerStep#";
  constexpr uint64_t t0 = 1'700'000'000'000'000'000ull, step = 2'000'000;  // 2 ms
  std::string bytes = file::encode_header(static_cast<uint32_t>(::getpid()), "fake-host");
  // Names 0-7 are the step's kernels; 8 "data loading"; 9, 10, 11 the three steps' ranges.
  for (uint32_t i = 0; i < 3; ++i) {
    const uint64_t at = t0 + i * step;
    file::Batch b = testing::training_step(0, at, i == 0 ? 0 : 8, 1000);
    if (i == 0) b.new_names.push_back("data loading");
    b.first_new_name = i == 0 ? 0 : 9 + i;
    b.new_names.push_back(prefix + std::to_string(10 + i));
    file::RawEvent r;
    r.kind = file::RawKind::range;
    r.name = 9 + i;
    r.start_ns = at;
    r.end_ns = at + 1'500'000 + i * 100'000;  // 1.5, 1.6, 1.7 ms
    b.events.push_back(r);
    if (i == 0) {
      r.name = 8;
      r.end_ns = at + 100'000;
      b.events.push_back(r);
    }
    file::encode(b, bytes);
  }
  const std::string path =
      std::string(dir) + "/fake-host-" + std::to_string(::getpid()) + ".sctrace";
  std::ofstream(path, std::ios::binary) << bytes;
  return 0;
}
