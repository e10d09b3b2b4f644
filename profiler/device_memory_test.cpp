// The GPU memory benchmark's logic against host memory standing in for the device, and a
// device whose copies stop halfway, which the check must count byte by byte.
#include "device_memory.h"

#include <gtest/gtest.h>

#include <cstring>

#include "shardcost/error.h"

namespace shardcost::bench {
namespace {

class FakeGpu final : public MemoryDevice {
 public:
  bool half_copies = false;
  int passes = 0;
  Buffer device_alloc(int64_t bytes) override { return host(bytes); }
  int64_t free_bytes() const override { return int64_t{1} << 40; }
  Buffer host_alloc(int64_t bytes) override { return host(bytes); }
  void copy(std::byte* dst, const std::byte* src, int64_t bytes) override {
    ++passes;
    std::memcpy(dst, src, static_cast<size_t>(half_copies ? bytes / 2 : bytes));
  }
  void set(std::byte* p, int value, int64_t bytes) override {
    std::memset(p, value, static_cast<size_t>(bytes));
  }
  void read(const std::byte* p, int64_t bytes, std::byte* sum) override {
    ++passes;
    unsigned long long s = 0;
    for (int64_t i = 0; i < bytes / 4; ++i) {
      uint32_t w;
      std::memcpy(&w, p + 4 * i, 4);
      s += w;
    }
    std::memcpy(sum, &s, 8);
  }
  void write(std::byte* p, int64_t bytes, uint32_t value) override {
    ++passes;
    for (int64_t i = 0; i < bytes / 4; ++i) std::memcpy(p + 4 * i, &value, 4);
  }
  void sync() override {}
  void download(void* host, const std::byte* src, int64_t bytes) override {
    std::memcpy(host, src, static_cast<size_t>(bytes));
  }

 private:
  static Buffer host(int64_t bytes) {
    return Buffer(new std::byte[static_cast<size_t>(bytes)](), [](std::byte* p) { delete[] p; });
  }
};

TEST(DeviceMemory, EveryKindChecksCleanOnePassPerIteration) {
  for (const char* kind : {"copy_d2d", "copy_h2d", "copy_d2h", "memset", "read", "write"}) {
    FakeGpu gpu;
    DeviceMemory bench(gpu, kind, 4099);  // rounded down to 4096
    EXPECT_EQ(bench.checked_elements(), 4096);
    HostTimer timer;
    Timing t;
    t.warmup = 1;
    t.iterations = 4;
    const Measured m = measure(bench, timer, t);
    EXPECT_EQ(m.wrong, 0) << kind;
    if (std::string(kind) != "memset") {
      EXPECT_EQ(gpu.passes, 1 + 4 + 1) << kind;
    }
  }
}

TEST(DeviceMemory, ACopyThatStopsHalfwayIsCountedByTheByte) {
  for (const char* kind : {"copy_d2d", "copy_h2d", "copy_d2h"}) {
    FakeGpu gpu;
    gpu.half_copies = true;
    DeviceMemory bench(gpu, kind, 1024);
    EXPECT_EQ(bench.check(), 512) << kind;
  }
  FakeGpu gpu;
  EXPECT_THROW(DeviceMemory(gpu, "read", 15), InputError);
}

}  // namespace
}  // namespace shardcost::bench
