// bench_import: `import kineto` of a generated 1,000,000-event PyTorch profiler trace (about
// 350 MB, pretty-printed as Kineto writes it: CPU ops, runtime calls and GPU kernels, copies and
// sets with their args), streamed into a fresh store. Targets: <= 1.5 s wall for parse and store
// together and peak memory (max RSS) under 300 MB. Prints the parse and store times, the file
// size and the peak RSS. Usage: bench_import [TRACE_FILE] [EVENTS]; the file is written when it
// is missing (and kept, for a side-by-side run of another tool on the same file).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "shardcost/db.h"
#include "shardcost/importers.h"

namespace {

// Kineto's layout: one event per object, one field per line, one-space indents.
void write_trace(const std::string& path, long events, int rank = 0) {
  std::ofstream out(path, std::ios::binary);
  out << "{\n \"schemaVersion\": 1,\n \"deviceProperties\": [\n  {\n   \"id\": 0, \"name\": "
         "\"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85031714816,\n   \"computeMajor\": 9, "
         "\"computeMinor\": 0, \"maxThreadsPerBlock\": 1024, \"numSms\": 132\n  }\n ],\n "
         "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": "
      << rank
      << ", \"world_size\": 1},\n "
         "\"traceEvents\": [\n";
  double ts = 1000.0;
  char buf[1024];
  for (long i = 0; i < events; ++i) {
    const int kind = static_cast<int>(i % 5);  // 2 CPU events, 2 kernels, 1 copy or set
    int n = 0;
    if (kind == 0)
      n = std::snprintf(buf, sizeof buf,
                        "  {\n   \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm_%ld\", "
                        "\"pid\": 4021, \"tid\": 4021,\n   \"ts\": %.3f, \"dur\": 35.250,\n   "
                        "\"args\": {\n    \"External id\": %ld, \"Sequence number\": %ld, \"Fwd "
                        "thread id\": 0, \"Record function id\": 0, \"Ev Idx\": %ld\n   }\n  }",
                        i % 97, ts, i, i / 3, i);
    else if (kind == 1)
      n = std::snprintf(buf, sizeof buf,
                        "  {\n   \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
                        "\"cudaLaunchKernel\", \"pid\": 4021, \"tid\": 4021,\n   \"ts\": %.3f, "
                        "\"dur\": 5.125,\n   \"args\": {\n    \"External id\": %ld, \"cbid\": 211, "
                        "\"correlation\": %ld\n   }\n  }",
                        ts, i, i);
    else if (kind == 4)
      n = std::snprintf(buf, sizeof buf,
                        "  {\n   \"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": 0, "
                        "\"tid\": 20,\n   \"ts\": %.3f, \"dur\": 12.500,\n   \"args\": {\n    "
                        "\"External id\": %ld, \"device\": 0, \"context\": 1, \"stream\": 20, "
                        "\"correlation\": %ld, \"bytes\": 4194304, \"memory bandwidth (GB/s)\": "
                        "335.5\n   }\n  }",
                        i % 10 == 4 ? "gpu_memset" : "gpu_memcpy",
                        i % 10 == 4 ? "Memset (Device)" : "Memcpy DtoD (Device -> Device)", ts, i,
                        i);
    else
      n = std::snprintf(buf, sizeof buf,
                        "  {\n   \"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
                        "\"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroup"
                        "size2x1x1_execute_segment_k_off_kernel__5x_cublas_%ld\", \"pid\": 0, "
                        "\"tid\": 7,\n   \"ts\": %.3f, \"dur\": 42.500,\n   \"args\": {\n    "
                        "\"External id\": %ld, \"queued\": 0, \"device\": 0, \"context\": 1,\n    "
                        "\"stream\": 7, \"correlation\": %ld, \"registers per thread\": 168, "
                        "\"shared memory\": 213248,\n    \"blocks per SM\": 1.0, \"warps per SM\": "
                        "8.0,\n    \"grid\": [132, 1, 1], \"block\": [384, 1, 1],\n    \"est. "
                        "achieved occupancy %%\": 13\n   }\n  }",
                        i % 300, ts, i, i);
    out.write(buf, n);
    out << (i + 1 < events ? ",\n" : "\n");
    ts += 1.5;
  }
  out << " ],\n \"traceName\": \"bench.json\",\n \"baseTimeNanoseconds\": 1700000000000000000\n}\n";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// bench_import --ranks N [EVENTS]: N rank traces of EVENTS events each (default 500,000), read
// into one run on 1 thread and on N threads. Target: N threads at least 1.3x faster than one
// (on a machine of N cores or more).
int ranks_mode(int ranks, long events) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (int r = 0; r < ranks; ++r) {
    files.push_back(
        (fs::temp_directory_path() / ("shardcost_bench_rank" + std::to_string(r) + ".json"))
            .string());
    if (!fs::exists(files.back())) write_trace(files.back(), events, r);
  }
  double best[2] = {1e30, 1e30};
  size_t kernels = 0;
  for (int round = 0; round < 3; ++round) {
    for (int t = 0; t < 2; ++t) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto m = shardcost::db::import_kineto_ranks(files, t == 0 ? 1 : ranks);
      best[t] = std::min(best[t], seconds_since(t0));
      kernels = m.kernels.size();
    }
  }
  const double speedup = best[0] / best[1];
  std::printf(
      "%d rank traces of %ld events (%zu GPU events in one run): 1 thread %.3f s, %d "
      "threads %.3f s, %.2fx (target >= 1.3x); best of 3\n",
      ranks, events, kernels, best[0], ranks, best[1], speedup);
  return speedup >= 1.3 ? 0 : 1;
}

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc > 2 && std::string(argv[1]) == "--ranks")
    return ranks_mode(std::stoi(argv[2]), argc > 3 ? std::stol(argv[3]) : 500000);
  const std::string trace =
      argc > 1 ? argv[1] : (fs::temp_directory_path() / "shardcost_bench_kineto.json").string();
  const long events = argc > 2 ? std::stol(argv[2]) : 1000000;
  if (!fs::exists(trace)) write_trace(trace, events);
  const std::string db = (fs::temp_directory_path() / "shardcost_bench_import.db").string();
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db + suffix);

  const auto t0 = std::chrono::steady_clock::now();
  shardcost::db::Measurements m = shardcost::db::import_kineto_file(trace);
  const double parse_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  auto store = shardcost::db::Store::open(db, shardcost::db::Store::Mode::read_write);
  store.write(m);
  const double store_s = seconds_since(t1), total_s = seconds_since(t0);
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const double rss_mb = static_cast<double>(u.ru_maxrss) / 1024.0;
  std::printf("%s: %.1f MB, %zu GPU events of %ld\n", trace.c_str(),
              static_cast<double>(fs::file_size(trace)) / 1e6, m.kernels.size(), events);
  std::printf(
      "import kineto: parse %.3f s + store %.3f s = %.3f s (target <= 1.5 s); peak RSS "
      "%.0f MB (target < 300 MB)\n",
      parse_s, store_s, total_s, rss_mb);
  return total_s <= 1.5 && rss_mb < 300 ? 0 : 1;
}
