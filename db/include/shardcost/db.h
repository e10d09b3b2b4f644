#pragma once
// shardcost cost store: one SQLite file of measurements with their provenance.
// Measurements are integers in base units (nanoseconds, bytes, elements); rates are derived.
// Store is the only way into the file; sqlite3 itself stays behind db/.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace shardcost::db {

inline constexpr int kSchemaVersion = 8;

// One benchmark, trace or import: where the figures came from.
struct Run {
  int64_t id = 0;    // assigned by the store
  std::string uuid;  // stable across merges; empty: the store makes one
  std::string tool;  // "shardcost", "nccl-tests", "kineto", "csv"
  std::string tool_version;
  std::string git_revision;
  std::string host;
  std::string command_line;
  int64_t start_time_ns = 0;  // Unix epoch; 0 = unknown
  int64_t end_time_ns = 0;
  std::string status = "running";  // running | completed | failed
  std::string source;              // imported file, or empty
  std::string recorded_by;         // "shardcost 0.1.0 (rev)"
  std::string library_versions;    // "nccl=2.21.5", free text
};

// Called once per store connection that has to wait for another process's write lock, with
// "waiting for F (locked by another writer; up to 30 s)"; the CLI prints it. Empty: silent.
void set_lock_wait_notice(std::function<void(const std::string&)>);

// A random run uuid (8-4-4-4-12 hex), for a run that needs its name before it is stored.
std::string new_run_uuid();

struct DeviceRecord {
  int64_t id = 0;
  std::string name;  // "NVIDIA A100-SXM4-80GB" or the host CPU model
  std::string uuid;  // GPU UUID where known
  std::string host;
  int index = -1;  // device ordinal on the host
  std::string pci_bus;
  std::string compute_capability;  // "8.0"
  int64_t memory_bytes = 0;
  int64_t sm_clock_khz = 0;
  int64_t memory_clock_khz = 0;
  int sms = 0;
  std::string driver_version;
  std::string cuda_version;
};

// Records refer to a device by its index in Measurements::devices.
struct GemmRecord {
  int device = 0;
  std::string dtype;  // "bf16"
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t time_ns = 0;  // median
  std::optional<int64_t> time_p10_ns, time_p90_ns;
  int64_t iterations = 0;
  // Per-iteration times in iteration order (ns); empty: not recorded (schema 3).
  std::vector<int64_t> samples_ns;
};

struct MemoryRecord {
  int device = 0;
  std::string kind;  // copy_d2d | copy_h2d | copy_d2h | memset | elementwise | stream
  int64_t bytes = 0;
  int64_t time_ns = 0;
  std::optional<int64_t> time_p10_ns, time_p90_ns;
  int64_t iterations = 0;
  // Per-iteration times in iteration order (ns); empty: not recorded (schema 3).
  std::vector<int64_t> samples_ns;
};

// One embedding-bag pass over one configuration (shardcost bench embedding; schema 7).
struct EmbeddingRecord {
  int device = 0;
  std::string pass;       // forward (pooled gather) | backward (gradient scatter, sparse update)
  std::string dtype;      // the weights: fp32 | fp16 | bf16
  std::string optimizer;  // the backward's sparse update (rowwise_adagrad | sgd); forward: none
  int64_t rows = 0, dim = 0, batch = 0;  // table rows and columns; bags (samples)
  double pooling = 0;                    // mean lookups per bag
  double zipf = 0;                       // access skew exponent; 0: uniform
  int64_t time_ns = 0;                   // median
  std::optional<int64_t> time_p10_ns, time_p90_ns;
  int64_t iterations = 0;
  std::vector<int64_t> samples_ns;
};

struct CollectiveRecord {
  int device = 0;  // the device of rank 0
  std::string op;  // all_reduce | all_gather | reduce_scatter | all_to_all | broadcast | reduce |
                   // send_recv | ...
  std::string dtype;  // as the tool named it: "float", "bfloat16"
  std::string redop;  // "sum", "none"
  int root = -1;
  int64_t bytes = 0;  // nccl-tests' size column
  int64_t elements = 0;
  int ranks = 0;
  int nodes = 1;
  std::string fabric_level;  // intra_node | inter_node
  bool in_place = false;
  int64_t time_ns = 0;  // nccl-tests: the average over iterations
  std::optional<int64_t> time_p10_ns, time_p90_ns;
  std::optional<int64_t> wrong_elements;  // newer nccl-tests' #wrong; nullopt: not checked
  std::optional<double> max_error;        // older nccl-tests' error column (max deviation)
  int64_t iterations = 0;
  // Per-iteration times in iteration order (ns); empty: not recorded (schema 3).
  std::vector<int64_t> samples_ns;
};

enum class EventKind : int { kernel = 0, memcpy = 1, memset = 2, sync = 3 };
std::string_view to_string(EventKind);

// How a kernel was launched: blocks per grid and threads per block, x y z. All zero: not known
// (copies, sets, syncs, imports that do not say). Stored interned (schema 4's launch_config).
struct LaunchConfig {
  int32_t grid_x = 0, grid_y = 0, grid_z = 0;     // blocks
  int32_t block_x = 0, block_y = 0, block_z = 0;  // threads
  bool known() const {
    return grid_x > 0 && grid_y > 0 && grid_z > 0 && block_x > 0 && block_y > 0 && block_z > 0;
  }
  // Blocks times threads per block; 0 when not known.
  double threads() const {
    return known() ? 1.0 * grid_x * grid_y * grid_z * block_x * block_y * block_z : 0;
  }
  // Spelled out: nvcc compiles this header too, and some versions reject a defaulted ==.
  bool operator==(const LaunchConfig& o) const {
    return grid_x == o.grid_x && grid_y == o.grid_y && grid_z == o.grid_z && block_x == o.block_x &&
           block_y == o.block_y && block_z == o.block_z;
  }
};

// A traced GPU event; name indexes Measurements::names (traces repeat names millions of times).
struct KernelEvent {
  int device = 0;
  int64_t stream = 0;
  EventKind kind = EventKind::kernel;
  int32_t name = 0;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  int64_t bytes = 0;    // copies and sets; 0 for kernels
  LaunchConfig launch;  // kernels; stored only when known()
};

// One training step as a profiler marked it (PyTorch's ProfilerStep#N): its number and span.
struct StepSpan {
  int64_t number = 0;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
};
// The number of a span named prefix<number> ("ProfilerStep#12"), or nothing: how importers and
// traces tell step spans from other ranges.
std::optional<int64_t> step_number(std::string_view name, std::string_view prefix);

// What one run measured or one import read: the unit the store writes.
// A schedule of training jobs on one cluster (shardcost schedule --db): its figures and every
// job it scheduled, start and end in nanoseconds from the schedule's start.
struct ScheduledJobRecord {
  std::string name, model;
  int64_t gbs = 0, steps = 0, gpus = 0;
  int64_t start_ns = 0, end_ns = 0;
  std::string strategy;
};
struct JobScheduleRecord {
  std::string cluster;
  int64_t gpus = 0;
  std::string objective;  // makespan | completion
  std::string solver;
  bool optimal = false;
  int64_t makespan_ns = 0, bound_ns = 0, sequential_ns = 0;
  std::optional<int64_t> even_split_ns;  // none: no even split fits every job
  std::vector<ScheduledJobRecord> jobs;
  std::string run_uuid;  // filled when read back
};

// One measured training run (schema 8): its whole configuration as the estimator reads it, and
// the step times and memory its log or table gave. The configuration is text the estimator
// parses (the store stays below it): the model as a model file's JSON, the cluster as a
// catalog system name or a cluster file's JSON, the canonical strategy string, the software
// as a preset name with its overrides ("nemo:tp_comm_overlap=false").
struct MeasuredStepRecord {
  std::string label;       // the user's name for the run; may be empty
  std::string model_json;  // the model, as a model file holds it
  std::string model_name;  // its name (a catalog name, or the file's "name"): what
                           // leave-one-model-out cross-validation groups by
  std::string cluster;     // catalog system name, or a cluster file's JSON
  int64_t gpus = 0;
  std::string strategy;  // canonical: every key, as `estimate` prints it
  std::string software;  // preset[:key=value,...]
  std::string device;    // the catalog device its GPUs are (the cluster's first group)
  std::string precision;
  int64_t seq_len = 0;
  int64_t step_time_ns = 0;  // median over the steps kept
  std::optional<int64_t> step_time_p10_ns, step_time_p90_ns;
  int64_t steps = 0;  // steps the median is over (after the warm-up); 0: not known
  std::optional<double> tokens_per_s;
  std::optional<int64_t> peak_memory_bytes;  // per GPU, the most loaded; none: not logged
  std::string source_kind;   // csv | megatron-log | torchtitan-log | nemo-log | kineto | table
  std::string content_hash;  // of the content it was read from
};

struct Measurements {
  Run run;
  std::vector<DeviceRecord> devices;
  std::vector<GemmRecord> gemms;
  std::vector<MemoryRecord> memory;
  std::vector<CollectiveRecord> collectives;
  std::vector<EmbeddingRecord> embeddings;
  std::vector<std::string> names;
  std::vector<KernelEvent> kernels;
  std::vector<StepSpan> steps;
  std::optional<JobScheduleRecord> schedule;   // at most one per run
  std::optional<MeasuredStepRecord> measured;  // at most one per run
  // What an importer stored but flags (results its source marked wrong): said, not stored.
  std::vector<std::string> warnings;
  // The rows belong to run.uuid, which may be in the store already (an export of one of its
  // tables, read back): they join it, in one transaction, unless it holds rows of the same
  // tables (then nothing is written: a duplicate). A run's rows of one table come from one
  // source. Otherwise the run is written as a new one.
  bool adds_to_run = false;
  // The rows are the next ones of a run this process is measuring (a benchmark storing each
  // measurement as it finishes): they join run.uuid when the store holds it, without looking
  // for them there, or start it; all in one transaction, and the run's end time becomes
  // run.end_time_ns.
  bool appends = false;
  // The rank that recorded a trace (Kineto's distributedInfo.rank); -1: it names none.
  int trace_rank = -1;
  size_t rows() const {
    return gemms.size() + memory.size() + collectives.size() + embeddings.size() + kernels.size() +
           steps.size() + (schedule ? 1 + schedule->jobs.size() : 0) + (measured ? 1 : 0);
  }
};

// A table of results, cells typed as SQLite returns them.
using Cell = std::variant<std::monostate, int64_t, double, std::string>;
struct CostTable {
  std::string name;
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
};
// The rows of m as `shardcost export --table T` writes them once m is stored: the same
// columns in the same order, so a benchmark's CSV imports as an export does. run_id is the
// id m was stored under, or empty when it was stored nowhere.
CostTable export_table(const Measurements& m, std::string_view table,
                       std::optional<int64_t> run_id = std::nullopt);
std::string to_csv(const CostTable&);
std::string to_json(const CostTable&);  // array of objects, one per row
std::string cell_text(const Cell&);
// The same text a row at a time (export of any size in constant memory): the CSV header and
// a row, each with its newline; a row as the JSON array's element, indented as to_json's.
std::string csv_header(const std::vector<std::string>& columns);
std::string csv_row(const std::vector<Cell>&);
std::string json_row(const std::vector<std::string>& columns, const std::vector<Cell>&);

struct TableFilter {
  std::string device;  // substring of the device name, case-insensitive; empty = all
  std::string op;      // collective op or memory kind; empty = all
};
// gemm | memory | collective | embedding | kernels | measured | runs
std::vector<std::string> table_names();

struct WriteResult {
  int64_t run_id = 0;
  bool duplicate =
      false;              // the run (same uuid) was already in the store, complete; nothing written
  bool replaced = false;  // the same run was there unfinished (a killed import): written anew
  bool extended = false;  // adds_to_run: the rows joined a run the store already held
  int64_t rows = 0;
};

struct TableCount {
  std::string table;
  int64_t rows = 0;
};
struct StoreInfo {
  std::string path;
  int schema_version = 0;
  std::string sqlite_version;
  std::vector<Run> runs;
  std::vector<DeviceRecord> devices;
  std::vector<TableCount> counts;
};

struct CheckResult {
  bool ok = true;
  std::vector<std::string> problems;  // integrity and schema findings
  int64_t incomplete_runs = 0;        // runs still 'running' (killed or in progress)
};

struct MergeResult {
  int64_t runs_added = 0;
  int64_t runs_skipped = 0;   // already present (same uuid) with every table it holds
  int64_t runs_extended = 0;  // present, and given tables it lacked (gemm rows to a memory run)
  int64_t rows_added = 0;
};

// The rows the estimator prices from, joined with their device names.
struct CollectivePoint {
  std::string device;
  std::string op;
  int ranks = 0;
  int nodes = 1;  // hosts the ranks spanned
  std::string fabric_level;
  int64_t bytes = 0;
  int64_t time_ns = 0;
};
struct GemmPoint {
  std::string device;
  std::string dtype;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t time_ns = 0;
};
// Traced kernels, one per device, kernel name and launch configuration: how many ran and
// their mean duration.
struct KernelPoint {
  std::string device;
  std::string name;
  LaunchConfig launch;  // all zero: not known
  int64_t count = 0;
  double mean_ns = 0;
};
// A cost model fitted on the store's rows (shardcost fit): its kind, the stored device it was
// fitted for (empty: pooled over devices), its key (data type, op/ranks/level, ...) and
// everything it needs to predict, as JSON.
struct FittedModelRow {
  std::string kind;    // gemm_efficiency | collective_alpha_beta | ...
  std::string device;  // the device's name as stored; empty: no one device
  std::string key;
  std::string parameters_json;
  std::string source_runs;  // uuids of the runs fitted on
  int64_t created_ns = 0;   // Unix epoch; 0: put_fitted_model stamps the time it is saved
};
// A run's training steps (as a trace marked them), with the run they came from.
struct StepPoint {
  std::string run_uuid;
  std::string source;  // the file or command the run came from
  int64_t number = 0;
  int64_t duration_ns = 0;
};
struct EmbeddingPoint {
  std::string device;
  std::string pass, dtype, optimizer;
  int64_t rows = 0, dim = 0, batch = 0;
  double pooling = 0, zipf = 0;
  int64_t time_ns = 0;
};
struct MemoryPoint {
  std::string device;
  std::string kind;
  int64_t bytes = 0;
  int64_t time_ns = 0;
};

class Connection;

class Store {
 public:
  enum class Mode { read_only, read_write, migrate };
  // read_write creates the file when missing. Throws InputError with the path and the fix when
  // the file is not SQLite, is damaged, or has a schema this binary does not know.
  static Store open(const std::string& path, Mode mode);
  // A store that lives in memory and is gone with the object: for laying out records as the
  // store would (export_table).
  static Store in_memory();
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  // Writes one run and its rows in transactions of batch_rows rows; every committed batch
  // survives a crash. The run is marked completed at the end.
  WriteResult write(const Measurements&, int64_t batch_rows = 50000);
  // Removes a run (by id or uuid) and every row it holds, and the fitted models whose
  // source runs name it (their count in *fitted_models_removed); returns the rows removed. An
  // InputError when there is no such run.
  int64_t delete_run(std::string_view id_or_uuid, int64_t* fitted_models_removed = nullptr);

  StoreInfo info() const;
  CheckResult check() const;
  // Migrates to kSchemaVersion; returns the version the file had.
  int migrate();
  MergeResult merge_from(const std::string& other_path);
  CostTable table(std::string_view name, const TableFilter& = {}) const;
  // The same rows one at a time, for tables too large to hold (export): `columns` once, then
  // `row` for each, its cells valid for the call.
  void each_row(std::string_view name, const TableFilter&,
                const std::function<void(const std::vector<std::string>&)>& columns,
                const std::function<void(const std::vector<Cell>&)>& row) const;
  std::vector<CollectivePoint> collective_points() const;
  std::vector<GemmPoint> gemm_points() const;
  std::vector<MemoryPoint> memory_points() const;
  std::vector<EmbeddingPoint> embedding_points() const;
  std::vector<StepPoint> step_points() const;
  // Every measured training run, oldest first, with the uuid of the run that holds it
  // (MeasuredStep::run_uuid).
  struct MeasuredStep {
    std::string run_uuid;
    MeasuredStepRecord record;
  };
  std::vector<MeasuredStep> measured_steps() const;
  // Every stored job schedule, oldest run first, its jobs by start time.
  std::vector<JobScheduleRecord> job_schedules() const;
  std::vector<KernelPoint> kernel_points() const;
  // Saves a fitted model in place of the one of the same kind, device and key.
  void put_fitted_model(const FittedModelRow&);
  // The uuids of the runs holding rows of `table` (gemm, memory, collective, embedding,
  // kernel_event) on the stored device named `device` (empty: any device), sorted and joined
  // by spaces: what a model fitted on those rows was fitted on (FittedModelRow::source_runs).
  std::string source_runs(std::string_view table, std::string_view device) const;
  std::vector<FittedModelRow> fitted_models() const;
  std::optional<Run> find_run(std::string_view uuid) const;
  // One run's traced events in the order they were written, with the devices they ran on as
  // the store holds them (name, uuid, host, index: two GPUs of one model stay two devices),
  // names and launch configurations. run is filled too. Throws InputError for an unknown id.
  Measurements kernel_events(int64_t run_id) const;

  const std::string& path() const { return path_; }

 private:
  // Of the gemm, memory, collective, embedding and kernel rows m brings for the run `uuid`,
  // how many this store holds already (as export writes them), and how many it brings.
  std::pair<int64_t, int64_t> rows_present(const std::string& uuid, const Measurements& m) const;
  friend class StoreAccess;  // db/store_access.h: db's own files reach the connection
  Store(std::unique_ptr<Connection>, std::string path);
  int64_t remove_run(int64_t id);  // in the caller's transaction
  std::unique_ptr<Connection> conn_;
  std::string path_;
};

}  // namespace shardcost::db
