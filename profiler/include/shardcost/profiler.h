#pragma once
// shardcost profiler: measures the machine it runs on. Benchmarks return records; cli/ prints
// them and writes them to the cost store. Nothing here prints.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardcost/db.h"

namespace shardcost {

struct HostInfo {
  std::string hostname;
  std::string cpu_model;
  int logical_cpus = 0;
  double memory_bytes = 0;
  std::string cuda_build;  // "CUDA 13.0" or "built without CUDA"
};

HostInfo host_info();

namespace bench {

// ---------------------------------------------------------------- statistics and sizes
struct Stats {
  int64_t median_ns = 0, p10_ns = 0, p90_ns = 0, min_ns = 0, max_ns = 0;
  double mean_ns = 0;
  double cv = 0;  // coefficient of variation: stddev / mean
  int64_t iterations = 0;
  // Every timed iteration after warm-up, in iteration order (ns): what the store keeps as
  // samples_ns, so compare can test a change against the samples themselves.
  std::vector<int64_t> samples_ns;
};
Stats summarize(std::vector<int64_t> samples_ns);

// "64K" = 65536, "1M", "2G", "1024"; binary suffixes as in nccl-tests. Throws InputError.
int64_t parse_size(std::string_view text);
// begin, begin*factor, ... up to end inclusive (nccl-tests' -b/-e/-f).
std::vector<int64_t> size_sweep(int64_t begin, int64_t end, int64_t factor);

// nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): busbw = algbw * factor.
double bus_factor(std::string_view op, int ranks);
// all_reduce all_gather reduce_scatter broadcast reduce all_to_all send_recv: the names the
// store, the estimator and every output use.
const std::vector<std::string>& collective_ops();
// A collective's name as collective_ops() spells it; nccl-tests' short forms are aliases:
// "alltoall" -> "all_to_all", "sendrecv" -> "send_recv". Other names come back unchanged.
std::string canonical_collective(std::string_view op);

struct Timing {
  int warmup = 5;
  int iterations = 20;
  double time_budget_s = 0;  // > 0: iterations chosen to fill this budget per measurement
};

// Called between measurements (never while timing) with a short note for stderr.
using Progress = std::function<void(const std::string&)>;

// Stopping a benchmark early (Ctrl-C): request_stop() is async-signal-safe. Every benchmark
// looks before each measurement (all ranks of a collective agree, so none waits alone) and
// returns what it measured, with interrupted set; nothing measured is dropped.
void request_stop();
bool stop_requested();
// How far a benchmark got: set by every bench_* entry point.
struct Completion {
  bool interrupted = false;
  size_t planned = 0;  // measurements the benchmark would have made
};
// One finished measurement, as the store holds it (its device and its one row), with the rank
// that made it (0 outside MPI) and the job's ranks.
struct Finished {
  const db::Measurements& rows;
  int rank = 0, ranks = 1;
};
// Called after every finished measurement, between measurements (never while timing), so that
// a caller can store each at once: a process killed later (a launcher's SIGKILL after its
// SIGTERM, a lost node) has kept everything it finished. An exception it throws ends the
// benchmark; a collective's caller should request_stop() instead, so all ranks stop together.
using Checkpoint = std::function<void(const Finished&)>;
// Called once, from a watchdog thread, when a collective hangs; the process aborts after it.
using TimeoutHandler = std::function<void(const std::string&)>;

// ---------------------------------------------------------------- GEMM
struct GemmShapeSpec {
  std::string name;  // "qkv.dgrad" from --shapes-from, or "MxNxK"
  int64_t m = 0, n = 0, k = 0, batch = 1;
};
struct GemmOptions {
  std::string device = "cpu";  // cpu | cuda
  int gpu = 0;
  std::string dtype = "fp32";  // fp32 bf16 (cpu); fp32 tf32 bf16 fp16 fp8 (cuda)
  std::vector<GemmShapeSpec> shapes;
  Timing timing;
  int threads = 0;                // cpu: BLAS threads; 0 = all
  bool compare_baseline = false;  // also time a plain BLAS loop of the same shape
  Checkpoint checkpoint;
};
struct GemmResult {
  GemmShapeSpec shape;
  std::string dtype;
  Stats stats;
  double tflops = 0;               // 2*m*n*k*batch / median
  int64_t checked = 0, wrong = 0;  // sampled output elements checked / outside tolerance
  std::optional<double> baseline_tflops;
};
struct GemmReport : Completion {
  db::DeviceRecord device;
  std::vector<GemmResult> results;
  std::string binding;  // cpu: the CPUs BLAS's own threads may run on (it places them)
};
GemmReport bench_gemm(const GemmOptions&, const Progress& = {});

// ---------------------------------------------------------------- memory
struct MemoryOptions {
  std::string device = "cpu";
  int gpu = 0;
  // cpu: copy read write; cuda: copy_d2d copy_h2d copy_d2h memset read write
  std::vector<std::string> kinds;
  std::vector<int64_t> sizes;
  Timing timing;
  int threads = 0;
  std::string cpus;               // cpu: where threads run: "" all, "none", "0-7", "numa:0"
  bool compare_baseline = false;  // cpu: also time a plain multi-threaded loop of each kind
  Checkpoint checkpoint;
};
struct MemoryResult {
  std::string kind;
  int64_t bytes = 0;
  Stats stats;
  double bandwidth_gbps = 0;  // bytes / median, 1e9 B/s
  int64_t wrong = 0;
  // What moved the bytes: cpu copy "memcpy" or "stream" (streaming stores), write "memset" or
  // "stream", read "sum4"; cuda "cudaMemcpyAsync", "cudaMemsetAsync", "read_pass", "write_pass".
  std::string kernel;
  // --compare-baseline: a plain multi-threaded loop of the same size (cpu copy: memcpy; read:
  // one running sum; write: a store loop), GB/s.
  std::optional<double> baseline_gbps;
};
struct MemoryReport : Completion {
  db::DeviceRecord device;
  std::vector<MemoryResult> results;
  std::string binding;  // cpu: "2 threads bound to CPUs 0-1 (NUMA node 0)"
};
MemoryReport bench_memory(const MemoryOptions&, const Progress& = {});
std::vector<std::string> memory_kinds(std::string_view device);

// ---------------------------------------------------------------- embedding bags
// One embedding-bag configuration: a table of `rows` x `dim`, `batch` bags of `pooling`
// lookups on average (a fractional mean alternates the bag sizes around it), rows drawn
// uniformly or Zipf-skewed with exponent `zipf` (rank r with weight r^-zipf, ranks scattered
// over the rows), or by a histogram of (share of rows, share of lookups) buckets, hottest
// first, rows alike within a bucket.
struct EmbeddingShape {
  int64_t rows = 0;
  int64_t dim = 0;
  double pooling = 1;
  int64_t batch = 0;
  double zipf = 0;
  std::vector<std::pair<double, double>> histogram;
};
struct EmbeddingOptions {
  std::string device = "cpu";  // cpu | cuda
  int gpu = 0;
  std::string dtype = "fp32";  // the weights: fp32 | fp16 (sums and gradients in fp32)
  // The backward's sparse update: rowwise_adagrad (one fp32 of state per row) | sgd.
  std::string optimizer = "rowwise_adagrad";
  std::vector<EmbeddingShape> shapes;
  std::vector<std::string> passes = {"forward", "backward"};
  Timing timing;
  int threads = 0;    // cpu: worker threads; 0 = all
  std::string cpus;   // cpu: where threads run, as MemoryOptions::cpus
  uint64_t seed = 1;  // the indices drawn
  Checkpoint checkpoint;
};
struct EmbeddingResult {
  EmbeddingShape shape;
  std::string pass;  // forward: pooled gather; backward: gradient scatter and sparse update
  std::string dtype, optimizer;
  Stats stats;
  double lookups_per_s = 0;  // batch x pooling / median
  int64_t wrong = 0;
};
struct EmbeddingReport : Completion {
  db::DeviceRecord device;
  std::vector<EmbeddingResult> results;
  std::string binding;  // cpu: where the threads ran, as MemoryReport::binding
};
EmbeddingReport bench_embedding(const EmbeddingOptions&, const Progress& = {});

// ---------------------------------------------------------------- collectives and p2p
struct CollectiveOptions {
  std::string backend = "mpi";  // mpi | nccl
  std::vector<std::string> ops;
  std::vector<int64_t> sizes;
  std::string dtype = "float";
  std::string redop = "sum";
  int root = 0;
  bool in_place = false;
  Timing timing;
  int gpus = 0;               // nccl: one process drives this many local GPUs; 0 = one per rank
  double timeout_s = 300;     // one size point (warm-up + iterations) longer than this aborts
  int debug_stall_rank = -1;  // tests only: this rank sleeps past the timeout
  TimeoutHandler on_timeout;
  Checkpoint checkpoint;
};
struct CollectiveResult {
  std::string op;  // all_reduce, all_to_all, send_recv, ... (collective_ops())
  std::string dtype, redop;
  int root = -1;
  int64_t bytes = 0, elements = 0;
  bool in_place = false;
  Stats stats;  // the slowest rank's time of each iteration
  double algbw_gbps = 0, busbw_gbps = 0;
  int64_t wrong = 0;
};
struct CollectiveReport : Completion {
  int rank = 0, ranks = 1, nodes = 1;
  std::string fabric_level = "intra_node";
  std::string library_version;  // "Open MPI v4.1.4" or "nccl 2.27.7"
  db::DeviceRecord device;
  std::vector<CollectiveResult> results;
};
CollectiveReport bench_collective(const CollectiveOptions&, const Progress& = {});

struct P2pResult {
  int from = 0, to = 1;
  std::string fabric_level;
  int64_t bytes = 0;
  Stats stats;  // one-way time: half a ping-pong round trip
  double bandwidth_gbps = 0, latency_us = 0;
  int64_t wrong = 0;
};
struct P2pReport : Completion {
  int rank = 0, ranks = 1, nodes = 1;
  std::string library_version;
  db::DeviceRecord device;
  std::vector<P2pResult> results;
};
// Rank 0 exchanges with every other rank in turn.
P2pReport bench_p2p(const CollectiveOptions&, const Progress& = {});

// ---------------------------------------------------------------- devices
struct GpuInfo {
  int index = 0;
  std::string name, uuid, pci_bus, compute_capability;
  int64_t memory_bytes = 0;
  int sms = 0;
  int64_t sm_clock_khz = 0, memory_clock_khz = 0;
};
struct DeviceList {
  HostInfo host;
  std::vector<GpuInfo> gpus;
  std::string gpu_status;  // why there are no GPUs; empty when some were found
  std::string driver_version, runtime_version, nccl_version;
};
DeviceList list_devices();
db::DeviceRecord host_device_record();

// ---------------------------------------------------------------- into the store
// Adds the report's device (once) and rows to m.
void append(db::Measurements& m, const GemmReport&);
void append(db::Measurements& m, const MemoryReport&);
void append(db::Measurements& m, const CollectiveReport&);
void append(db::Measurements& m, const P2pReport&);
void append(db::Measurements& m, const EmbeddingReport&);
// "openblas=0.3.21 mpi=Open MPI v4.1.4 cuda=13.0 nccl=2.27.7", what this binary was built with.
std::string library_versions();

}  // namespace bench
}  // namespace shardcost
