// The GPU memory benchmark's logic over MemoryDevice (device_memory.h).
#include "device_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "host_buffers.h"
#include "shardcost/error.h"

namespace shardcost::bench {

DeviceMemory::DeviceMemory(MemoryDevice& dev, std::string kind, int64_t bytes)
    : dev_(dev), kind_(std::move(kind)), bytes_(bytes / 16 * 16) {
  if (bytes_ < 16) throw InputError(fmt::format("memory size {} must be at least 16 bytes", bytes));
  const std::string what = fmt::format("memory {} of {} bytes", kind_, bytes_);
  check_room(2 * bytes_ + 8, dev_.free_bytes(), what, "device");
  check_room(bytes_, host_available_bytes(), what, "host");
  dev_a_ = dev_.device_alloc(bytes_);
  dev_b_ = dev_.device_alloc(bytes_);
  host_ = dev_.host_alloc(bytes_);
  sum_ = dev_.device_alloc(8);
  std::memset(host_.get(), 3, static_cast<size_t>(bytes_));
  dev_.set(dev_a_.get(), 1, bytes_);
  dev_.sync();
}

std::string device_memory_kernel(const std::string& kind) {
  if (kind.rfind("copy_", 0) == 0) return "cudaMemcpyAsync";
  if (kind == "memset") return "cudaMemsetAsync";
  return kind == "read" ? "read_pass" : "write_pass";
}

void DeviceMemory::run(int iteration) {
  if (kind_ == "copy_d2d")
    dev_.copy(dev_b_.get(), dev_a_.get(), bytes_);
  else if (kind_ == "copy_h2d")
    dev_.copy(dev_b_.get(), host_.get(), bytes_);
  else if (kind_ == "copy_d2h")
    dev_.copy(host_.get(), dev_a_.get(), bytes_);
  else if (kind_ == "memset")
    dev_.set(dev_b_.get(), iteration & 0xff, bytes_);
  else if (kind_ == "read")
    dev_.read(dev_a_.get(), bytes_, sum_.get());
  else
    dev_.write(dev_b_.get(), bytes_, 0x02020202u);
}

int64_t DeviceMemory::check() {
  dev_.set(sum_.get(), 0, 8);
  dev_.set(dev_b_.get(), 0, bytes_);
  if (kind_ == "copy_d2h") std::memset(host_.get(), 0, static_cast<size_t>(bytes_));
  run(5);
  dev_.sync();
  if (kind_ == "read") {
    unsigned long long sum = 0;
    dev_.download(&sum, sum_.get(), 8);
    return sum == static_cast<unsigned long long>(bytes_ / 4) * 0x01010101ull ? 0 : 1;
  }
  std::vector<unsigned char> out(static_cast<size_t>(bytes_));
  const std::byte* src = kind_ == "copy_d2h" ? host_.get() : dev_b_.get();
  dev_.download(out.data(), src, bytes_);
  const unsigned char want = kind_ == "copy_d2d" || kind_ == "copy_d2h" ? 1
                             : kind_ == "copy_h2d"                      ? 3
                             : kind_ == "memset"                        ? 5
                                                                        : 2;
  return std::count_if(out.begin(), out.end(), [&](unsigned char c) { return c != want; });
}

}  // namespace shardcost::bench
