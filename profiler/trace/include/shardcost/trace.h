#pragma once
// shardcost tracing: what the CUPTI injection library recorded, turned into classified events,
// a summary and a Perfetto timeline. Everything here is CUPTI-free; only the injection library
// (inject/injection.cpp) talks to CUPTI.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/db.h"

namespace shardcost::trace {

// ---- Classification ------------------------------------------------------------------------

enum class KernelClass {
  gemm,
  attention,
  communication,
  normalization,
  elementwise,
  reduction,
  copy,
  set,
  sync,
  other
};
std::string_view to_string(KernelClass);

struct Classification {
  KernelClass cls = KernelClass::other;
  std::string collective;  // communication: "all_reduce", "send_recv", ...; else empty
  std::string algorithm;   // communication: "ring", "tree", "nvls", ... where the name says
  std::string protocol;    // communication: "LL", "LL128", "simple" where the name says
  std::string dtype;       // communication: "bf16", "f32", ... where the name says
};

// Table-driven, first match wins; the table lives in classify.cpp and docs/tracing.md.
Classification classify(std::string_view name, db::EventKind kind = db::EventKind::kernel);

// ---- Summary -------------------------------------------------------------------------------

struct ClassTime {
  KernelClass cls;
  int64_t count = 0;
  int64_t time_ns = 0;
};
struct StreamTime {
  int device = 0;  // index into Measurements::devices
  int64_t stream = 0;
  int64_t count = 0;
  int64_t time_ns = 0;
};
struct KernelTime {
  std::string name;
  KernelClass cls;
  int64_t count = 0;
  int64_t time_ns = 0;
};
struct DeviceTime {
  int device = 0;
  int64_t span_ns = 0;                      // first GPU activity start to last end
  int64_t busy_ns = 0;                      // union of kernels, copies and sets
  int64_t communication_ns = 0;             // union of communication kernels
  int64_t overlapped_communication_ns = 0;  // of which compute kernels also ran
};
struct Summary {
  int64_t kernels = 0, copies = 0, sets = 0, syncs = 0;
  int64_t gpu_time_ns = 0;  // sum of kernel, copy and set durations
  int64_t sync_time_ns = 0;
  std::vector<ClassTime> classes;   // by time, descending
  std::vector<StreamTime> streams;  // by device, stream
  std::vector<KernelTime> top;      // by total time, descending
  std::vector<DeviceTime> devices;  // by device
  // Across devices: busy / span and overlapped communication / communication.
  double busy_fraction() const;
  double overlap_fraction() const;  // 0 when there is no communication
};

// top_n: how many kernels to keep in Summary::top.
Summary summarize(const db::Measurements& trace, size_t top_n = 10);

// ---- Perfetto / Chrome trace-event JSON ----------------------------------------------------

// One process per device, one thread per stream, complete ("X") events named by kernel and
// categorised (and coloured) by class. Times are microseconds from the first event.
std::string to_perfetto_json(const db::Measurements& trace);

// ---- Collecting what the injection library wrote --------------------------------------------

struct Collected {
  db::Measurements trace;             // devices, names and events; run left for the caller
  int processes = 0;                  // files read
  int64_t dropped_records = 0;        // reported by CUPTI
  int64_t runtime_calls = 0;          // CUDA runtime API records (kept for correlation only)
  int truncated_files = 0;            // a process ended mid-write (killed): the rest was kept
  int64_t ranges = 0;                 // NVTX ranges closed, the steps among them included
  std::vector<std::string> warnings;  // from the injection library, one per process and kind
};

// Reads every *.sctrace file of dir. NVTX ranges named step_prefix and a step number
// ("ProfilerStep#12") become trace.steps: one per number, from its earliest start in any
// process to its latest end (a data-parallel step ends with its slowest rank). Throws
// InputError on a file that is not a trace file.
Collected collect_directory(const std::string& dir, std::string_view step_prefix = "ProfilerStep#");

// Rebuilds events from an exported kernels table (every run in it; the report's overview).
// One run's events come from db::Store::kernel_events instead.
db::Measurements from_kernel_table(const db::CostTable& kernels);

// ---- Running a command under the injection library -----------------------------------------

struct Launch {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // added to the inherited environment
};
// fork/exec; waits; returns the exit code as a shell reports it (128 + signal when killed).
// Throws InputError when the command cannot be started (not found, not executable).
int run_command(const Launch&);

}  // namespace shardcost::trace
