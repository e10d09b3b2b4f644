// The store on real files in a temporary folder: write, read back, merge, versions, damage.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "schema.h"
#include "shardcost/db.h"
#include "shardcost/error.h"
#include "shardcost/importers.h"
#include "sqlite.h"
#include "temp_dir_test.h"

namespace shardcost::db {
namespace {

namespace fs = std::filesystem;

using StoreTest = TempDirTest;

Measurements sample(const std::string& uuid, int events = 10) {
  Measurements m;
  m.run.tool = "test";
  m.run.uuid = uuid;
  DeviceRecord d;
  d.name = "NVIDIA A100-SXM4-80GB";
  d.host = "h1";
  d.index = 0;
  m.devices.push_back(d);
  m.gemms.push_back({0, "bf16", 4096, 4096, 4096, 1, 700000, 690000, 720000, 50, {}});
  m.memory.push_back({0, "copy_d2d", 1 << 30, 650000000, std::nullopt, std::nullopt, 10, {}});
  CollectiveRecord c;
  c.op = "all_reduce";
  c.dtype = "float";
  c.redop = "sum";
  c.bytes = 1 << 20;
  c.elements = 1 << 18;
  c.ranks = 8;
  c.fabric_level = "intra_node";
  c.time_ns = 20000;
  c.wrong_elements = 0;
  m.collectives.push_back(c);
  m.embeddings.push_back({0,
                          "backward",
                          "fp32",
                          "rowwise_adagrad",
                          1000000,
                          128,
                          4096,
                          2.5,
                          1.05,
                          900000,
                          880000,
                          950000,
                          20,
                          {899000, 901000}});
  m.names = {"gemm_kernel", "nccl_kernel"};
  for (int i = 0; i < events; ++i)
    m.kernels.push_back({0,
                         7,
                         EventKind::kernel,
                         i % 2,
                         1000 * i,
                         500,
                         0,
                         {i % 2 ? 8 : 132, 1, 1, i % 2 ? 512 : 256, 1, 1}});
  return m;
}

int64_t count(const StoreInfo& info, const std::string& table) {
  for (const auto& c : info.counts)
    if (c.table == table) return c.rows;
  return -1;
}

TEST_F(StoreTest, WritesAndReadsBack) {
  Store s = Store::open(file("a.db"), Store::Mode::read_write);
  const WriteResult r = s.write(sample("u1", 25), 7);
  EXPECT_FALSE(r.duplicate);
  EXPECT_EQ(r.rows, 29);
  const StoreInfo info = s.info();
  EXPECT_EQ(info.schema_version, kSchemaVersion);
  ASSERT_EQ(info.runs.size(), 1u);
  EXPECT_EQ(info.runs[0].status, "completed");
  EXPECT_EQ(count(info, "kernel_event"), 25);
  EXPECT_EQ(count(info, "string"), 2);
  const CostTable t = s.table("collective");
  ASSERT_EQ(t.rows.size(), 1u);
  const auto busbw = std::get<double>(t.rows[0][t.columns.size() - 1]);
  EXPECT_NEAR(busbw, (1 << 20) / 20000.0 * 2 * 7 / 8, 1e-9);
  EXPECT_TRUE(s.write(sample("u1")).duplicate);
  EXPECT_TRUE(s.check().ok);
}

TEST_F(StoreTest, FiltersAndUnknownTables) {
  Store s = Store::open(file("a.db"), Store::Mode::read_write);
  s.write(sample("u1"));
  EXPECT_EQ(s.table("collective", {"a100", "all_reduce"}).rows.size(), 1u);
  EXPECT_EQ(s.table("collective", {"h100", ""}).rows.size(), 0u);
  EXPECT_EQ(s.table("kernels", {"", "memcpy"}).rows.size(), 0u);
  EXPECT_EQ(s.table("kernels", {"", "kernel"}).rows.size(), 10u);
  EXPECT_THROW(s.table("nope"), InputError);
  EXPECT_THROW(s.table("gemm", {"", "all_reduce"}), InputError);
}

TEST_F(StoreTest, CsvRoundTripGivesTheSameRows) {
  Store a = Store::open(file("a.db"), Store::Mode::read_write);
  a.write(sample("u1"));
  Store b = Store::open(file("b.db"), Store::Mode::read_write);
  for (const char* table : {"gemm", "memory", "collective", "embedding", "kernels"}) {
    const std::string csv = to_csv(a.table(table));
    b.write(import_cost_csv(csv, table));
    EXPECT_EQ(to_csv(b.table(table)), csv) << table;
  }
}

// The exports of one run, read into another store, are one run again: the second table joins
// the run the first made, and nothing is imported twice.
TEST_F(StoreTest, ExportsOfOneRunJoinItInAnotherStore) {
  Store a = Store::open(file("a.db"), Store::Mode::read_write);
  a.write(sample("u1"));
  const CostTable gemm = a.table("gemm");
  ASSERT_EQ(gemm.columns.at(0), "run_id");
  ASSERT_EQ(gemm.columns.at(1), "run_uuid");
  EXPECT_EQ(gemm.rows.at(0).at(1), Cell(std::string("u1")));
  EXPECT_EQ(a.table("runs").columns.at(1), "run_uuid");

  Store b = Store::open(file("b.db"), Store::Mode::read_write);
  const WriteResult first = b.write(import_cost_csv(to_csv(gemm), "gemm.csv"));
  EXPECT_FALSE(first.extended);
  const WriteResult second = b.write(import_cost_csv(to_csv(a.table("memory")), "memory.csv"));
  EXPECT_TRUE(second.extended);
  EXPECT_EQ(second.run_id, first.run_id);
  EXPECT_TRUE(b.write(import_cost_csv(to_csv(gemm), "gemm.csv")).duplicate);
  const StoreInfo info = b.info();
  ASSERT_EQ(info.runs.size(), 1u);
  EXPECT_EQ(info.runs[0].uuid, "u1");
  EXPECT_EQ(count(info, "gemm"), 1);
  EXPECT_EQ(count(info, "memory"), 1);
  // Back into the store it came from: that run holds these rows already.
  EXPECT_TRUE(a.write(import_cost_csv(to_csv(gemm), "gemm.csv")).duplicate);
  EXPECT_EQ(count(a.info(), "gemm"), 1);

  // A run left unfinished is not joined: its rows may be partial.
  { Connection(file("b.db"), false).exec("UPDATE run SET status = 'running'"); }
  EXPECT_THROW(b.write(import_cost_csv(to_csv(a.table("collective")), "c.csv")), InputError);
}

TEST_F(StoreTest, CsvRowsAreGroupedByTheirRun) {
  const std::string csv =
      "run_uuid,device,dtype,m,n,k,time_ns\n"
      "r1,A,bf16,1,1,1,10\n"
      "r2,A,bf16,2,2,2,20\n"
      "r1,B,bf16,3,3,3,30\n";
  const std::vector<Measurements> runs = import_cost_csv_runs(csv, "x.csv");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].run.uuid, "r1");
  EXPECT_EQ(runs[0].gemms.size(), 2u);
  EXPECT_EQ(runs[0].devices.size(), 2u);
  EXPECT_TRUE(runs[0].adds_to_run);
  EXPECT_EQ(runs[1].run.uuid, "r2");
  EXPECT_THROW(import_cost_csv(csv, "x.csv"), InputError);
  // No run_uuid: one run named by the content, imported once.
  const Measurements plain = import_cost_csv("device,dtype,m,n,k,time_ns\nA,bf16,1,1,1,10\n", "y");
  EXPECT_FALSE(plain.adds_to_run);
  EXPECT_EQ(plain.run.uuid.rfind("import-csv-", 0), 0u);
}

// A benchmark stores each measurement as it finishes: the first starts the run, the next join
// it whole (even one equal to a row it holds: a second round of the same size), and the run's
// end time follows the last.
TEST_F(StoreTest, AppendsGrowARunOneMeasurementAtATime) {
  Store s = Store::open(file("a.db"), Store::Mode::read_write);
  Measurements one;
  one.run.tool = "shardcost";
  one.run.uuid = "bench-1";
  one.run.start_time_ns = 100;
  one.run.end_time_ns = 200;
  one.appends = true;
  one.devices.push_back(sample("x").devices.at(0));
  one.gemms.push_back({0, "bf16", 64, 64, 64, 1, 700, 690, 720, 5, {}});
  const WriteResult first = s.write(one);
  EXPECT_FALSE(first.extended);
  EXPECT_EQ(first.rows, 1);
  one.run.end_time_ns = 300;
  const WriteResult second = s.write(one);
  EXPECT_TRUE(second.extended);
  EXPECT_FALSE(second.duplicate);
  EXPECT_EQ(second.run_id, first.run_id);
  const StoreInfo info = s.info();
  ASSERT_EQ(info.runs.size(), 1u);
  EXPECT_EQ(info.runs[0].status, "completed");
  EXPECT_EQ(info.runs[0].end_time_ns, 300);
  EXPECT_EQ(count(info, "gemm"), 2);
  EXPECT_EQ(info.devices.size(), 1u);
  EXPECT_TRUE(s.check().ok);
}

// A run's tables split over two stores come together in a merge.
TEST_F(StoreTest, MergeGivesAPresentRunTheTablesItLacks) {
  {
    Store a = Store::open(file("a.db"), Store::Mode::read_write);
    a.write(sample("u1"));
    Store g = Store::open(file("g.db"), Store::Mode::read_write);
    g.write(import_cost_csv(to_csv(a.table("gemm")), "gemm.csv"));
    Store x = Store::open(file("x.db"), Store::Mode::read_write);
    x.write(import_cost_csv(to_csv(a.table("memory")), "memory.csv"));
  }
  Store out = Store::open(file("out.db"), Store::Mode::read_write);
  EXPECT_EQ(out.merge_from(file("g.db")).runs_added, 1);
  const MergeResult m = out.merge_from(file("x.db"));
  EXPECT_EQ(m.runs_added, 0);
  EXPECT_EQ(m.runs_extended, 1);
  EXPECT_EQ(m.rows_added, 1);
  const MergeResult again = out.merge_from(file("x.db"));
  EXPECT_EQ(again.runs_extended, 0);
  EXPECT_EQ(again.runs_skipped, 1);
  EXPECT_EQ(again.rows_added, 0);
  const StoreInfo info = out.info();
  EXPECT_EQ(info.runs.size(), 1u);
  EXPECT_EQ(count(info, "gemm"), 1);
  EXPECT_EQ(count(info, "memory"), 1);
}

// A benchmark's CSV is the export of its records: the same columns, the same rows.
TEST_F(StoreTest, ExportTableLaysRecordsOutAsTheStoreExportsThem) {
  Measurements m = sample("u9");
  Store s = Store::open(file("s.db"), Store::Mode::read_write);
  const int64_t id = s.write(m).run_id;
  for (const char* table : {"gemm", "memory", "collective", "embedding", "kernels"})
    EXPECT_EQ(to_csv(export_table(m, table, id)), to_csv(s.table(table))) << table;
  const CostTable unstored = export_table(m, "gemm");
  EXPECT_EQ(unstored.rows.at(0).at(0), Cell());
  EXPECT_EQ(unstored.rows.at(0).at(1), Cell(std::string("u9")));
}

TEST_F(StoreTest, MergeTwiceAddsNothing) {
  {
    Store a = Store::open(file("a.db"), Store::Mode::read_write);
    a.write(sample("u1"));
    Store b = Store::open(file("b.db"), Store::Mode::read_write);
    b.write(sample("u2"));
  }
  Store out = Store::open(file("out.db"), Store::Mode::read_write);
  EXPECT_EQ(out.merge_from(file("a.db")).runs_added, 1);
  const MergeResult second = out.merge_from(file("b.db"));
  EXPECT_EQ(second.runs_added, 1);
  EXPECT_EQ(second.rows_added, 14);
  const MergeResult again = out.merge_from(file("a.db"));
  EXPECT_EQ(again.runs_added, 0);
  EXPECT_EQ(again.runs_skipped, 1);
  const StoreInfo info = out.info();
  EXPECT_EQ(count(info, "kernel_event"), 20);
  EXPECT_EQ(count(info, "device"), 1);  // same fingerprint in both files
  EXPECT_EQ(count(info, "string"), 2);
  const CostTable kernels = out.table("kernels");
  EXPECT_EQ(kernels.rows[0][7], Cell(std::string("gemm_kernel")));
  EXPECT_EQ(kernels.columns.at(11), "grid_x_blocks");
  EXPECT_EQ(kernels.rows[1][11], Cell(int64_t{8}));  // launch configurations survive the merge
  EXPECT_EQ(kernels.rows[1][14], Cell(int64_t{512}));
  EXPECT_EQ(count(info, "launch_config"), 2);
  EXPECT_TRUE(out.check().ok);
  EXPECT_THROW(out.merge_from(file("out.db")), InputError);
}

TEST_F(StoreTest, MigratesAnOlderFileForward) {
  {
    Connection c(file("v1.db"), false);
    migrate(c, 0, 1);
  }
  EXPECT_THROW(Store::open(file("v1.db"), Store::Mode::read_write), InputError);
  Store s = Store::open(file("v1.db"), Store::Mode::migrate);
  EXPECT_EQ(s.migrate(), 1);
  EXPECT_EQ(s.info().schema_version, kSchemaVersion);
  EXPECT_TRUE(s.check().ok);
}

TEST_F(StoreTest, RefusesNewerSchemaNonSqliteAndTruncatedFiles) {
  {
    Store s = Store::open(file("new.db"), Store::Mode::read_write);
    s.write(sample("u1", 20000));
  }
  {
    Connection c(file("new.db"), false);
    c.exec("PRAGMA user_version = 99");
  }
  try {
    Store::open(file("new.db"), Store::Mode::read_only);
    FAIL() << "opened a newer schema";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
  }
  std::ofstream(file("text.db")) << "this is not a database, it is a long enough line of text\n";
  EXPECT_THROW(Store::open(file("text.db"), Store::Mode::read_only), InputError);
  EXPECT_THROW(Store::open(file("missing.db"), Store::Mode::read_only), InputError);
}

TEST_F(StoreTest, KilledWritesKeepCommittedBatches) {
  // A failed write (here: a record naming a device that does not exist) rolls back only its
  // open batch; batches committed before it stay, and the run stays 'running'.
  Store s = Store::open(file("a.db"), Store::Mode::read_write);
  Measurements m = sample("u1", 100);
  m.kernels[55].device = 3;
  EXPECT_THROW(s.write(m, 10), Error);
  const StoreInfo info = s.info();
  EXPECT_EQ(count(info, "kernel_event"), 46);  // 4 earlier rows + 46 events = 5 batches of 10
  EXPECT_EQ(info.runs.at(0).status, "running");
  EXPECT_EQ(s.check().incomplete_runs, 1);
  EXPECT_TRUE(s.check().ok);
}

}  // namespace
}  // namespace shardcost::db

namespace shardcost::db {
namespace {

TEST_F(StoreTest, StepsAreWrittenReadAndMerged) {
  {
    Store a = Store::open(file("a.db"), Store::Mode::read_write);
    Measurements m = sample("u1", 2);
    m.run.source = "train.json";
    m.steps = {
        {10, 1000, 98000000}, {11, 99000000, 101500000}, {12, 200000000, 0}};  // the last: no span
    const WriteResult r = a.write(m);
    EXPECT_EQ(r.rows, 4 + 2 + 3);
    const auto steps = a.step_points();
    ASSERT_EQ(steps.size(), 2u);  // spans without a duration are not steps
    EXPECT_EQ(steps[0].number, 10);
    EXPECT_EQ(steps[1].duration_ns, 101500000);
    EXPECT_EQ(steps[0].source, "train.json");
    EXPECT_EQ(steps[0].run_uuid, "u1");
  }
  Store out = Store::open(file("out.db"), Store::Mode::read_write);
  out.merge_from(file("a.db"));
  EXPECT_EQ(out.step_points().size(), 2u);
  EXPECT_EQ(count(out.info(), "step"), 3);
  EXPECT_TRUE(out.check().ok);
}

}  // namespace
}  // namespace shardcost::db

namespace shardcost::db {
namespace {

// Paths that cannot be a store get one line saying what they are, before SQLite turns "" into
// a temporary database or calls a directory a disk I/O error.
TEST_F(StoreTest, PathsThatCannotBeAStoreSayWhatTheyAre) {
  auto error = [](const std::string& path) {
    try {
      Store::open(path, Store::Mode::read_write);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("opened");
  };
  EXPECT_EQ(error(""), "the store path is empty; name a file with --db FILE");
  EXPECT_EQ(error(dir_.string()),
            dir_.string() + " is a directory, not a store file; name a file with --db");
  EXPECT_NE(error("/dev/null").find("is not a regular file"), std::string::npos);
  // And an input file that is a directory or missing, for every importer.
  EXPECT_THROW(read_input_file(dir_.string()), InputError);
  try {
    read_input_file(file("missing.txt"));
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.txt: no such file"), std::string::npos);
  }
  EXPECT_THROW(import_kineto_file(dir_.string()), InputError);
}

}  // namespace
}  // namespace shardcost::db

namespace shardcost::db {
namespace {

// A run left unfinished (an import killed mid-write) is replaced when the same content is
// written again, never "already imported"; a finished one is a duplicate; delete_run removes a
// run and its rows.
TEST_F(StoreTest, AnUnfinishedRunIsReplacedAndARunCanBeDeleted) {
  Measurements m;
  m.run.uuid = "import-kineto-test";
  DeviceRecord d;
  d.name = "GPU";
  m.devices.push_back(d);
  m.names = {"k"};
  for (int i = 0; i < 10; ++i) m.kernels.push_back({0, 7, EventKind::kernel, 0, i * 10, 5, 0, {}});
  {
    auto store = Store::open(file("s.db"), Store::Mode::read_write);
    EXPECT_FALSE(store.write(m).duplicate);
  }
  {  // As a killed import leaves it: the run still 'running', half its rows.
    Connection c(file("s.db"), false);
    c.exec("UPDATE run SET status = 'running'");
    c.exec("DELETE FROM kernel_event WHERE start_ns >= 50");
  }
  auto store = Store::open(file("s.db"), Store::Mode::read_write);
  const WriteResult again = store.write(m);
  EXPECT_FALSE(again.duplicate);
  EXPECT_TRUE(again.replaced);
  EXPECT_EQ(again.rows, 10);
  EXPECT_EQ(store.info().runs.size(), 1u);
  const WriteResult third = store.write(m);
  EXPECT_TRUE(third.duplicate);
  EXPECT_EQ(store.delete_run("import-kineto-test"), 10 + 1);  // its events and its device link
  EXPECT_TRUE(store.info().runs.empty());
  EXPECT_THROW(store.delete_run("import-kineto-test"), InputError);
}

}  // namespace
}  // namespace shardcost::db

namespace shardcost::db {
namespace {

// schedule --db: one schedule per run, its jobs by start; removed and merged with its run.
TEST_F(StoreTest, JobSchedulesAreWrittenReadRemovedAndMerged) {
  Measurements m;
  m.run.uuid = "sched-1";
  m.run.tool = "shardcost";
  JobScheduleRecord r;
  r.cluster = "dgx-h100";
  r.gpus = 64;
  r.objective = "makespan";
  r.solver = "list scheduling";
  r.makespan_ns = 7200000000000;
  r.bound_ns = 7000000000000;
  r.sequential_ns = 9000000000000;
  r.jobs = {{"b", "llama3-8b", 64, 100, 32, 3600000000000, 7200000000000, "tp=1"},
            {"a", "gpt3-1.3b", 32, 200, 32, 0, 3600000000000, "tp=2"}};
  m.schedule = r;
  {
    Store a = Store::open(file("a.db"), Store::Mode::read_write);
    EXPECT_EQ(a.write(m).rows, 3);
    const auto back = a.job_schedules();
    ASSERT_EQ(back.size(), 1u);
    EXPECT_EQ(back[0].run_uuid, "sched-1");
    EXPECT_FALSE(back[0].even_split_ns.has_value());
    ASSERT_EQ(back[0].jobs.size(), 2u);
    EXPECT_EQ(back[0].jobs[0].name, "a");  // by start
    EXPECT_EQ(back[0].jobs[1].end_ns, 7200000000000);
    EXPECT_TRUE(a.check().ok);
  }
  Store out = Store::open(file("out.db"), Store::Mode::read_write);
  out.merge_from(file("a.db"));
  ASSERT_EQ(out.job_schedules().size(), 1u);
  EXPECT_EQ(count(out.info(), "scheduled_job"), 2);
  out.merge_from(file("a.db"));  // again: nothing twice
  EXPECT_EQ(count(out.info(), "scheduled_job"), 2);
  EXPECT_EQ(out.delete_run("sched-1"), 3);
  EXPECT_TRUE(out.job_schedules().empty());
  EXPECT_TRUE(out.check().ok);
}

}  // namespace
}  // namespace shardcost::db

namespace shardcost::db {
namespace {

// Embedding-bag passes (schema 7): written, read back as the points fit uses, filtered by
// pass, removed with their run and merged once.
TEST_F(StoreTest, EmbeddingPassesAreKeptWithTheirRun) {
  Store a = Store::open(file("a.db"), Store::Mode::read_write);
  const int64_t run = a.write(sample("u1")).run_id;
  const auto points = a.embedding_points();
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].pass, "backward");
  EXPECT_EQ(points[0].optimizer, "rowwise_adagrad");
  EXPECT_EQ(points[0].rows, 1000000);
  EXPECT_DOUBLE_EQ(points[0].pooling, 2.5);
  EXPECT_DOUBLE_EQ(points[0].zipf, 1.05);
  EXPECT_EQ(a.table("embedding", {"", "forward"}).rows.size(), 0u);
  EXPECT_EQ(a.table("embedding", {"", "backward"}).rows.size(), 1u);
  Store b = Store::open(file("b.db"), Store::Mode::read_write);
  b.merge_from(a.path());
  b.merge_from(a.path());
  EXPECT_EQ(b.embedding_points().size(), 1u);
  a.delete_run(std::to_string(run));
  EXPECT_TRUE(a.embedding_points().empty());
  EXPECT_THROW(
      (void)import_cost_csv("device,pass,rows,dim,pooling,batch,time_ns\nx,sideways,10,8,1,4,100\n",
                            "e.csv"),
      InputError);
  EXPECT_THROW(
      (void)import_cost_csv(
          "device,pass,rows,dim,pooling,batch,time_ns\nx,forward,10,8,many,4,100\n", "e.csv"),
      InputError);
}

}  // namespace
}  // namespace shardcost::db

namespace shardcost::db {
namespace {

Measurements measured_run(const std::string& uuid, int64_t step_ns) {
  Measurements m;
  m.run.tool = "test";
  m.run.uuid = uuid;
  MeasuredStepRecord r;
  r.label = "llama 8b, 8 GPUs";
  r.model_json = R"({"name":"m","layers":2,"hidden":64,"heads":4,"kv_heads":4})";
  r.model_name = "m";
  r.cluster = "dgx-h100";
  r.gpus = 8;
  r.strategy = "tp=1,pp=1,dp=8";
  r.software = "nemo:tp_comm_overlap=false";
  r.device = "h100-sxm5-80gb";
  r.precision = "bf16";
  r.seq_len = 8192;
  r.step_time_ns = step_ns;
  r.step_time_p90_ns = step_ns + 10;
  r.steps = 40;
  r.tokens_per_s = 12345.5;
  r.peak_memory_bytes = 60LL << 30;
  r.source_kind = "csv";
  r.content_hash = "abc";
  m.measured = r;
  return m;
}

// Measured training runs (schema 8): one row per run, written, read back whole, exported
// and imported again as the same run, merged once, removed with their run.
TEST_F(StoreTest, MeasuredRunsRoundTrip) {
  Store a = Store::open(file("a.db"), Store::Mode::read_write);
  a.write(measured_run("m-1", 1'500'000'000));
  Measurements bare = measured_run("m-2", 2'000'000'000);
  bare.measured->tokens_per_s.reset();
  bare.measured->peak_memory_bytes.reset();
  bare.measured->step_time_p90_ns.reset();
  a.write(bare);
  const auto runs = a.measured_steps();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].run_uuid, "m-1");
  EXPECT_EQ(runs[0].record.software, "nemo:tp_comm_overlap=false");
  EXPECT_EQ(runs[0].record.step_time_ns, 1'500'000'000);
  EXPECT_EQ(runs[0].record.step_time_p90_ns, 1'500'000'010);
  EXPECT_FALSE(runs[0].record.step_time_p10_ns);
  EXPECT_DOUBLE_EQ(*runs[0].record.tokens_per_s, 12345.5);
  EXPECT_EQ(*runs[0].record.peak_memory_bytes, 60LL << 30);
  EXPECT_FALSE(runs[1].record.tokens_per_s);
  EXPECT_FALSE(runs[1].record.peak_memory_bytes);
  EXPECT_EQ(a.table("measured", {"h100", ""}).rows.size(), 2u);
  EXPECT_EQ(a.table("measured", {"b200", ""}).rows.size(), 0u);

  // Export, then import into a fresh store: the same runs, the same figures.
  const std::string csv = to_csv(a.table("measured"));
  const auto imported = import_cost_csv_runs(csv, "measured.csv");
  ASSERT_EQ(imported.size(), 2u);
  Store b = Store::open(file("b.db"), Store::Mode::read_write);
  for (const auto& m : imported) EXPECT_FALSE(b.write(m).duplicate);
  for (const auto& m : imported) EXPECT_TRUE(b.write(m).duplicate);
  const auto back = b.measured_steps();
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].run_uuid, "m-1");
  EXPECT_EQ(back[0].record.model_json, runs[0].record.model_json);
  EXPECT_EQ(back[0].record.peak_memory_bytes, runs[0].record.peak_memory_bytes);
  EXPECT_EQ(back[1].record.tokens_per_s, std::nullopt);

  Store c = Store::open(file("c.db"), Store::Mode::read_write);
  c.merge_from(a.path());
  c.merge_from(a.path());
  EXPECT_EQ(c.measured_steps().size(), 2u);
  EXPECT_EQ(c.delete_run("m-1"), 1);
  EXPECT_EQ(c.measured_steps().size(), 1u);
  EXPECT_TRUE(c.check().ok);

  // Rows without a run of their own are a run each, named by their content.
  const std::string header = "model_json,cluster,gpus,strategy,software,step_time_ns\n";
  const auto loose = import_cost_csv_runs(
      header + "\"{}\",dgx-h100,8,tp=8,nemo,100\n\"{}\",dgx-h100,8,tp=4,nemo,100\n", "m.csv");
  ASSERT_EQ(loose.size(), 2u);
  EXPECT_NE(loose[0].run.uuid, loose[1].run.uuid);
  EXPECT_THROW((void)import_cost_csv_runs(header + "\"{}\",dgx-h100,0,tp=8,nemo,100\n", "m.csv"),
               InputError);
  EXPECT_THROW((void)import_cost_csv_runs(header + "\"{}\",dgx-h100,8,tp=8,nemo,-5\n", "m.csv"),
               InputError);
}

// Fitted models of no one device (step calibrations) merge too, and only once.
TEST_F(StoreTest, DevicelessFittedModelsMergeOnce) {
  Store a = Store::open(file("a.db"), Store::Mode::read_write);
  a.put_fitted_model({"step_calibration", "", "h100-sxm5-80gb nemo", "{}", "", 1});
  Store b = Store::open(file("b.db"), Store::Mode::read_write);
  b.merge_from(a.path());
  b.merge_from(a.path());
  ASSERT_EQ(b.fitted_models().size(), 1u);
  EXPECT_EQ(b.fitted_models()[0].key, "h100-sxm5-80gb nemo");
  EXPECT_EQ(b.fitted_models()[0].created_ns, 1);  // a given time is kept
  // No time given: the store stamps when it was saved.
  a.put_fitted_model({"step_calibration", "", "b200 nemo", "{}", "", 0});
  EXPECT_GT(a.fitted_models().back().created_ns, int64_t{1'700'000'000} * 1'000'000'000);
}

}  // namespace
}  // namespace shardcost::db

namespace shardcost::db {
namespace {

// Export streams a row at a time (issue 37, item 2): the same text as the whole table's.
TEST(TableText, RowByRowIsTheWholeTablesText) {
  CostTable t;
  t.columns = {"device", "bytes", "gbps", "note"};
  t.rows.push_back({std::string("A100, \"SXM\""), int64_t{1} << 40, 9.88971, std::monostate{}});
  t.rows.push_back({std::string("x"), int64_t{-3}, 1e-9, std::string("\xff")});
  std::string csv = csv_header(t.columns), json;
  for (const auto& r : t.rows) {
    csv += csv_row(r);
    json += (json.empty() ? "[\n" : ",\n") + json_row(t.columns, r);
  }
  EXPECT_EQ(csv, to_csv(t));
  EXPECT_EQ(json + "\n]\n", to_json(t));
  t.rows.clear();
  EXPECT_EQ(to_json(t), "[]\n");
}

}  // namespace
}  // namespace shardcost::db
