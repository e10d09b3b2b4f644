#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "shardcost/trace.h"

namespace shardcost::trace {
namespace {

TEST(Perfetto, TraceEventFormat) {
  db::Measurements m;
  db::DeviceRecord d;
  d.name = "NVIDIA H100", d.host = "node1", d.index = 0;
  m.devices.push_back(d);
  m.names = {"gemm \"quoted\"\\name\n", "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
             "stream synchronize"};
  m.kernels = {{0, 7, db::EventKind::kernel, 0, 1'000'000'000'000, 2500, 0, {}},
               {0, 13, db::EventKind::kernel, 1, 1'000'000'001'000, 1000, 0, {}},
               {0, 7, db::EventKind::sync, 2, 1'000'000'003'000, 500, 0, {}}};
  const auto j = nlohmann::json::parse(to_perfetto_json(m));
  ASSERT_TRUE(j["traceEvents"].is_array());
  int complete = 0, thread_names = 0, process_names = 0;
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("tid") && e.contains("name"));
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_TRUE(e["ts"].is_number() && e["dur"].is_number());
      EXPECT_TRUE(e.contains("cat"));
    } else if (e["name"] == "thread_name") {
      ++thread_names;
    } else if (e["name"] == "process_name") {
      ++process_names;
      EXPECT_EQ(e["args"]["name"], "GPU 0 NVIDIA H100 (node1)");
    }
  }
  EXPECT_EQ(complete, 3);
  EXPECT_EQ(thread_names, 3);  // stream 7, stream 13, synchronisation
  EXPECT_EQ(process_names, 1);
  const auto& gemm = j["traceEvents"][2];
  EXPECT_EQ(gemm["name"], "gemm \"quoted\"\\name\n");
  EXPECT_EQ(gemm["ts"], 0.0);
  EXPECT_EQ(gemm["dur"], 2.5);
  EXPECT_EQ(gemm["cat"], "gemm");
  const auto& nccl = j["traceEvents"][3];
  EXPECT_EQ(nccl["ts"], 1.0);
  EXPECT_EQ(nccl["args"]["collective"], "all_reduce");
  EXPECT_EQ(nccl["args"]["algorithm"], "ring");
  EXPECT_EQ(nccl["tid"], 13);
}

}  // namespace
}  // namespace shardcost::trace
