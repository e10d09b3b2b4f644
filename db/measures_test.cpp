// The store side of compare: measurements with their samples, kernels keyed by launch, runs.
#include "shardcost/measures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "shardcost/error.h"

namespace shardcost::db {
namespace {

TEST(Measures, StoreRoundTripKeepsSamplesAndFindsRuns) {
  const std::string path = ::testing::TempDir() + "/compare_test.db";
  std::remove(path.c_str());
  Measurements m;
  m.run.uuid = "aaaa-1111";
  m.devices.push_back({});
  m.devices[0].name = "cpu";
  GemmRecord g;
  g.dtype = "fp32";
  g.m = g.n = g.k = 64;
  g.time_ns = 1000;
  g.iterations = 3;
  g.samples_ns = {990, 1000, 1010};
  m.gemms.push_back(g);
  m.memory.push_back({0, "copy", 4096, 500, 490, 510, 2, {495, 505}});
  Store s = Store::open(path, Store::Mode::read_write);
  s.write(m);
  m.run.uuid = "bbbb-2222";
  m.gemms[0].samples_ns.clear();
  s.write(m);
  auto rows = load_measures(s, "gemm");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].samples_ns, (std::vector<int64_t>{990, 1000, 1010}));
  EXPECT_TRUE(rows[1].samples_ns.empty());
  EXPECT_EQ(load_measures(s, "memory", 2).at(0).samples_ns, (std::vector<int64_t>{495, 505}));
  EXPECT_EQ(rows[0].label(), "device=cpu dtype=fp32 m=64 n=64 k=64 batch=1");
  EXPECT_EQ(resolve_run(s, "2").uuid, "bbbb-2222");
  EXPECT_EQ(resolve_run(s, "aaaa").id, 1);
  EXPECT_THROW(resolve_run(s, "cccc"), InputError);
  EXPECT_THROW(load_measures(s, "runs"), InputError);
}

TEST(Measures, KernelsAreKeyedByNameAndLaunchConfiguration) {
  const std::string path = ::testing::TempDir() + "/compare_kernels_test.db";
  std::remove(path.c_str());
  Measurements m;
  m.run.uuid = "kkkk-1111";
  m.devices.push_back({});
  m.devices[0].name = "gpu";
  m.names = {"gemm"};
  // One kernel name on two grids, plus a launch the trace did not record.
  m.kernels.push_back({0, 7, EventKind::kernel, 0, 0, 100, 0, {132, 1, 1, 256, 1, 1}});
  m.kernels.push_back({0, 7, EventKind::kernel, 0, 200, 110, 0, {132, 1, 1, 256, 1, 1}});
  m.kernels.push_back({0, 7, EventKind::kernel, 0, 400, 900, 0, {264, 1, 1, 256, 1, 1}});
  m.kernels.push_back({0, 7, EventKind::kernel, 0, 1400, 50, 0, {}});
  Store s = Store::open(path, Store::Mode::read_write);
  s.write(m);
  const auto rows = load_measures(s, "kernels");
  ASSERT_EQ(rows.size(), 3u);
  std::vector<std::string> labels;
  for (const auto& r : rows) labels.push_back(r.label());
  std::sort(labels.begin(), labels.end());
  EXPECT_EQ(labels, (std::vector<std::string>{
                        "device=gpu kind=kernel name=gemm",
                        "device=gpu kind=kernel name=gemm grid=132x1x1 block=256x1x1",
                        "device=gpu kind=kernel name=gemm grid=264x1x1 block=256x1x1"}));
  for (const auto& r : rows)
    if (r.label().find("132x1x1") != std::string::npos) {
      EXPECT_EQ(r.samples_ns, (std::vector<int64_t>{100, 110}));
    }
}

}  // namespace
}  // namespace shardcost::db
