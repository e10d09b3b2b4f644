#include "cuda/cuda_api.h"

#include <fmt/format.h>

#include "shardcost/error.h"

namespace shardcost::bench::cuda {

void check(cudaError_t rc, const char* call, const char* file, int line) {
  if (rc == cudaSuccess) return;
  throw Error(fmt::format("{} failed at {}:{}: {} ({})", call, file, line, cudaGetErrorString(rc),
                          cudaGetErrorName(rc)));
}

std::string why_no_device() {
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc == cudaErrorInsufficientDriver)
    return "no CUDA driver (the NVIDIA kernel driver is not installed or is older than CUDA " +
           runtime_version() + " needs)";
  if (rc == cudaErrorNoDevice || (rc == cudaSuccess && n == 0))
    return "no CUDA device visible (check CUDA_VISIBLE_DEVICES and nvidia-smi)";
  if (rc != cudaSuccess) return fmt::format("CUDA unavailable: {}", cudaGetErrorString(rc));
  return "";
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky status
    return 0;
  }
  return n;
}

void use_device(int ordinal) {
  const std::string why = why_no_device();
  if (!why.empty())
    throw Error(fmt::format("no CUDA device: {}; use --device cpu / --backend mpi", why));
  const int n = device_count();
  if (ordinal < 0 || ordinal >= n)
    throw InputError(fmt::format("--gpu {} is not a device of this machine (it has {}: 0..{})",
                                 ordinal, n, n - 1));
  SC_CUDA(cudaSetDevice(ordinal));
}

void DeviceFree::operator()(void* p) const {
  cudaFree(p);
}
void PinnedFree::operator()(void* p) const {
  cudaFreeHost(p);
}

DeviceBuffer device_alloc(int64_t bytes) {
  void* p = nullptr;
  SC_CUDA(cudaMalloc(&p, static_cast<size_t>(bytes)));
  return DeviceBuffer(static_cast<std::byte*>(p));
}

PinnedBuffer pinned_alloc(int64_t bytes) {
  void* p = nullptr;
  SC_CUDA(cudaMallocHost(&p, static_cast<size_t>(bytes)));
  return PinnedBuffer(static_cast<std::byte*>(p));
}

Stream::Stream() {
  SC_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
}
Stream::Stream(Stream&& o) noexcept : s_(o.s_) {
  o.s_ = nullptr;
}
Stream::~Stream() {
  if (s_) cudaStreamDestroy(s_);
}
void Stream::sync() const {
  SC_CUDA(cudaStreamSynchronize(s_));
}

bool Stream::done() const {
  const cudaError_t rc = cudaStreamQuery(s_);
  if (rc == cudaErrorNotReady) return false;
  SC_CUDA(rc);
  return true;
}

void set_device(int ordinal) {
  SC_CUDA(cudaSetDevice(ordinal));
}

int64_t free_bytes() {
  size_t free = 0, total = 0;
  SC_CUDA(cudaMemGetInfo(&free, &total));
  return static_cast<int64_t>(free);
}

void copy(void* dst, const void* src, int64_t bytes) {
  SC_CUDA(cudaMemcpy(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault));
}

void copy_async(void* dst, const void* src, int64_t bytes, cudaStream_t s) {
  SC_CUDA(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault, s));
}

void set_async(void* p, int value, int64_t bytes, cudaStream_t s) {
  SC_CUDA(cudaMemsetAsync(p, value, static_cast<size_t>(bytes), s));
}

Event::Event() {
  SC_CUDA(cudaEventCreate(&e_));
}
Event::Event(Event&& o) noexcept : e_(o.e_) {
  o.e_ = nullptr;
}
Event::~Event() {
  if (e_) cudaEventDestroy(e_);
}

EventTimer::EventTimer(std::vector<Lane> lanes)
    : lanes_(std::move(lanes)), begin_(lanes_.size()), end_(lanes_.size()) {}

void EventTimer::grow(int i) {
  for (size_t l = 0; l < lanes_.size(); ++l) {
    SC_CUDA(cudaSetDevice(lanes_[l].device));
    while (static_cast<int>(begin_[l].size()) <= i) {
      begin_[l].emplace_back();
      end_[l].emplace_back();
    }
  }
}

void EventTimer::begin(int i) {
  grow(i);
  for (size_t l = 0; l < lanes_.size(); ++l) {
    SC_CUDA(cudaSetDevice(lanes_[l].device));
    SC_CUDA(cudaEventRecord(begin_[l][static_cast<size_t>(i)].get(), lanes_[l].stream));
  }
}

void EventTimer::end(int i) {
  for (size_t l = 0; l < lanes_.size(); ++l) {
    SC_CUDA(cudaSetDevice(lanes_[l].device));
    SC_CUDA(cudaEventRecord(end_[l][static_cast<size_t>(i)].get(), lanes_[l].stream));
  }
}

std::vector<int64_t> EventTimer::durations_ns(int count) {
  std::vector<int64_t> out(static_cast<size_t>(count), 0);
  for (size_t l = 0; l < lanes_.size(); ++l) {
    SC_CUDA(cudaSetDevice(lanes_[l].device));
    for (int i = 0; i < count; ++i) {
      const auto ii = static_cast<size_t>(i);
      SC_CUDA(cudaEventSynchronize(end_[l][ii].get()));
      float ms = 0;
      SC_CUDA(cudaEventElapsedTime(&ms, begin_[l][ii].get(), end_[l][ii].get()));
      out[ii] = std::max(out[ii], static_cast<int64_t>(static_cast<double>(ms) * 1e6));
    }
  }
  return out;
}

DeviceProps props(int ordinal) {
  cudaDeviceProp p{};
  SC_CUDA(cudaGetDeviceProperties(&p, ordinal));
  DeviceProps d;
  d.name = p.name;
  d.major = p.major;
  d.minor = p.minor;
  d.compute_capability = fmt::format("{}.{}", p.major, p.minor);
  d.sms = p.multiProcessorCount;
  d.memory_bytes = static_cast<int64_t>(p.totalGlobalMem);
  d.l2_bytes = p.l2CacheSize;
  d.pci_bus = fmt::format("{:04x}:{:02x}:{:02x}.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
  std::string uuid = "GPU-";
  for (int i = 0; i < 16; ++i) {
    uuid += fmt::format("{:02x}", static_cast<unsigned char>(p.uuid.bytes[i]));
    if (i == 3 || i == 5 || i == 7 || i == 9) uuid += '-';
  }
  d.uuid = uuid;
  int clock = 0, mem_clock = 0;
  SC_CUDA(cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, ordinal));
  SC_CUDA(cudaDeviceGetAttribute(&mem_clock, cudaDevAttrMemoryClockRate, ordinal));
  d.sm_clock_khz = clock;
  d.memory_clock_khz = mem_clock;
  return d;
}

namespace {
std::string version_text(int v) {
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}
}  // namespace

std::string driver_version() {
  int v = 0;
  return cudaDriverGetVersion(&v) == cudaSuccess && v > 0 ? version_text(v) : "none";
}

std::string runtime_version() {
  int v = 0;
  return cudaRuntimeGetVersion(&v) == cudaSuccess ? version_text(v) : "unknown";
}

}  // namespace shardcost::bench::cuda
