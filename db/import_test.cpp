// Importers on hand-written fixtures (tests/fixtures) and inline snippets.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <sstream>

#include "shardcost/error.h"
#include "shardcost/importers.h"
#include "temp_dir_test.h"

namespace shardcost::db {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(SHARDCOST_SOURCE_DIR) + "/tests/fixtures/" + name);
  EXPECT_TRUE(in) << name;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(NcclText, NewLayoutWithRoot) {
  const Measurements m = import_nccl_tests(fixture("nccl/all_reduce_8gpu_v2.13.txt"), "ar.txt");
  ASSERT_EQ(m.collectives.size(), 50u);  // 25 sizes x out-of-place, in-place
  const CollectiveRecord& first = m.collectives[0];
  EXPECT_EQ(first.op, "all_reduce");
  EXPECT_EQ(first.bytes, 8);
  EXPECT_EQ(first.elements, 2);
  EXPECT_EQ(first.ranks, 8);
  EXPECT_EQ(first.nodes, 1);
  EXPECT_EQ(first.fabric_level, "intra_node");
  EXPECT_EQ(first.time_ns, 24100);
  EXPECT_FALSE(first.in_place);
  EXPECT_TRUE(m.collectives[1].in_place);
  EXPECT_EQ(m.collectives[1].time_ns, 23740);
  EXPECT_EQ(first.wrong_elements, 0);
  EXPECT_FALSE(first.max_error);
  EXPECT_EQ(first.iterations, 20);
  EXPECT_EQ(m.devices.size(), 8u);
  EXPECT_EQ(m.devices[0].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(m.run.tool_version, "2.13.9");
  EXPECT_EQ(m.run.library_versions, "nccl=2.21.5");
  EXPECT_EQ(m.run.host, "dgx-a100-017");
}

// A file cut short mid-row, or a row whose size is not a number: what is whole is stored, and
// the skipped lines and the missing closing summary are said, never dropped silently.
TEST(NcclText, ACutFileSaysWhatItSkipped) {
  const std::string whole = fixture("nccl/all_reduce_8gpu_v2.13.txt");
  EXPECT_TRUE(import_nccl_tests(whole, "ar.txt").warnings.empty());
  const size_t row = whole.find("\n       65536");
  ASSERT_NE(row, std::string::npos);
  const Measurements cut = import_nccl_tests(whole.substr(0, row + 30), "cut.txt");
  ASSERT_EQ(cut.warnings.size(), 2u);
  EXPECT_NE(cut.warnings[0].find("1 line under the results header is not a whole result row"),
            std::string::npos)
      << cut.warnings[0];
  EXPECT_NE(cut.warnings[1].find("no closing '# Avg bus bandwidth' line"), std::string::npos);
  std::string hex = whole;
  hex.replace(hex.find("\n         128"), 14, "\n        0x80");
  const Measurements h = import_nccl_tests(hex, "hex.txt");
  EXPECT_EQ(h.collectives.size(), 48u);
  ASSERT_EQ(h.warnings.size(), 1u);
}

TEST(NcclText, OldLayoutTwoNodesOpFromFileName) {
  const Measurements m =
      import_nccl_tests(fixture("nccl/allgather_2node_old.txt"), "x/allgather_2node_old.txt");
  ASSERT_EQ(m.collectives.size(), 22u);
  EXPECT_EQ(m.collectives[0].op, "all_gather");
  EXPECT_EQ(m.collectives[0].ranks, 16);
  EXPECT_EQ(m.collectives[0].nodes, 2);
  EXPECT_EQ(m.collectives[0].fabric_level, "inter_node");
  EXPECT_EQ(m.collectives[0].root, -1);
  EXPECT_EQ(m.collectives[0].redop, "none");
  EXPECT_FALSE(m.collectives[0].wrong_elements);
  EXPECT_EQ(m.collectives[0].max_error, 0.0);
}

TEST(NcclText, RootColumnNoiseAndUncheckedInPlace) {
  const Measurements m = import_nccl_tests(fixture("nccl/broadcast_root.txt"), "b.txt");
  ASSERT_EQ(m.collectives.size(), 14u);
  EXPECT_EQ(m.collectives[0].op, "broadcast");
  EXPECT_EQ(m.collectives[0].root, 0);
  EXPECT_EQ(m.collectives[0].ranks, 4);
  EXPECT_EQ(m.collectives[0].dtype, "bfloat16");
  EXPECT_FALSE(m.collectives[1].wrong_elements);  // N/A
}

TEST(NcclText, EveryCollectiveNameIsKnown) {
  for (const auto& [program, op] :
       std::vector<std::pair<std::string, std::string>>{{"all_reduce_perf", "all_reduce"},
                                                        {"all_gather_perf", "all_gather"},
                                                        {"reduce_scatter_perf", "reduce_scatter"},
                                                        {"alltoall_perf", "all_to_all"},
                                                        {"broadcast_perf", "broadcast"},
                                                        {"reduce_perf", "reduce"},
                                                        {"sendrecv_perf", "send_recv"},
                                                        {"gather_perf", "gather"},
                                                        {"scatter_perf", "scatter"},
                                                        {"hypercube_perf", "hypercube"}}) {
    const std::string text =
        "# Collective test starting: " + program +
        "\n# nThread 1 nGpus 2 minBytes 8 maxBytes 8\n"
        "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
        "   1024  256 float sum -1 10.0 0.1 0.1 0 N/A N/A N/A N/A\n";
    const Measurements m = import_nccl_tests(text, "t.txt");
    ASSERT_EQ(m.collectives.size(), 1u) << program;
    EXPECT_EQ(m.collectives[0].op, op);
    EXPECT_EQ(m.collectives[0].ranks, 2);
  }
}

TEST(NcclText, UnknownOpAndEmptyFileAreInputErrors) {
  const std::string no_op =
      "# nThread 1 nGpus 2\n# size count type redop time algbw busbw error time algbw busbw error\n"
      " 8 2 float sum 10.0 0.0 0.0 0e+00 10.0 0.0 0.0 0e+00\n";
  EXPECT_THROW(import_nccl_tests(no_op, "results.txt"), InputError);
  EXPECT_EQ(import_nccl_tests(no_op, "results.txt", "reduce").collectives.at(0).op, "reduce");
  EXPECT_THROW(import_nccl_tests("hello\n", "x.txt"), InputError);
}

TEST(NcclJson, ReadsResultsDevicesAndProvenance) {
  const Measurements m = import_nccl_tests(fixture("nccl/reduce_scatter_2node.json"), "rs.json");
  ASSERT_EQ(m.collectives.size(), 14u);
  EXPECT_EQ(m.collectives[0].op, "reduce_scatter");
  EXPECT_EQ(m.collectives[0].ranks, 16);
  EXPECT_EQ(m.collectives[0].nodes, 2);
  EXPECT_EQ(m.collectives[0].bytes, 65536);
  EXPECT_EQ(m.collectives[0].root, -1);
  EXPECT_EQ(m.collectives[0].iterations, 20);
  EXPECT_EQ(m.run.library_versions, "nccl=2.21.5");
  EXPECT_EQ(m.run.start_time_ns, 1741944413LL * 1000000000);
  EXPECT_NE(m.run.command_line.find("reduce_scatter_perf"), std::string::npos);
  EXPECT_THROW(import_nccl_tests("{\"results\": [", "bad.json"), InputError);
}

TEST(Kineto, GpuEventsOnlyWithInternedNames) {
  const Measurements m = import_kineto(fixture("kineto/train_step.json"), "t.json");
  ASSERT_EQ(m.kernels.size(), 6u);
  EXPECT_EQ(m.names.size(), 5u);  // the GEMM appears twice
  EXPECT_EQ(m.kernels[0].name, m.kernels[3].name);
  EXPECT_EQ(m.kernels[0].duration_ns, 42500);
  EXPECT_EQ(m.kernels[0].start_ns, 1700000000000000000 + 1020000);
  EXPECT_EQ(m.kernels[2].kind, EventKind::memcpy);
  EXPECT_EQ(m.kernels[2].bytes, 4194304);
  EXPECT_EQ(m.kernels[4].kind, EventKind::memset);
  EXPECT_EQ(m.kernels[0].stream, 7);
  ASSERT_EQ(m.devices.size(), 1u);
  EXPECT_EQ(m.devices[0].sms, 108);
  EXPECT_EQ(m.devices[0].compute_capability, "8.0");
  EXPECT_FALSE(m.kernels[0].launch.known());  // the fixture's kernels name no grid or block
  const Measurements launched = import_kineto(
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2,
          "args": {"device": 0, "stream": 7, "grid": [108, 2, 1], "block": [256, 1, 1]}}]})",
      "l.json");
  EXPECT_TRUE((launched.kernels.at(0).launch == LaunchConfig{108, 2, 1, 256, 1, 1}));
  EXPECT_THROW(import_kineto("{\"traceEvents\": []}", "e.json"), InputError);
  EXPECT_THROW(import_kineto("{\"traceEvents\": [", "e.json"), InputError);
}

TEST(Csv, GemmTableWithDefaultsAndErrors) {
  const Measurements m = import_cost_csv(
      "device,dtype,m,n,k,time_ns\nNVIDIA A100,bf16,4096,4096,4096,700000\n", "g.csv");
  ASSERT_EQ(m.gemms.size(), 1u);
  EXPECT_EQ(m.gemms[0].batch, 1);
  EXPECT_EQ(m.gemms[0].time_ns, 700000);
  EXPECT_THROW(import_cost_csv("a,b\n1,2\n", "x.csv"), InputError);
  EXPECT_THROW(import_cost_csv("device,dtype,m,n,k,time_ns\nA,bf16,x,1,1,1\n", "x.csv"),
               InputError);
  EXPECT_THROW(import_cost_csv("device,dtype,m,n,k,time_ns\nA,bf16,1,1\n", "x.csv"), InputError);
}

}  // namespace
}  // namespace shardcost::db

namespace shardcost::db {
namespace {

TEST(Kineto, ProfilerStepSpansBecomeSteps) {
  const Measurements m = import_kineto(fixture("kineto/profiler_steps.json"), "steps.json");
  // The host-side spans, once each: the GPU-side copies (gpu_user_annotation) are skipped.
  ASSERT_EQ(m.steps.size(), 3u);
  EXPECT_EQ(m.steps[0].number, 10);
  EXPECT_EQ(m.steps[2].number, 12);
  EXPECT_EQ(m.steps[1].duration_ns, 101500000);
  EXPECT_EQ(m.steps[0].start_ns, 1700000000000000000 + 1000000);
  EXPECT_EQ(m.kernels.size(), 3u);  // the steps are not kernels
  // A step name that is not ProfilerStep#<number>, or without a duration, is no step.
  const Measurements odd = import_kineto(
      R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#x", "ts": 1, "dur": 2},
          {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": 1},
          {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {"device": 0}}]})",
      "odd.json");
  EXPECT_TRUE(odd.steps.empty());
}

}  // namespace
}  // namespace shardcost::db

#include "import_util.h"
#include "kineto.h"

namespace shardcost::db {
namespace {

bool same(const Measurements& a, const Measurements& b) {
  if (a.kernels.size() != b.kernels.size() || a.steps.size() != b.steps.size() ||
      a.names != b.names || a.devices.size() != b.devices.size() || a.run.uuid != b.run.uuid)
    return false;
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    const auto &x = a.kernels[i], &y = b.kernels[i];
    if (x.start_ns != y.start_ns || x.duration_ns != y.duration_ns || x.name != y.name ||
        x.device != y.device || x.stream != y.stream || x.bytes != y.bytes || x.kind != y.kind)
      return false;
  }
  for (size_t i = 0; i < a.devices.size(); ++i)
    if (a.devices[i].name != b.devices[i].name || a.devices[i].sms != b.devices[i].sms)
      return false;
  return true;
}

// Streamed in chunks of any size (1 byte: every capture spans chunks), the trace imports as it
// does whole; the file form reads the same, with the same content id.
TEST(Kineto, ChunksOfAnySizeImportAlike) {
  for (const char* f : {"kineto/train_step.json", "kineto/profiler_steps.json"}) {
    const std::string text = fixture(f);
    const Measurements whole = import_kineto(text, f);
    for (size_t chunk : {size_t{1}, size_t{7}, size_t{64}, size_t{1000}})
      EXPECT_TRUE(same(import_kineto_chunks(text, f, chunk), whole)) << f << " " << chunk;
    const Measurements file =
        import_kineto_file(std::string(SHARDCOST_SOURCE_DIR) + "/tests/fixtures/" + f);
    EXPECT_TRUE(same(file, whole)) << f;
    StreamHash h;
    h.update(text);
    EXPECT_EQ(file.run.uuid, h.uuid("kineto"));
  }
}

// A GPU event without a valid time or name is an error naming the event and the field, never a
// stored zero or a negative duration.
TEST(Kineto, GpuEventsWithoutValidTimesOrNamesAreErrorsNamingEventAndField) {
  auto error = [](const std::string& event) {
    try {
      import_kineto(
          R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1},)" +
              event + "]}",
          "bad.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error(R"({"ph": "X", "cat": "kernel", "name": "k", "dur": 2})"),
            "bad.json: event 1 has no 'ts' (a GPU event or step needs ts, dur and name)");
  EXPECT_EQ(error(R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1})"),
            "bad.json: event 1 has no 'dur' (a GPU event or step needs ts, dur and name)");
  EXPECT_EQ(error(R"({"ph": "X", "cat": "kernel", "ts": 1, "dur": 2})"),
            "bad.json: event 1 has no 'name' (a GPU event or step needs ts, dur and name)");
  EXPECT_NE(error(R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -2})")
                .find("bad.json: event 1: 'dur' -2"),
            std::string::npos);
  EXPECT_NE(
      error(R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1e300, "dur": 2})").find("'ts'"),
      std::string::npos);
  EXPECT_NE(
      error(
          R"({"ph": "X", "cat": "gpu_memcpy", "name": "m", "ts": 1, "dur": 2, "args": {"bytes": -5}})")
          .find("'bytes' -5 is negative"),
      std::string::npos);
  EXPECT_NE(error(R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": })")
                .find("event 1 is not valid JSON"),
            std::string::npos);
  EXPECT_EQ(error(R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}, 5)"),
            "bad.json: event 2 is not an object");
  // Not a trace at all, or cut short.
  EXPECT_THROW(import_kineto("[1, 2]", "list.json"), InputError);
  EXPECT_THROW(import_kineto("{\"traceEvents\": [] } x", "tail.json"), InputError);
  EXPECT_THROW(import_kineto("{\"traceEvents\": [{\"ph\": \"X\"", "cut.json"), InputError);
}

// The stream's id does not depend on where the chunks break, and changes with any byte.
TEST(StreamHash, ChunkBoundariesDoNotMatter) {
  const std::string text = "{\"traceEvents\": [1, 2, 3]} and a tail of odd length";
  StreamHash whole;
  whole.update(text);
  for (size_t chunk : {1, 3, 8, 13}) {
    StreamHash h;
    for (size_t at = 0; at < text.size(); at += chunk) h.update(text.substr(at, chunk));
    EXPECT_EQ(h.uuid("kineto"), whole.uuid("kineto")) << chunk;
  }
  std::string other = text;
  other.back() = 'x';
  StreamHash changed;
  changed.update(other);
  EXPECT_NE(changed.uuid("kineto"), whole.uuid("kineto"));
}

}  // namespace
}  // namespace shardcost::db

namespace shardcost::db {
namespace {

std::string import_error(std::string_view text, std::string_view name) {
  try {
    import_nccl_tests(text, name, "all_reduce");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// nccl-tests rows with times that are not times, a #wrong that is not a count or a size that
// overflows were stored as numbers; each is now an error naming the file, line and field.
TEST(NcclTests, RowsWithNumbersThatAreNotTimesOrCountsAreErrors) {
  const std::string header =
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n";
  auto row = [&](const std::string& r) { return header + r + "\n"; };
  EXPECT_EQ(import_error(row("1024 256 float sum -1 nan 0.04 0.07 0 23.75 0.04 0.08 0"), "t.txt"),
            "t.txt:3: time 'nan' is not a time in microseconds");
  EXPECT_EQ(import_error(row("1024 256 float sum -1 -24.1 0.04 0.07 0 23.75 0.04 0.08 0"), "t.txt"),
            "t.txt:3: time '-24.1' is not a time in microseconds");
  EXPECT_EQ(import_error(row("1024 256 float sum -1 inf 0.04 0.07 0 23.75 0.04 0.08 0"), "t.txt"),
            "t.txt:3: time 'inf' is not a time in microseconds");
  EXPECT_EQ(
      import_error(row("1024 256 float sum -1 24.1 0.04 0.07 1.5 23.75 0.04 0.08 0"), "t.txt"),
      "t.txt:3: #wrong '1.5' is not a whole number of elements");
  EXPECT_EQ(import_error(row("99999999999999999999999 256 float sum -1 24.1 0.04 0.07 0 23.75 0.04 "
                             "0.08 0"),
                         "t.txt"),
            "t.txt:3: size '99999999999999999999999' does not fit in 64 bits");
  // A good row still imports; N/A halves are skipped, not errors.
  EXPECT_EQ(import_nccl_tests(row("1024 256 float sum -1 24.1 0.04 0.07 0 N/A N/A N/A N/A"),
                              "t.txt", "all_reduce")
                .collectives.size(),
            1u);
  // The JSON form, by result index and half; a wrong type is our line, not the JSON library's.
  const std::string json_head = R"({"config": {"nthreads": 1, "ngpus": 2}, "results": [)";
  EXPECT_EQ(import_error(json_head + R"({"size": 1024, "count": 256, "type": "float",
      "out_of_place": {"time": -3.0, "nwrong": 0}}]})",
                         "r.json"),
            "r.json: results[0].out_of_place: time -3 is not a time in microseconds");
  EXPECT_EQ(
      import_error(json_head + R"({"size": 1024, "out_of_place": {"time": 3.0, "nwrong": 0.5}}]})",
                   "r.json"),
      "r.json: results[0].out_of_place: nwrong 0.5 is not a whole number of elements");
  EXPECT_EQ(import_error(json_head + R"({"size": "big"}]})", "r.json"),
            "r.json: results[0]: 'size' is not a whole number >= 0");
  EXPECT_NE(import_error(R"({"config": {"nthreads": "one"}, "results": [{"size": 8}]})", "r.json")
                .find("r.json: a field has the wrong type"),
            std::string::npos);
}

}  // namespace
}  // namespace shardcost::db

namespace shardcost::db {
namespace {

// Two programs' output in one log: two runs, each with its own op and content id; errors keep
// the file's line numbers.
TEST(NcclTests, OneFileOfSeveralRunsIsSeveralRuns) {
  const std::string a = fixture("nccl/all_reduce_8gpu_v2.13.txt"),
                    b = fixture("nccl/broadcast_root.txt");
  const auto runs = import_nccl_tests_runs(a + b, "log.txt");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].collectives.front().op, "all_reduce");
  EXPECT_EQ(runs[1].collectives.front().op, "broadcast");
  EXPECT_EQ(runs[0].collectives.size(), import_nccl_tests(a, "a.txt").collectives.size());
  EXPECT_NE(runs[0].run.uuid, runs[1].run.uuid);
  EXPECT_EQ(runs[1].run.uuid, content_uuid("nccl-tests", b));
  // A bad row in the second run is reported at its line in the whole file.
  std::string bad = b;
  const size_t row = bad.find("\n", bad.find("#       size")) + 1;
  bad.insert(row,
             "        1024           256     float     sum      -1      nan    0.04    0.07       "
             "0    23.75    0.04    0.08       0\n");
  const int a_lines = static_cast<int>(std::count(a.begin(), a.end(), '\n'));
  const int row_line =
      a_lines + 1 + static_cast<int>(std::count(bad.begin(), bad.begin() + row, '\n'));
  EXPECT_EQ(import_error(a + bad, "log.txt"),
            "log.txt:" + std::to_string(row_line) + ": time 'nan' is not a time in microseconds");
}

// --op is a fallback: the file's own op wins, and a fallback must name a collective.
TEST(NcclTests, TheOpComesFromTheFileFirstAndOpMustBeKnown) {
  const std::string a = fixture("nccl/all_reduce_8gpu_v2.13.txt");
  EXPECT_EQ(import_nccl_tests(a, "x.txt", "broadcast").collectives.front().op, "all_reduce");
  std::string unnamed = a;
  unnamed.erase(unnamed.find("# Collective test starting"),
                unnamed.find('\n', unnamed.find("# Collective test starting")) + 1 -
                    unnamed.find("# Collective test starting"));
  EXPECT_EQ(import_nccl_tests(unnamed, "x.txt", "AllGather").collectives.front().op, "all_gather");
  try {
    import_nccl_tests(unnamed, "x.txt", "allreduce2");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--op 'allreduce2' is not a collective"),
              std::string::npos);
  }
}

// Rows that nccl-tests itself marked wrong are stored, flagged, and warned about.
TEST(NcclTests, RowsMarkedWrongAreStoredFlaggedAndWarned) {
  std::string a = fixture("nccl/all_reduce_8gpu_v2.13.txt");
  const size_t at = a.find("\n", a.find("        1024 "));
  const size_t last = a.rfind(" 0", at);
  a.replace(last, 2, " 3");
  const Measurements m = import_nccl_tests(a, "w.txt");
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("all_reduce 1024 bytes (in place): 3 wrong elements; stored"),
            std::string::npos)
      << m.warnings[0];
}

}  // namespace
}  // namespace shardcost::db

namespace shardcost::db {
namespace {

// A small rank trace: one GPU, one step, a kernel whose name every rank shares and one of its
// own; `rank` < 0 writes no distributedInfo.
std::string rank_trace(int rank, double step_start_us, double step_us) {
  std::string info =
      rank < 0 ? ""
               : "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " + std::to_string(rank) +
                     ", \"world_size\": 2},\n";
  const std::string r = std::to_string(rank);
  const std::string start = std::to_string(step_start_us), dur = std::to_string(step_us);
  return "{\"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\"}],\n" + info +
         "\"traceEvents\": [\n"
         "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#4\", \"pid\": 1, "
         "\"tid\": 1, \"ts\": " +
         start + ", \"dur\": " + dur +
         "},\n"
         "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"shared_gemm\", \"pid\": 0, \"tid\": 7, "
         "\"ts\": 10.0, \"dur\": 5.0, \"args\": {\"device\": 0, \"stream\": 7}},\n"
         "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"own_" +
         r +
         "\", \"pid\": 0, \"tid\": 7, \"ts\": 20.0, \"dur\": 5.0, \"args\": {\"device\": 0, "
         "\"stream\": 7}}\n]}\n";
}

using KinetoRanks = TempDirTest;

TEST_F(KinetoRanks, OneRunOfEveryRankInParallel) {
  // Given out of order: the ranks come from the traces, not the file names.
  std::ofstream(file("a.json")) << rank_trace(1, 100, 50);
  std::ofstream(file("b.json")) << rank_trace(0, 90, 40);
  const Measurements m = import_kineto_ranks({file("a.json"), file("b.json")}, 2);
  ASSERT_EQ(m.devices.size(), 2u);
  EXPECT_EQ(m.devices[0].host, "rank 1");
  EXPECT_EQ(m.devices[1].host, "rank 0");
  EXPECT_EQ(m.kernels.size(), 4u);
  EXPECT_EQ(m.names.size(), 3u);  // shared_gemm once, own_1, own_0
  EXPECT_EQ(m.kernels[2].device, 1);
  EXPECT_EQ(m.names.at(static_cast<size_t>(m.kernels[2].name)), "shared_gemm");
  // The job's step: the earliest start (90 µs) to the latest end (150 µs).
  ASSERT_EQ(m.steps.size(), 1u);
  EXPECT_EQ(m.steps[0].number, 4);
  EXPECT_EQ(m.steps[0].duration_ns, 60000);
  // The same files in another order, on one thread: the same run.
  const Measurements again = import_kineto_ranks({file("b.json"), file("a.json")}, 1);
  EXPECT_EQ(again.run.uuid, m.run.uuid);
  EXPECT_EQ(again.kernels.size(), 4u);
}

TEST_F(KinetoRanks, TwoTracesOfOneRankOrABadFileAreErrors) {
  std::ofstream(file("a.json")) << rank_trace(0, 100, 50);
  std::ofstream(file("b.json")) << rank_trace(0, 100, 50);
  std::ofstream(file("bad.json")) << "{\"traceEvents\": [";
  try {
    import_kineto_ranks({file("a.json"), file("b.json")}, 2);
    FAIL() << "two traces of rank 0 were accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("are both traces of rank 0"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(import_kineto_ranks({file("a.json"), file("bad.json")}, 2), InputError);
  // Traces that name no rank are ranked by their place.
  std::ofstream(file("c.json")) << rank_trace(-1, 100, 50);
  std::ofstream(file("d.json")) << rank_trace(-1, 100, 50);
  const Measurements m = import_kineto_ranks({file("c.json"), file("d.json")}, 2);
  EXPECT_EQ(m.devices[1].host, "rank 1");
}

}  // namespace
}  // namespace shardcost::db

namespace shardcost::db {
namespace {

// A cluster job's log of two nccl-tests programs (issue 34, item 4), written from the
// documented formats: mpirun --tag-output's "[1,0]<stdout>:" prefixes, the MPI builds'
// *_perf_mpi command lines naming each program, no "Collective test starting" lines (before
// nccl-tests 2.12), NCCL INFO lines from hosts named by address, a numbered list before the
// results and a job summary after them, and an "Out of bounds values ... FAILED" line.
TEST(NcclTests, AJobLogOfTwoTaggedProgramsIsTwoRunsEachWithItsOp) {
  const std::string log = fixture("nccl/two_programs_tagged.log");
  const auto runs = import_nccl_tests_runs(log, "job.log");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].collectives.size(), 8u);
  EXPECT_EQ(runs[1].collectives.size(), 8u);
  for (const auto& c : runs[0].collectives) EXPECT_EQ(c.op, "all_reduce");
  for (const auto& c : runs[1].collectives) EXPECT_EQ(c.op, "all_gather");
  EXPECT_EQ(runs[0].collectives.front().ranks, 16);
  EXPECT_EQ(runs[0].collectives.front().bytes, 1024);
  EXPECT_DOUBLE_EQ(static_cast<double>(runs[0].collectives.front().time_ns), 30120);
  // No warning for the log's own lines; one for the out-of-bounds values.
  EXPECT_TRUE(runs[0].warnings.empty());
  ASSERT_EQ(runs[1].warnings.size(), 1u);
  EXPECT_NE(runs[1].warnings[0].find("3 out-of-bounds values"), std::string::npos);
  // The file's own ops win over --op.
  EXPECT_EQ(import_nccl_tests_runs(log, "job.log", "broadcast")[1].collectives[0].op, "all_gather");
}

// Without the command lines the runs do not say their collective: one --op cannot name both.
TEST(NcclTests, OneOpForSeveralUnnamedRunsIsRefused) {
  std::string log = fixture("nccl/two_programs_tagged.log");
  for (size_t at; (at = log.find("$ mpirun")) != std::string::npos;)
    log.erase(at, log.find('\n', at) + 1 - at);
  try {
    import_nccl_tests_runs(log, "job.log", "all_reduce");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--op all_reduce would label 2 of its 2 runs"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(import_nccl_tests_runs(log, "job.log"), InputError);
  // One program's output, unnamed, still takes --op.
  const std::string one = log.substr(0, log.find("10.0.0.2:5128"));
  EXPECT_EQ(import_nccl_tests_runs(one, "one.log", "all_reduce").at(0).collectives.at(0).op,
            "all_reduce");
}

TEST(NcclTests, MpiProgramNamesAreTheirCollectives) {
  EXPECT_EQ(nccl_op_name("all_reduce_perf_mpi"), "all_reduce");
  EXPECT_EQ(nccl_op_name("alltoall_perf_mpi"), "all_to_all");
  EXPECT_EQ(nccl_op_name("sendrecv_perf"), "send_recv");
}

}  // namespace
}  // namespace shardcost::db

namespace shardcost::db {
namespace {

using KinetoFiles = TempDirTest;

// PyTorch profiler traces as they are shipped (issue 34, item 5): gzip-compressed (.json.gz,
// as Holistic Trace Analysis and Kineto's own test data keep them) read as the plain file;
// the JSON-array form of PyTorch before 1.9 (the events as the document) read as the object
// form; timestamps of 16 integer digits read to the nanosecond (a double is off by up to
// 0.25 µs there).
TEST_F(KinetoFiles, GzipArrayFormAndExactTimestamps) {
  const std::string event =
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, "
      "\"ts\": 1712345678901234.567, \"dur\": 3.25, \"args\": {\"device\": 0, \"stream\": 7}}";
  const std::string object = "{\"traceEvents\": [" + event + ", " + event + "]}";
  const Measurements plain = import_kineto(object, "t.json");
  ASSERT_EQ(plain.kernels.size(), 2u);
  EXPECT_EQ(plain.kernels[0].start_ns, 1712345678901234567);
  EXPECT_EQ(plain.kernels[0].duration_ns, 3250);
  // The array form: the same events.
  const Measurements array = import_kineto("[" + event + ",\n" + event + "]\n", "old.json");
  ASSERT_EQ(array.kernels.size(), 2u);
  EXPECT_EQ(array.kernels[1].start_ns, 1712345678901234567);
  EXPECT_THROW(import_kineto("[" + event + "] []", "two.json"), InputError);
  EXPECT_THROW(import_kineto("[" + event, "cut.json"), InputError);
  // 16 digits past int64 nanoseconds: refused as a time, not wrapped around.
  std::string late = event;
  late.replace(late.find("1712345678901234.567"), 20, "9999999999999999.999");
  EXPECT_THROW(import_kineto("[" + late + "]", "late.json"), InputError);
  // Compressed: the file's events, read through zlib.
  gzFile gz = gzopen(file("t.json.gz").c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, object.data(), static_cast<unsigned>(object.size())),
            static_cast<int>(object.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
  std::ofstream(file("t.json")) << object;
  const Measurements unzipped = import_kineto_file(file("t.json.gz"));
  EXPECT_EQ(unzipped.kernels.size(), 2u);
  EXPECT_EQ(unzipped.kernels[0].start_ns, 1712345678901234567);
  EXPECT_EQ(unzipped.run.uuid, import_kineto_file(file("t.json")).run.uuid);
  // Damaged compressed data is one error naming the file.
  std::string bytes;
  {
    std::ifstream in(file("t.json.gz"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes.resize(bytes.size() / 2);
  std::ofstream(file("cut.json.gz"), std::ios::binary) << bytes;
  EXPECT_THROW(import_kineto_file(file("cut.json.gz")), InputError);
}

}  // namespace
}  // namespace shardcost::db
