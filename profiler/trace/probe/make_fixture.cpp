// Writes a fixture store for the golden summary test: the fixed training step of
// test_support.h, twice, on one GPU, through the real file -> collect -> store path.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "shardcost/db.h"
#include "shardcost/trace.h"
#include "test_support.h"
#include "trace_file.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: trace_make_fixture STORE\n");
    return 2;
  }
  namespace fs = std::filesystem;
  using namespace shardcost;
  const fs::path dir = fs::path(argv[1]).string() + ".raw";
  fs::create_directories(dir);
  constexpr uint64_t t0 = 1'700'000'000'000'000'000ull;
  std::string bytes = trace::file::encode_header(1234, "fixture-host");
  // Two steps of the fixed training step on one GPU, in microseconds.
  trace::file::encode(trace::testing::training_step(0, t0, 0, 1000), bytes);
  trace::file::encode(trace::testing::training_step(0, t0 + 2'000'000, 8, 1000), bytes);
  std::ofstream(dir / "fixture-host-1234.sctrace", std::ios::binary) << bytes;
  trace::Collected c = trace::collect_directory(dir.string());
  c.trace.run.uuid = "trace-fixture";
  c.trace.run.tool = "shardcost";
  c.trace.run.host = "fixture-host";
  c.trace.run.command_line = "shardcost trace -- python train.py";
  c.trace.run.start_time_ns = static_cast<int64_t>(t0 - 1000);
  c.trace.run.end_time_ns = static_cast<int64_t>(t0 + 10'000'000);
  auto store = db::Store::open(argv[1], db::Store::Mode::read_write);
  store.write(c.trace);
  fs::remove_all(dir);
  return 0;
}
