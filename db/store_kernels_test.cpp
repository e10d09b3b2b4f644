// Store::kernel_events and schema 4's launch configurations, on real files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "schema.h"
#include "shardcost/db.h"
#include "shardcost/error.h"
#include "shardcost/importers.h"
#include "sqlite.h"
#include "temp_dir_test.h"

namespace shardcost::db {
namespace {

namespace fs = std::filesystem;

using KernelEventsTest = TempDirTest;

DeviceRecord h100(int index) {
  DeviceRecord d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.host = "node-1";
  d.index = index;
  d.uuid = "GPU-0000000" + std::to_string(index) + "-aaaa-bbbb-cccc-dddddddddddd";
  return d;
}

constexpr LaunchConfig kGemmLaunch{132, 2, 1, 256, 1, 1};

// Two GPUs of one model on one host, each running the same kernel, plus a copy on GPU 1.
Measurements two_gpus(const std::string& uuid) {
  Measurements m;
  m.run.tool = "shardcost";
  m.run.uuid = uuid;
  m.run.host = "node-1";
  m.devices = {h100(0), h100(1)};
  m.names = {"gemm_kernel", "memcpy HtoD"};
  m.kernels.push_back({0, 7, EventKind::kernel, 0, 1000, 400, 0, kGemmLaunch});
  m.kernels.push_back({1, 7, EventKind::kernel, 0, 1100, 600, 0, kGemmLaunch});
  m.kernels.push_back({1, 9, EventKind::memcpy, 1, 1800, 100, 1 << 20, {}});
  return m;
}

TEST_F(KernelEventsTest, KeepsTwoDevicesOfOneModelApart) {
  Store s = Store::open(file("a.db"), Store::Mode::read_write);
  const int64_t first = s.write(two_gpus("u1")).run_id;
  Measurements other = two_gpus("u2");
  other.kernels.resize(1);
  const int64_t second = s.write(other).run_id;

  const Measurements m = s.kernel_events(first);
  EXPECT_EQ(m.run.uuid, "u1");
  ASSERT_EQ(m.devices.size(), 2u);
  EXPECT_EQ(m.devices[0].name, m.devices[1].name);
  EXPECT_EQ(m.devices[0].index, 0);
  EXPECT_EQ(m.devices[1].index, 1);
  EXPECT_EQ(m.devices[1].uuid, h100(1).uuid);
  EXPECT_EQ(m.devices[0].host, "node-1");
  ASSERT_EQ(m.kernels.size(), 3u);  // the second run's event is not among them
  EXPECT_EQ(m.kernels[0].device, 0);
  EXPECT_EQ(m.kernels[1].device, 1);
  EXPECT_EQ(m.kernels[1].duration_ns, 600);
  EXPECT_EQ(m.names.at(static_cast<size_t>(m.kernels[1].name)), "gemm_kernel");
  EXPECT_TRUE(m.kernels[1].launch == kGemmLaunch);
  EXPECT_EQ(m.kernels[2].kind, EventKind::memcpy);
  EXPECT_EQ(m.kernels[2].bytes, 1 << 20);
  EXPECT_FALSE(m.kernels[2].launch.known());

  EXPECT_EQ(s.kernel_events(second).kernels.size(), 1u);
  EXPECT_THROW(s.kernel_events(99), InputError);
}

TEST_F(KernelEventsTest, LaunchColumnsExportImportAndMerge) {
  {
    Store a = Store::open(file("a.db"), Store::Mode::read_write);
    a.write(two_gpus("u1"));
  }
  Store a = Store::open(file("a.db"), Store::Mode::read_only);
  const CostTable t = a.table("kernels");
  const std::vector<std::string> tail(t.columns.end() - 6, t.columns.end());
  EXPECT_EQ(tail,
            (std::vector<std::string>{"grid_x_blocks", "grid_y_blocks", "grid_z_blocks",
                                      "block_x_threads", "block_y_threads", "block_z_threads"}));
  EXPECT_EQ(t.columns.at(4), "device_index");
  const std::string csv = to_csv(t);
  EXPECT_NE(csv.find(",132,2,1,256,1,1\n"), std::string::npos) << csv;

  // CSV round trip: the same rows, and the two GPUs are still two devices.
  Store b = Store::open(file("b.db"), Store::Mode::read_write);
  const int64_t run = b.write(import_cost_csv(csv, "kernels.csv")).run_id;
  EXPECT_EQ(to_csv(b.table("kernels")), csv);
  EXPECT_EQ(b.kernel_events(run).devices.size(), 2u);
  EXPECT_THROW(import_cost_csv("device,kind,name,start_ns,duration_ns,grid_x_blocks\n"
                               "gpu,kernel,k,1,2,4\n",
                               "partial.csv"),
               InputError);

  Store merged = Store::open(file("m.db"), Store::Mode::read_write);
  merged.merge_from(file("a.db"));
  EXPECT_EQ(to_csv(merged.table("kernels")), csv);
}

TEST_F(KernelEventsTest, Version3FilesMigrateWithUnknownLaunches) {
  {
    Connection c(file("v3.db"), false);
    migrate(c, 0, 3);
    c.exec(
        "INSERT INTO run (id, uuid, tool, status) VALUES (1, 'old', 'shardcost', 'completed');"
        "INSERT INTO device (id, fingerprint, name) VALUES (1, 'name:gpu', 'gpu');"
        "INSERT INTO run_device VALUES (1, 1);"
        "INSERT INTO string (id, text) VALUES (1, 'k');"
        "INSERT INTO kernel_event VALUES (1, 1, 7, 0, 1, 100, 50, NULL);");
  }
  EXPECT_THROW(Store::open(file("v3.db"), Store::Mode::read_only), InputError);
  {
    Store s = Store::open(file("v3.db"), Store::Mode::migrate);
    EXPECT_EQ(s.migrate(), 3);
  }
  Store s = Store::open(file("v3.db"), Store::Mode::read_write);
  EXPECT_EQ(s.info().schema_version, kSchemaVersion);  // 3 -> 4 -> 5
  EXPECT_TRUE(s.check().ok);
  const Measurements m = s.kernel_events(1);
  ASSERT_EQ(m.kernels.size(), 1u);
  EXPECT_FALSE(m.kernels[0].launch.known());
  EXPECT_EQ(m.kernels[0].duration_ns, 50);
  s.write(two_gpus("new"));  // a migrated file takes launch configurations
  EXPECT_EQ(s.table("kernels").rows.size(), 4u);
}

}  // namespace
}  // namespace shardcost::db
