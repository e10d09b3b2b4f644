#pragma once
// The only door to the CUDA runtime. Every handle is an owning, move-only RAII type and every
// call's status is checked, with the call and the source line in the error.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"

namespace shardcost::bench::cuda {

void check(cudaError_t rc, const char* call, const char* file, int line);
#define SC_CUDA(call) ::shardcost::bench::cuda::check((call), #call, __FILE__, __LINE__)

// Why no device can be used ("no CUDA driver", "no CUDA device"), or empty when one can.
std::string why_no_device();
int device_count();            // 0 when there is no driver or device
void use_device(int ordinal);  // throws a one-line error naming the ordinal and the count
void set_device(int ordinal);  // an ordinal already checked: the calling thread's device
int64_t free_bytes();          // the current device's free memory (cudaMemGetInfo)

// Copies and sets. copy: synchronous, either direction (unified addressing); the others are
// enqueued on the stream.
void copy(void* dst, const void* src, int64_t bytes);
void copy_async(void* dst, const void* src, int64_t bytes, cudaStream_t);
void set_async(void* p, int value, int64_t bytes, cudaStream_t);

struct DeviceFree {
  void operator()(void* p) const;
};
struct PinnedFree {
  void operator()(void* p) const;
};
using DeviceBuffer = std::unique_ptr<std::byte[], DeviceFree>;
using PinnedBuffer = std::unique_ptr<std::byte[], PinnedFree>;
DeviceBuffer device_alloc(int64_t bytes);
PinnedBuffer pinned_alloc(int64_t bytes);

class Stream {
 public:
  Stream();
  Stream(Stream&&) noexcept;
  Stream& operator=(Stream&&) = delete;
  ~Stream();
  cudaStream_t get() const { return s_; }
  void sync() const;
  bool done() const;  // all enqueued work finished (cudaStreamQuery); throws on an error

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event();
  Event(Event&&) noexcept;
  Event& operator=(Event&&) = delete;
  ~Event();
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// Per-iteration timing with CUDA events on one or more streams (one per GPU): iteration i
// takes the longest of its streams. Resolved once at the end, so timing never stalls the GPU.
class EventTimer final : public Timer {
 public:
  struct Lane {
    int device;
    cudaStream_t stream;
  };
  explicit EventTimer(std::vector<Lane> lanes);
  void begin(int i) override;
  void end(int i) override;
  std::vector<int64_t> durations_ns(int count) override;

 private:
  void grow(int i);
  std::vector<Lane> lanes_;
  std::vector<std::vector<Event>> begin_, end_;  // [lane][iteration]
};

struct DeviceProps {
  std::string name, uuid, pci_bus, compute_capability;
  int sms = 0, major = 0, minor = 0;
  int64_t memory_bytes = 0, l2_bytes = 0, sm_clock_khz = 0, memory_clock_khz = 0;
};
DeviceProps props(int ordinal);
std::string driver_version();  // "13.0"
std::string runtime_version();

// Kernels (kernels.cu).
void launch_fill_f32(float* out, int64_t count, uint32_t seed, cudaStream_t);  // j/8, j in -8..8
void launch_convert(const float* in, void* out, int64_t count, const std::string& dtype,
                    cudaStream_t);
void launch_convert_from_f32(const float* in, void* out, int64_t count,
                             const std::string& nccl_dtype, cudaStream_t);
void launch_convert_to_f32(const void* in, float* out, int64_t count, const std::string& nccl_dtype,
                           cudaStream_t);
void launch_read(const void* data, int64_t bytes, unsigned long long* sum, cudaStream_t);
void launch_write(void* data, int64_t bytes, uint32_t value, cudaStream_t);

}  // namespace shardcost::bench::cuda
