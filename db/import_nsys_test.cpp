// Nsight Systems SQLite exports: the fixtures (tests/fixtures/nsys/*.sql) made into files
// through the store's own SQLite door, then imported.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "shardcost/error.h"
#include "shardcost/importers.h"
#include "sqlite.h"
#include "temp_dir_test.h"

namespace shardcost::db {
namespace {

std::string fixture_sql(const char* name) {
  std::ifstream f(std::string(SHARDCOST_SOURCE_DIR) + "/tests/fixtures/nsys/" + name);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

class Nsys : public TempDirTest {
 protected:
  // The fixture as a file, with `extra` SQL run after it.
  std::string make(const char* sql, const std::string& extra = "") {
    const std::string path = file(std::to_string(++made_) + "_" + sql + ".sqlite");
    Connection c(path, Connection::Access::read_write);
    c.exec(fixture_sql(sql));
    if (!extra.empty()) c.exec(extra);
    return path;
  }
  int made_ = 0;
  static std::string error_of(const std::string& path, std::string_view prefix = "ProfilerStep#") {
    try {
      import_nsys_file(path, prefix);
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "no error for " << path;
    return "";
  }
};

TEST_F(Nsys, Release2024KernelsCopiesSetsDevicesAndSteps) {
  const Measurements m = import_nsys_file(make("report_2024.sql"));
  EXPECT_EQ(m.run.tool, "nsys");
  ASSERT_EQ(m.kernels.size(), 8u);
  int kernels = 0, copies = 0, sets = 0, nccl = 0;
  for (const KernelEvent& k : m.kernels) {
    kernels += k.kind == EventKind::kernel;
    copies += k.kind == EventKind::memcpy;
    sets += k.kind == EventKind::memset;
    nccl += m.names[static_cast<size_t>(k.name)].starts_with("ncclDevKernel_AllReduce");
    EXPECT_EQ(k.device, 0);
  }
  EXPECT_EQ(kernels, 6);
  EXPECT_EQ(copies, 1);
  EXPECT_EQ(sets, 1);
  EXPECT_EQ(nccl, 2);
  // Times from the session start, moved to the epoch the export gives.
  const int64_t base = 1733300000000000000;
  EXPECT_EQ(m.run.start_time_ns, base);
  bool found_copy = false;
  for (const KernelEvent& k : m.kernels)
    if (k.kind == EventKind::memcpy) {
      found_copy = true;
      EXPECT_EQ(m.names[static_cast<size_t>(k.name)], "Memcpy Host-to-Device");
      EXPECT_EQ(k.bytes, 4194304);
      EXPECT_EQ(k.start_ns, base + 1050000);
      EXPECT_EQ(k.duration_ns, 100000);
      EXPECT_EQ(k.stream, 7);
    } else if (k.kind == EventKind::memset) {
      EXPECT_EQ(m.names[static_cast<size_t>(k.name)], "Memset");
      EXPECT_EQ(k.bytes, 1048576);
    }
  EXPECT_TRUE(found_copy);
  // The first GEMM: its launch (132 blocks of 128 threads) and stream.
  const KernelEvent* gemm = nullptr;
  for (const KernelEvent& k : m.kernels)
    if (k.kind == EventKind::kernel && k.start_ns == base + 1200000) gemm = &k;
  ASSERT_TRUE(gemm);
  EXPECT_EQ(gemm->duration_ns, 300000);
  EXPECT_EQ(gemm->launch, (LaunchConfig{132, 1, 1, 128, 1, 1}));
  // CUDA device 1 (TARGET_INFO_GPU.cuDevice), with its properties.
  ASSERT_EQ(m.devices.size(), 1u);
  EXPECT_EQ(m.devices[0].index, 1);
  EXPECT_EQ(m.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(m.devices[0].pci_bus, "0000:2a:00.0");
  EXPECT_EQ(m.devices[0].memory_bytes, 85520809984);
  EXPECT_EQ(m.devices[0].sms, 132);
  // The two ProfilerStep ranges (through textId); 'forward' and the mark are not steps.
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_EQ(m.steps[0].number, 7);
  EXPECT_EQ(m.steps[0].start_ns, base + 1000000);
  EXPECT_EQ(m.steps[0].duration_ns, 2000000);
  EXPECT_EQ(m.steps[1].number, 8);
  // Another prefix: no range is a step.
  EXPECT_TRUE(import_nsys_file(make("report_2024.sql", ""), "iteration ").steps.empty());
}

TEST_F(Nsys, Release2021LayoutReadsAlike) {
  const Measurements m = import_nsys_file(make("report_2021.sql"));
  ASSERT_EQ(m.kernels.size(), 5u);
  ASSERT_EQ(m.devices.size(), 2u);
  EXPECT_EQ(m.devices[0].index, 0);
  EXPECT_EQ(m.devices[1].index, 1);
  EXPECT_EQ(m.devices[1].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(m.run.start_time_ns, 0);  // no session start table: times stay relative
  ASSERT_EQ(m.steps.size(), 1u);      // inline NVTX text
  EXPECT_EQ(m.steps[0].number, 0);
  EXPECT_EQ(m.steps[0].duration_ns, 2000000);
  int d2d = 0;
  for (const KernelEvent& k : m.kernels)
    d2d += m.names[static_cast<size_t>(k.name)] == "Memcpy Device-to-Device";
  EXPECT_EQ(d2d, 1);  // CUPTI's copy kind 8, without the enumeration table
}

TEST_F(Nsys, SameContentSameRunOtherContentAnother) {
  const std::string a = make("report_2024.sql");
  EXPECT_EQ(import_nsys_file(a).run.uuid, import_nsys_file(a).run.uuid);
  EXPECT_NE(import_nsys_file(a).run.uuid, import_nsys_file(make("report_2021.sql")).run.uuid);
}

TEST_F(Nsys, WhatCannotBeReadIsOneLine) {
  const std::string text = file("report.nsys-rep");
  std::ofstream(text) << "not a database";
  EXPECT_NE(error_of(text).find("not an SQLite file; export the report first"), std::string::npos);
  {
    Connection c(file("empty.sqlite"), Connection::Access::read_write);
    c.exec("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)");
  }
  EXPECT_NE(error_of(file("empty.sqlite")).find("no CUDA activity in the export"),
            std::string::npos);
  EXPECT_NE(error_of(make("report_2021.sql",
                          "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 1 "
                          "WHERE rowid = 2"))
                .find("CUPTI_ACTIVITY_KIND_KERNEL row 2: start 600000 and end 1"),
            std::string::npos);
  EXPECT_NE(error_of(make("report_2021.sql", "DELETE FROM StringIds WHERE id = 2"))
                .find("name id 2 is not in StringIds"),
            std::string::npos);
  EXPECT_NE(error_of(make("report_2021.sql",
                          "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN streamId"))
                .find("CUPTI_ACTIVITY_KIND_KERNEL has no column 'streamId'"),
            std::string::npos);
}

}  // namespace
}  // namespace shardcost::db
