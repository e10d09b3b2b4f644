#pragma once
// The GPU memory benchmark's logic, CUDA-free: two device buffers and a pinned host one, one
// copy, set, read or write pass per iteration, and the check of every byte (of the 32-bit
// words' sum for read). The device is behind MemoryDevice: CUDA in cuda/cuda_bench.cpp, host
// memory in device_memory_test.cpp.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "harness.h"

namespace shardcost::bench {

class MemoryDevice {
 public:
  using Buffer = std::unique_ptr<std::byte[], std::function<void(std::byte*)>>;
  virtual ~MemoryDevice() = default;
  virtual Buffer device_alloc(int64_t bytes) = 0;
  virtual Buffer host_alloc(int64_t bytes) = 0;  // pinned
  virtual int64_t free_bytes() const = 0;        // device memory free now
  // Enqueued: a copy either way, a byte set, a read pass adding the 32-bit words into *sum (on
  // the device), a write pass of one 32-bit value.
  virtual void copy(std::byte* dst, const std::byte* src, int64_t bytes) = 0;
  virtual void set(std::byte* p, int value, int64_t bytes) = 0;
  virtual void read(const std::byte* p, int64_t bytes, std::byte* sum) = 0;
  virtual void write(std::byte* p, int64_t bytes, uint32_t value) = 0;
  virtual void sync() = 0;
  virtual void download(void* host, const std::byte* src, int64_t bytes) = 0;
};

// What moves the bytes of a device memory benchmark of `kind`: cudaMemcpyAsync for the copies,
// cudaMemsetAsync for memset, this library's read_pass and write_pass kernels (16-byte loads
// and stores) for read and write.
std::string device_memory_kernel(const std::string& kind);

class DeviceMemory final : public Benchmark {
 public:
  // kind: copy_d2d copy_h2d copy_d2h memset read write; bytes rounded down to 16 (at least 16).
  DeviceMemory(MemoryDevice&, std::string kind, int64_t bytes);
  void run(int iteration) override;
  int64_t check() override;
  int64_t checked_elements() const override { return bytes_; }

 private:
  MemoryDevice& dev_;
  std::string kind_;
  int64_t bytes_;
  MemoryDevice::Buffer dev_a_, dev_b_, sum_, host_;
};

}  // namespace shardcost::bench
