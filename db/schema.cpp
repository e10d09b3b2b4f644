#include "schema.h"

#include <algorithm>
#include <string>

#include "shardcost/db.h"
#include "shardcost/error.h"

namespace shardcost::db {
namespace {

// Version 1: runs with provenance, devices, interned strings, and the measurement tables.
// Times are integer nanoseconds, sizes integer bytes; rates are derived (see collective_rate).
constexpr std::string_view kVersion1 = R"sql(
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE run (
  id               INTEGER PRIMARY KEY,
  uuid             TEXT NOT NULL UNIQUE,          -- stable identity across merges
  tool             TEXT NOT NULL,                 -- shardcost | nccl-tests | kineto | csv
  tool_version     TEXT NOT NULL DEFAULT '',
  git_revision     TEXT NOT NULL DEFAULT '',
  host             TEXT NOT NULL DEFAULT '',
  command_line     TEXT NOT NULL DEFAULT '',
  start_time_ns    INTEGER,                       -- Unix epoch ns; NULL = unknown
  end_time_ns      INTEGER,
  status           TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
  source           TEXT NOT NULL DEFAULT '',      -- imported file
  recorded_by      TEXT NOT NULL DEFAULT '',      -- the shardcost that wrote the run
  library_versions TEXT NOT NULL DEFAULT ''       -- "nccl=2.21.5 cuda=12.4"
);

CREATE TABLE device (
  id                 INTEGER PRIMARY KEY,
  fingerprint        TEXT NOT NULL UNIQUE,        -- uuid, or host/index/name
  name               TEXT NOT NULL,
  uuid               TEXT NOT NULL DEFAULT '',
  host               TEXT NOT NULL DEFAULT '',
  device_index       INTEGER,
  pci_bus            TEXT NOT NULL DEFAULT '',
  compute_capability TEXT NOT NULL DEFAULT '',
  memory_bytes       INTEGER,
  sm_clock_khz       INTEGER,
  memory_clock_khz   INTEGER,
  sms                INTEGER,
  driver_version     TEXT NOT NULL DEFAULT '',
  cuda_version       TEXT NOT NULL DEFAULT ''
);

CREATE TABLE run_device (
  run_id    INTEGER NOT NULL REFERENCES run(id),
  device_id INTEGER NOT NULL REFERENCES device(id),
  PRIMARY KEY (run_id, device_id)
) WITHOUT ROWID;

CREATE TABLE string (
  id   INTEGER PRIMARY KEY,
  text TEXT NOT NULL UNIQUE
);

CREATE TABLE gemm (
  id          INTEGER PRIMARY KEY,
  run_id      INTEGER NOT NULL REFERENCES run(id),
  device_id   INTEGER NOT NULL REFERENCES device(id),
  dtype       TEXT NOT NULL,
  m           INTEGER NOT NULL,
  n           INTEGER NOT NULL,
  k           INTEGER NOT NULL,
  batch       INTEGER NOT NULL,
  time_ns     INTEGER NOT NULL,                   -- median
  time_p10_ns INTEGER,
  time_p90_ns INTEGER,
  iterations  INTEGER NOT NULL
);

CREATE TABLE memory (
  id          INTEGER PRIMARY KEY,
  run_id      INTEGER NOT NULL REFERENCES run(id),
  device_id   INTEGER NOT NULL REFERENCES device(id),
  kind        TEXT NOT NULL,
  bytes       INTEGER NOT NULL,
  time_ns     INTEGER NOT NULL,
  time_p10_ns INTEGER,
  time_p90_ns INTEGER,
  iterations  INTEGER NOT NULL
);

CREATE TABLE collective (
  id             INTEGER PRIMARY KEY,
  run_id         INTEGER NOT NULL REFERENCES run(id),
  device_id      INTEGER NOT NULL REFERENCES device(id),
  op             TEXT NOT NULL,
  dtype          TEXT NOT NULL,
  redop          TEXT NOT NULL,
  root           INTEGER NOT NULL,
  bytes          INTEGER NOT NULL,
  elements       INTEGER NOT NULL,
  ranks          INTEGER NOT NULL,
  nodes          INTEGER NOT NULL,
  fabric_level   TEXT NOT NULL CHECK (fabric_level IN ('intra_node', 'inter_node')),
  in_place       INTEGER NOT NULL CHECK (in_place IN (0, 1)),
  time_ns        INTEGER NOT NULL,
  time_p10_ns    INTEGER,
  time_p90_ns    INTEGER,
  wrong_elements INTEGER,                         -- #wrong (nccl-tests >= 2.10); NULL: not checked
  max_error      REAL,                            -- older nccl-tests' error column
  iterations     INTEGER NOT NULL
);
CREATE INDEX collective_curve ON collective (op, ranks, fabric_level, bytes);

-- Traced events, kept small: no index, names interned, kind as an integer
-- (0 kernel, 1 memcpy, 2 memset, 3 sync).
CREATE TABLE kernel_event (
  run_id      INTEGER NOT NULL REFERENCES run(id),
  device_id   INTEGER NOT NULL REFERENCES device(id),
  stream      INTEGER NOT NULL,
  kind        INTEGER NOT NULL,
  name_id     INTEGER NOT NULL REFERENCES string(id),
  start_ns    INTEGER NOT NULL,
  duration_ns INTEGER NOT NULL,
  bytes       INTEGER                             -- copies and sets; NULL for kernels
);
)sql";

// Version 2: fitted cost models, and the derived bandwidths as a view.
constexpr std::string_view kVersion2 = R"sql(
CREATE TABLE fitted_model (
  id              INTEGER PRIMARY KEY,
  kind            TEXT NOT NULL,                  -- collective_alpha_beta | gemm_efficiency
  device_id       INTEGER REFERENCES device(id),
  key             TEXT NOT NULL,                  -- "all_reduce/8/intra_node"
  parameters_json TEXT NOT NULL,
  source_runs     TEXT NOT NULL DEFAULT '',       -- uuids of the runs it was fitted to
  created_ns      INTEGER NOT NULL,
  UNIQUE (kind, device_id, key)
);

-- nccl-tests' definitions: algbw = bytes / time; busbw = algbw x 2(n-1)/n for all-reduce,
-- x (n-1)/n for all-gather, reduce-scatter and all-to-all, x 1 otherwise. bytes/ns = GB/s.
CREATE VIEW collective_rate AS
SELECT c.*,
       CAST(c.bytes AS REAL) / c.time_ns AS algbw_gbps,
       CAST(c.bytes AS REAL) / c.time_ns *
         CASE c.op
           WHEN 'all_reduce' THEN 2.0 * (c.ranks - 1) / c.ranks
           WHEN 'all_gather' THEN 1.0 * (c.ranks - 1) / c.ranks
           WHEN 'reduce_scatter' THEN 1.0 * (c.ranks - 1) / c.ranks
           WHEN 'all_to_all' THEN 1.0 * (c.ranks - 1) / c.ranks
           ELSE 1.0
         END AS busbw_gbps
FROM collective c;
)sql";

// Version 3: per-iteration times, so that compare can test a change against the noise with
// the samples themselves. Decimal nanoseconds separated by spaces, in iteration order: any
// SQLite tool shows them and the CSV importer reads the same text. NULL: not recorded.
constexpr std::string_view kVersion3 = R"sql(
ALTER TABLE gemm ADD COLUMN samples_ns TEXT;
ALTER TABLE memory ADD COLUMN samples_ns TEXT;
ALTER TABLE collective ADD COLUMN samples_ns TEXT;
)sql";

// Version 4: kernels' launch configuration, so a traced kernel's cost is keyed by name and
// launch. Interned like names: a trace repeats a few hundred configurations millions of times,
// so an event carries one small id (1-2 bytes) instead of six integers. NULL: not known, or
// not a kernel. Existing events keep NULL.
constexpr std::string_view kVersion4 = R"sql(
CREATE TABLE launch_config (
  id      INTEGER PRIMARY KEY,
  grid_x  INTEGER NOT NULL,                       -- blocks per grid, x y z
  grid_y  INTEGER NOT NULL,
  grid_z  INTEGER NOT NULL,
  block_x INTEGER NOT NULL,                       -- threads per block, x y z
  block_y INTEGER NOT NULL,
  block_z INTEGER NOT NULL,
  UNIQUE (grid_x, grid_y, grid_z, block_x, block_y, block_z)
);
ALTER TABLE kernel_event ADD COLUMN launch_id INTEGER REFERENCES launch_config(id);
)sql";

// Version 5: training steps as a profiler marked them (PyTorch's ProfilerStep#N spans), so a
// run's measured step times can be set beside a predicted distribution.
constexpr std::string_view kVersion5 = R"sql(
CREATE TABLE step (
  run_id      INTEGER NOT NULL REFERENCES run(id),
  number      INTEGER NOT NULL,                   -- the profiler's step number
  start_ns    INTEGER NOT NULL,
  duration_ns INTEGER NOT NULL
);
)sql";

// Version 6: schedules of many training jobs on one cluster (shardcost schedule --db), one
// per run, with the jobs they place; report draws them.
constexpr std::string_view kVersion6 = R"sql(
CREATE TABLE job_schedule (
  run_id        INTEGER PRIMARY KEY REFERENCES run(id),
  cluster       TEXT NOT NULL,
  gpus          INTEGER NOT NULL,
  objective     TEXT NOT NULL CHECK (objective IN ('makespan', 'completion')),
  solver        TEXT NOT NULL,
  optimal       INTEGER NOT NULL,
  makespan_ns   INTEGER NOT NULL,
  bound_ns      INTEGER NOT NULL,
  sequential_ns INTEGER NOT NULL,
  even_split_ns INTEGER                           -- NULL: no even split fits every job
);
CREATE TABLE scheduled_job (
  run_id   INTEGER NOT NULL REFERENCES job_schedule(run_id),
  name     TEXT NOT NULL,
  model    TEXT NOT NULL,
  gbs      INTEGER NOT NULL,
  steps    INTEGER NOT NULL,
  gpus     INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,                      -- from the schedule's start
  end_ns   INTEGER NOT NULL,
  strategy TEXT NOT NULL DEFAULT ''
);
)sql";

// Version 7: embedding-bag passes (shardcost bench embedding), what the embedding planner's
// lookup costs are fitted on. pooling is a mean, so REAL; so is the skew exponent.
constexpr std::string_view kVersion7 = R"sql(
CREATE TABLE embedding (
  id          INTEGER PRIMARY KEY,
  run_id      INTEGER NOT NULL REFERENCES run(id),
  device_id   INTEGER NOT NULL REFERENCES device(id),
  pass        TEXT NOT NULL CHECK (pass IN ('forward', 'backward')),
  dtype       TEXT NOT NULL,                      -- the weights
  optimizer   TEXT NOT NULL,                      -- backward's sparse update; forward: none
  rows        INTEGER NOT NULL,
  dim         INTEGER NOT NULL,
  pooling     REAL NOT NULL,                      -- mean lookups per bag
  batch       INTEGER NOT NULL,                   -- bags
  zipf        REAL NOT NULL,                      -- access skew exponent; 0: uniform
  time_ns     INTEGER NOT NULL,                   -- median
  time_p10_ns INTEGER,
  time_p90_ns INTEGER,
  iterations  INTEGER NOT NULL,
  samples_ns  TEXT
);
)sql";

// Version 8: measured training runs (import runs, and the log importers), one per run, with
// the whole configuration the estimator prices them from and what was measured; fit --table
// step calibrates the estimator on them. Times in ns, memory in bytes; tokens/s is what the
// log printed (REAL). The configuration is JSON or strategy text, read by the estimator.
constexpr std::string_view kVersion8 = R"sql(
CREATE TABLE measured_step (
  run_id            INTEGER PRIMARY KEY REFERENCES run(id),
  label             TEXT NOT NULL DEFAULT '',
  model_json        TEXT NOT NULL,                -- the model, as a model file holds it
  model_name        TEXT NOT NULL,
  cluster           TEXT NOT NULL,                -- catalog system name or cluster JSON
  gpus              INTEGER NOT NULL CHECK (gpus > 0),
  strategy          TEXT NOT NULL,                -- canonical strategy string
  software          TEXT NOT NULL,                -- preset[:key=value,...]
  device            TEXT NOT NULL,                -- catalog device of the GPUs
  precision         TEXT NOT NULL,
  seq_len           INTEGER NOT NULL,
  step_time_ns      INTEGER NOT NULL CHECK (step_time_ns > 0),  -- median
  step_time_p10_ns  INTEGER,
  step_time_p90_ns  INTEGER,
  steps             INTEGER NOT NULL,             -- steps the median is over; 0: not known
  tokens_per_s      REAL,
  peak_memory_bytes INTEGER,                      -- per GPU, the most loaded; NULL: not logged
  source_kind       TEXT NOT NULL,                -- csv | megatron-log | torchtitan-log | ...
  content_hash      TEXT NOT NULL
);
)sql";

}  // namespace

const std::vector<std::string_view>& migrations() {
  static const std::vector<std::string_view> all = {kVersion1, kVersion2, kVersion3, kVersion4,
                                                    kVersion5, kVersion6, kVersion7, kVersion8};
  static_assert(kSchemaVersion == 8, "add the migration for the new version above");
  return all;
}

int schema_version(const Connection& c) {
  Statement s = c.prepare("PRAGMA user_version");
  s.step();
  const int64_t v = s.int64(0);
  // Negative or absurd: not a version any shardcost wrote.
  if (v < 0 || v > 1000)
    throw InputError(c.path() + " has schema version " + std::to_string(v) +
                     ", which no shardcost writes; it is not a shardcost store, or it is damaged");
  return static_cast<int>(v);
}

bool is_empty(const Connection& c) {
  Statement s = c.prepare("SELECT count(*) FROM sqlite_schema");
  s.step();
  return s.int64(0) == 0;
}

void migrate(const Connection& c, int from, int to) {
  // One transaction for the whole chain: another process opening the file meanwhile sees the
  // old version or the new one, never a step in between.
  Transaction t(c);
  // Another process may have migrated (or created) the file since we looked.
  const int now = std::max(from, schema_version(c));
  if (now >= to) return;
  for (int v = now; v < to; ++v) c.exec(migrations().at(static_cast<size_t>(v)));
  // PRAGMA takes no parameters; `to` is an integer of ours, never user input.
  c.exec("PRAGMA user_version = " + std::to_string(to));
  t.commit();
}

}  // namespace shardcost::db
