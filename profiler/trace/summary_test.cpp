#include <gtest/gtest.h>

#include "intervals.h"
#include "shardcost/trace.h"

namespace shardcost::trace {
namespace {

db::Measurements step() {
  db::Measurements m;
  m.devices.resize(1);
  m.names = {"gemm_kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "memcpy HtoD",
             "stream synchronize", "vectorized_elementwise_kernel"};
  auto ev = [](int64_t stream, db::EventKind kind, int32_t name, int64_t start, int64_t dur) {
    db::KernelEvent e;
    e.stream = stream, e.kind = kind, e.name = name, e.start_ns = start, e.duration_ns = dur;
    return e;
  };
  using K = db::EventKind;
  m.kernels = {ev(7, K::kernel, 0, 0, 100),   ev(7, K::kernel, 4, 100, 50),
               ev(13, K::kernel, 1, 80, 100),  // comm [80,180): compute covers [80,150)
               ev(7, K::memcpy, 2, 300, 100), ev(7, K::sync, 3, 180, 120),
               ev(7, K::kernel, 0, 400, 100)};
  return m;
}

TEST(Intervals, MergeAndIntersect) {
  auto a = merge({{0, 10}, {5, 20}, {30, 40}, {40, 45}, {50, 50}});
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(total_length(a), 35);
  auto b = merge({{15, 35}});
  EXPECT_EQ(intersection_length(a, b), 5 + 5);
}

TEST(Summary, ClassesStreamsTopBusyAndOverlap) {
  const Summary s = summarize(step(), 2);
  EXPECT_EQ(s.kernels, 4);
  EXPECT_EQ(s.copies, 1);
  EXPECT_EQ(s.syncs, 1);
  EXPECT_EQ(s.sync_time_ns, 120);
  EXPECT_EQ(s.gpu_time_ns, 100 + 50 + 100 + 100 + 100);
  ASSERT_FALSE(s.classes.empty());
  EXPECT_EQ(s.classes[0].cls, KernelClass::gemm);
  EXPECT_EQ(s.classes[0].time_ns, 200);
  ASSERT_EQ(s.top.size(), 2u);
  EXPECT_EQ(s.top[0].name, "gemm_kernel");
  EXPECT_EQ(s.top[0].count, 2);
  ASSERT_EQ(s.streams.size(), 2u);
  EXPECT_EQ(s.streams[0].stream, 7);
  EXPECT_EQ(s.streams[0].time_ns, 350);
  ASSERT_EQ(s.devices.size(), 1u);
  // Span [0,500); busy: [0,180) + [300,500) = 380 (the sync is a CPU wait, not GPU work).
  EXPECT_EQ(s.devices[0].span_ns, 500);
  EXPECT_EQ(s.devices[0].busy_ns, 380);
  EXPECT_DOUBLE_EQ(s.busy_fraction(), 380.0 / 500.0);
  // HTA: overlapped communication / communication = 70 / 100.
  EXPECT_EQ(s.devices[0].communication_ns, 100);
  EXPECT_EQ(s.devices[0].overlapped_communication_ns, 70);
  EXPECT_DOUBLE_EQ(s.overlap_fraction(), 0.7);
}

TEST(Summary, EmptyTraceHasNoFractions) {
  const Summary s = summarize(db::Measurements{});
  EXPECT_EQ(s.kernels, 0);
  EXPECT_EQ(s.busy_fraction(), 0.0);
  EXPECT_EQ(s.overlap_fraction(), 0.0);
}

}  // namespace
}  // namespace shardcost::trace
