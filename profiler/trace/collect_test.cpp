#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>

#include "shardcost/error.h"
#include "shardcost/trace.h"
#include "test_support.h"
#include "trace_file.h"

namespace shardcost::trace {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string p = (fs::temp_directory_path() / "trace_test_XXXXXX").string();
    path_ = ::mkdtemp(p.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

TEST(TraceFile, RoundTripAndTruncation) {
  std::string bytes = file::encode_header(77, "hostA");
  file::Batch b = testing::training_step(0, 1000);
  b.dropped = 3;
  b.warnings = {"hello"};
  file::encode(b, bytes);
  const auto c = file::decode(bytes, "x");
  EXPECT_EQ(c.pid, 77u);
  EXPECT_EQ(c.host, "hostA");
  EXPECT_EQ(c.names.size(), 8u);
  ASSERT_EQ(c.events.size(), b.events.size());
  EXPECT_EQ(c.events[4].start_ns, 1500u);
  EXPECT_EQ(c.devices.at(0).name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(c.dropped, 3u);
  EXPECT_EQ(c.warnings.at(0), "hello");
  EXPECT_FALSE(c.truncated);
  // A process killed mid-write: every complete chunk survives.
  const auto cut = file::decode(std::string_view(bytes).substr(0, bytes.size() - 3), "x");
  EXPECT_TRUE(cut.truncated);
  EXPECT_EQ(cut.events.size(), b.events.size());
  EXPECT_THROW(file::decode("not a trace", "bad.sctrace"), InputError);
}

TEST(Collect, ProcessesDevicesNamesAndSyncPlacement) {
  TempDir dir;
  std::string a = file::encode_header(1, "h");
  file::encode(testing::training_step(0, 1000), a);
  std::string b = file::encode_header(2, "h");
  file::encode(testing::training_step(1, 5000), b);
  write(dir.path() / "h-1.sctrace", a);
  write(dir.path() / "h-2.sctrace", b);
  write(dir.path() / "ignored.txt", "x");
  const Collected c = collect_directory(dir.path().string());
  EXPECT_EQ(c.processes, 2);
  EXPECT_EQ(c.runtime_calls, 2);
  ASSERT_EQ(c.trace.devices.size(), 2u);
  EXPECT_EQ(c.trace.devices[1].index, 1);
  EXPECT_EQ(c.trace.devices[1].compute_capability, "9.0");
  EXPECT_EQ(c.trace.names.size(), 8u);  // shared across processes
  EXPECT_EQ(c.trace.kernels.size(), 16u);
  for (const auto& e : c.trace.kernels)
    if (e.kind == db::EventKind::sync) {
      EXPECT_EQ(e.device, e.start_ns >= 5000 ? 1 : 0);
    }
  EXPECT_TRUE(std::is_sorted(c.trace.kernels.begin(), c.trace.kernels.end(),
                             [](auto& x, auto& y) { return x.start_ns < y.start_ns; }));
  EXPECT_THROW(collect_directory((dir.path() / "missing").string()), InputError);
}

TEST(Collect, StoreRoundTripKeepsTheSummary) {
  TempDir dir;
  std::string a = file::encode_header(1, "h");
  file::encode(testing::training_step(0, 1'000'000), a);
  write(dir.path() / "h-1.sctrace", a);
  Collected c = collect_directory(dir.path().string());
  c.trace.run.tool = "shardcost";
  const Summary before = summarize(c.trace);
  const std::string db_path = (dir.path() / "t.db").string();
  int64_t run = 0;
  {
    auto store = db::Store::open(db_path, db::Store::Mode::read_write);
    const db::WriteResult w = store.write(c.trace);
    EXPECT_EQ(w.rows, 8);
    run = w.run_id;
  }
  auto store = db::Store::open(db_path, db::Store::Mode::read_only);
  for (const db::Measurements& back :
       {from_kernel_table(store.table("kernels")), store.kernel_events(run)}) {
    const Summary after = summarize(back);
    EXPECT_EQ(after.gpu_time_ns, before.gpu_time_ns);
    EXPECT_EQ(after.kernels, before.kernels);
    EXPECT_DOUBLE_EQ(after.overlap_fraction(), 0.5);
    EXPECT_DOUBLE_EQ(after.overlap_fraction(), before.overlap_fraction());
    EXPECT_EQ(back.devices.at(0).name, "NVIDIA H100 80GB HBM3");
  }
}

TEST(Collect, LaunchConfigurationsAndTwoGpusOfOneModelReachTheStore) {
  TempDir dir;
  // One process driving two H100s (same name, different UUIDs), as torchrun's ranks would.
  std::string a = file::encode_header(1, "h");
  file::encode(testing::training_step(0, 1'000'000), a);
  file::encode(testing::training_step(1, 1'000'000, 8), a);
  write(dir.path() / "h-1.sctrace", a);
  Collected c = collect_directory(dir.path().string());
  ASSERT_EQ(c.trace.devices.size(), 2u);
  const db::KernelEvent& gemm = c.trace.kernels.front();  // starts first: stream 7's GEMM
  EXPECT_EQ(c.trace.names.at(static_cast<size_t>(gemm.name)).substr(0, 11), "ampere_bf16");
  EXPECT_TRUE((gemm.launch == db::LaunchConfig{132, 1, 1, 256, 1, 1}));
  for (const auto& e : c.trace.kernels)
    EXPECT_EQ(e.launch.known(), e.kind == db::EventKind::kernel);

  c.trace.run.tool = "shardcost";
  const std::string db_path = (dir.path() / "t.db").string();
  auto store = db::Store::open(db_path, db::Store::Mode::read_write);
  const int64_t run = store.write(c.trace).run_id;
  const db::Measurements back = store.kernel_events(run);
  ASSERT_EQ(back.devices.size(), 2u);
  EXPECT_NE(back.devices[0].uuid, back.devices[1].uuid);
  const Summary s = summarize(back);
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_EQ(s.devices[0].busy_ns, s.devices[1].busy_ns);
  EXPECT_DOUBLE_EQ(s.overlap_fraction(), 0.5);
  ASSERT_EQ(back.kernels.size(), c.trace.kernels.size());
  for (size_t i = 0; i < back.kernels.size(); ++i)
    EXPECT_TRUE(back.kernels[i].launch == c.trace.kernels[i].launch) << i;
}

TEST(Launch, ExitCodesAndMissingCommands) {
  EXPECT_EQ(run_command({{"sh", "-c", "exit 3"}, {}}), 3);
  EXPECT_EQ(run_command({{"sh", "-c", "test \"$FOO\" = bar"}, {{"FOO", "bar"}}}), 0);
  EXPECT_EQ(run_command({{"sh", "-c", "kill -TERM $$"}, {}}), 128 + 15);
  EXPECT_THROW(run_command({{"/nonexistent/program"}, {}}), InputError);
}

}  // namespace
}  // namespace shardcost::trace

namespace shardcost::trace {
namespace {

file::Batch ranges(uint32_t first_name, std::vector<std::string> names,
                   std::vector<std::array<uint64_t, 3>> spans) {  // name, start, end
  file::Batch b;
  b.first_new_name = first_name;
  b.new_names = std::move(names);
  for (const auto& [name, start, end] : spans) {
    file::RawEvent e;
    e.kind = file::RawKind::range;
    e.name = static_cast<uint32_t>(name);
    e.start_ns = start, e.end_ns = end, e.stream = 3;
    b.events.push_back(e);
  }
  return b;
}

// Two ranks mark the same steps: each step spans the earliest start to the latest end; other
// ranges and other names are counted, not steps.
TEST(Collect, NvtxStepRangesBecomeSteps) {
  TempDir dir;
  std::string a = file::encode_header(1, "h");
  file::encode(ranges(0, {"ProfilerStep#4", "ProfilerStep#5", "forward", "ProfilerStep#x"},
                      {{0, 100, 900}, {1, 900, 2000}, {2, 150, 400}, {3, 0, 10}}),
               a);
  write(dir.path() / "h-1.sctrace", a);
  std::string b = file::encode_header(2, "h");
  file::encode(ranges(0, {"ProfilerStep#5", "ProfilerStep#4"}, {{1, 120, 950}, {0, 950, 2100}}), b);
  write(dir.path() / "h-2.sctrace", b);
  const Collected c = collect_directory(dir.path().string());
  EXPECT_EQ(c.ranges, 6);
  ASSERT_EQ(c.trace.steps.size(), 2u);
  EXPECT_EQ(c.trace.steps[0].number, 4);
  EXPECT_EQ(c.trace.steps[0].start_ns, 100);
  EXPECT_EQ(c.trace.steps[0].duration_ns, 850);
  EXPECT_EQ(c.trace.steps[1].number, 5);
  EXPECT_EQ(c.trace.steps[1].start_ns, 900);
  EXPECT_EQ(c.trace.steps[1].duration_ns, 1200);
  EXPECT_TRUE(c.trace.kernels.empty());
  // Another prefix: Megatron-style "iteration 12" ranges.
  std::string m = file::encode_header(3, "h");
  file::encode(ranges(0, {"iteration 12"}, {{0, 5, 25}}), m);
  write(dir.path() / "h-3.sctrace", m);
  const Collected it = collect_directory(dir.path().string(), "iteration ");
  ASSERT_EQ(it.trace.steps.size(), 1u);
  EXPECT_EQ(it.trace.steps[0].number, 12);
  EXPECT_EQ(it.trace.steps[0].duration_ns, 20);
}

}  // namespace
}  // namespace shardcost::trace
