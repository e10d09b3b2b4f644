// The real parser over buffers built in memory from the installed headers' record structs.
#include "activity_parser.h"

#include <gtest/gtest.h>

#include <cstring>

namespace shardcost::trace {
namespace {

KernelRecord kernel(const char* name, uint64_t start, uint64_t end, uint32_t stream) {
  KernelRecord r;
  std::memset(&r, 0, sizeof r);
  r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  r.name = name;
  r.start = start, r.end = end, r.deviceId = 1, r.contextId = 5, r.streamId = stream;
  r.correlationId = 99, r.gridX = 128, r.gridY = 2, r.gridZ = 1, r.blockX = 256, r.blockY = 1,
  r.blockZ = 1;
  return r;
}

TEST(ActivityParser, EveryRecordKindItReads) {
  PackedBuffer buf;
  std::string gemm = "sm90_xmma_gemm_bf16bf16_bf16f32";
  buf.add(kernel(gemm.c_str(), 100, 200, 7));
  // Same text at another address: one name, not two.
  std::string gemm_copy = gemm;
  buf.add(kernel(gemm_copy.c_str(), 300, 350, 7));
  MemcpyRecord cp;
  std::memset(&cp, 0, sizeof cp);
  cp.kind = CUPTI_ACTIVITY_KIND_MEMCPY, cp.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  cp.bytes = 4096, cp.start = 400, cp.end = 450, cp.deviceId = 1, cp.contextId = 5, cp.streamId = 7;
  buf.add(cp);
  MemsetRecord ms;
  std::memset(&ms, 0, sizeof ms);
  ms.kind = CUPTI_ACTIVITY_KIND_MEMSET, ms.bytes = 64, ms.start = 460, ms.end = 470,
  ms.deviceId = 1, ms.streamId = 7;
  buf.add(ms);
  SyncRecord sy;
  std::memset(&sy, 0, sizeof sy);
  sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
  sy.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  sy.start = 200, sy.end = 400, sy.contextId = 5, sy.streamId = 7;
  buf.add(sy);
  ApiRecord api;
  std::memset(&api, 0, sizeof api);
  api.kind = CUPTI_ACTIVITY_KIND_RUNTIME, api.cbid = 211, api.start = 90, api.end = 95,
  api.threadId = 31;
  buf.add(api);
  DeviceRecord dev;
  std::memset(&dev, 0, sizeof dev);
  dev.kind = CUPTI_ACTIVITY_KIND_DEVICE, dev.id = 1, dev.name = "NVIDIA H200";
  dev.computeCapabilityMajor = 9, dev.numMultiprocessors = 132, dev.globalMemorySize = 141ull << 30;
  dev.uuid.bytes[0] = static_cast<char>(0xab);
  buf.add(dev);
  ContextRecord ctx;
  std::memset(&ctx, 0, sizeof ctx);
  ctx.kind = CUPTI_ACTIVITY_KIND_CONTEXT, ctx.contextId = 5, ctx.deviceId = 1;
  buf.add(ctx);

  ActivityParser parser([](uint32_t cbid) { return "cbid" + std::to_string(cbid); });
  file::Batch b;
  EXPECT_EQ(parser.parse(PackedWalker(), buf.data(), buf.size(), b), 8u);
  ASSERT_EQ(b.events.size(), 6u);
  EXPECT_EQ(b.events[0].name, b.events[1].name);
  EXPECT_EQ(b.new_names[0], gemm);
  EXPECT_EQ(b.events[0].grid[0], 128);
  EXPECT_EQ(b.events[0].block[0], 256);
  EXPECT_EQ(b.events[0].start_ns, 100u);
  EXPECT_EQ(b.events[0].end_ns, 200u);
  EXPECT_EQ(b.events[0].stream, 7u);
  EXPECT_EQ(b.events[0].device, 1u);
  EXPECT_EQ(b.new_names[b.events[2].name], "memcpy HtoD");
  EXPECT_EQ(b.events[2].bytes, 4096u);
  EXPECT_EQ(b.events[3].kind, file::RawKind::memset);
  EXPECT_EQ(b.events[4].kind, file::RawKind::sync);
  EXPECT_EQ(b.events[4].device, file::kNoDevice);
  EXPECT_EQ(b.new_names[b.events[4].name], "stream synchronize");
  EXPECT_EQ(b.new_names[b.events[5].name], "cbid211");
  EXPECT_EQ(b.events[5].stream, 31u);
  ASSERT_EQ(b.devices.size(), 1u);
  EXPECT_EQ(b.devices[0].name, "NVIDIA H200");
  EXPECT_EQ(b.devices[0].uuid.substr(0, 6), "GPU-ab");
  EXPECT_EQ(b.devices[0].sms, 132u);
  ASSERT_EQ(b.contexts.size(), 1u);
  EXPECT_EQ(b.contexts[0].second, 1u);

  // A second buffer adds only the names it has not seen.
  buf.clear();
  buf.add(kernel(gemm.c_str(), 500, 600, 7));
  buf.add(kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 500, 700, 13));
  file::Batch next;
  parser.parse(PackedWalker(), buf.data(), buf.size(), next);
  ASSERT_EQ(next.new_names.size(), 1u);
  EXPECT_EQ(next.first_new_name, b.new_names.size());
  EXPECT_EQ(next.events[1].name, next.first_new_name);
}

TEST(ActivityParser, UnknownKindsAreSkippedNotFatal) {
  PackedBuffer buf;
  buf.add(kernel("k", 1, 2, 7));
  CUpti_ActivityOverhead3 overhead;
  std::memset(&overhead, 0, sizeof overhead);
  overhead.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  buf.add(overhead);  // PackedWalker stops at kinds it cannot size
  ActivityParser parser;
  file::Batch b;
  EXPECT_EQ(parser.parse(PackedWalker(), buf.data(), buf.size(), b), 1u);
  EXPECT_EQ(b.events.size(), 1u);
  EXPECT_EQ(parser.parse(PackedWalker(), buf.data(), 0, b), 0u);
}

}  // namespace
}  // namespace shardcost::trace

namespace shardcost::trace {
namespace {

MarkerRecord marker(uint32_t id, CUpti_ActivityFlag flag, uint64_t t, const char* name) {
  MarkerRecord r;
  std::memset(&r, 0, sizeof r);
  r.kind = CUPTI_ACTIVITY_KIND_MARKER;
  r.flags = flag;
  r.timestamp = t;
  r.id = id;
  r.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  r.objectId.pt.processId = 10, r.objectId.pt.threadId = 42;
  r.name = name;
  return r;
}

// NVTX ranges: a start names the range, its end (same id, no name) closes it, possibly in a
// later buffer; an end whose start came before tracing, and instantaneous marks, are no events.
TEST(ActivityParser, NvtxRangesPairTheirStartAndEnd) {
  ActivityParser p;
  PackedBuffer first;
  first.add(marker(1, CUPTI_ACTIVITY_FLAG_MARKER_START, 1000, "ProfilerStep#7"));
  first.add(marker(2, CUPTI_ACTIVITY_FLAG_MARKER_START, 1100, "forward"));
  first.add(marker(2, CUPTI_ACTIVITY_FLAG_MARKER_END, 1500, nullptr));
  first.add(marker(9, CUPTI_ACTIVITY_FLAG_MARKER_END, 1600, nullptr));
  first.add(marker(3, CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 1700, "checkpoint"));
  file::Batch a;
  EXPECT_EQ(p.parse(PackedWalker(), first.data(), first.size(), a), 5u);
  ASSERT_EQ(a.events.size(), 1u);
  EXPECT_EQ(a.events[0].kind, file::RawKind::range);
  EXPECT_EQ(a.new_names[a.events[0].name - a.first_new_name], "forward");
  EXPECT_EQ(a.events[0].start_ns, 1100u);
  EXPECT_EQ(a.events[0].end_ns, 1500u);
  EXPECT_EQ(a.events[0].stream, 42u);
  EXPECT_EQ(p.open_ranges(), 1u);  // the step is still open

  PackedBuffer second;
  second.add(marker(1, CUPTI_ACTIVITY_FLAG_MARKER_END, 9000, nullptr));
  file::Batch b;
  p.parse(PackedWalker(), second.data(), second.size(), b);
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_EQ(a.new_names[b.events[0].name - a.first_new_name], "ProfilerStep#7");
  EXPECT_EQ(b.events[0].start_ns, 1000u);
  EXPECT_EQ(b.events[0].end_ns, 9000u);
  EXPECT_EQ(p.open_ranges(), 0u);
}

}  // namespace
}  // namespace shardcost::trace
