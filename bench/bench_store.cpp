// bench_store: writes 1,000,000 generated kernel events into a fresh store and prints the
// store time and the bytes per event on disk. Requirement: <= 1 s and <= 64 B/event.
// Usage: bench_store [FILE] [EVENTS]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "shardcost/db.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const std::string path =
      argc > 1 ? argv[1] : (fs::temp_directory_path() / "shardcost_bench.db").string();
  const long events = argc > 2 ? std::stol(argv[2]) : 1000000;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);

  // A training step's shape: a few hundred distinct kernels on a few streams, back to back.
  shardcost::db::Measurements m;
  m.run.tool = "bench";
  shardcost::db::DeviceRecord d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.host = "bench";
  d.index = 0;
  m.devices.push_back(d);
  for (int i = 0; i < 300; ++i)
    m.names.push_back("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_kernel_" +
                      std::to_string(i));
  int64_t t = 1700000000000000000;
  m.kernels.reserve(static_cast<size_t>(events));
  for (long i = 0; i < events; ++i) {
    const auto kind =
        i % 50 == 0 ? shardcost::db::EventKind::memcpy : shardcost::db::EventKind::kernel;
    const int64_t dur = 2000 + (i * 7919) % 90000;
    // Each kernel name has its own launch configuration, as a training step's kernels do.
    const int32_t name = static_cast<int32_t>((i * 31) % 300);
    m.kernels.push_back({0,
                         7 + i % 4,
                         kind,
                         name,
                         t,
                         dur,
                         kind == shardcost::db::EventKind::memcpy ? 1 << 20 : 0,
                         {132 * (1 + name % 16), 1 + name % 3, 1, 128 * (1 + name % 4), 1, 1}});
    t += dur + 1500;
  }

  auto store = shardcost::db::Store::open(path, shardcost::db::Store::Mode::read_write);
  const auto start = std::chrono::steady_clock::now();
  store.write(m);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  store = shardcost::db::Store::open(path,
                                     shardcost::db::Store::Mode::read_only);  // checkpoints the WAL
  const auto bytes =
      fs::file_size(path) + (fs::exists(path + "-wal") ? fs::file_size(path + "-wal") : 0);
  std::printf(
      "events          %ld\nstore time      %.3f s (%.2f M events/s)\non disk         %.1f MB, "
      "%.1f bytes/event\n",
      events, seconds, events / seconds / 1e6, bytes / 1e6, static_cast<double>(bytes) / events);
  const bool ok = seconds <= 1.0 && static_cast<double>(bytes) / events <= 64;
  std::printf("requirement     <= 1 s, <= 64 bytes/event: %s\n", ok ? "met" : "NOT met");
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
  return ok ? 0 : 1;
}
