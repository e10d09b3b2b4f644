// Host memory bandwidth: multi-threaded copy, read and write over buffers larger than cache.
#include <fmt/format.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstring>
#include <thread>

#include "backends.h"
#include "cpu_binding.h"
#include "harness.h"
#include "host_buffers.h"
#include "host_memory_kernels.h"
#include "result_records.h"
#include "shardcost/error.h"
#include "stop.h"
#include "thread_pool.h"

namespace shardcost::bench {
namespace {

constexpr int64_t kAlign = 4096;  // threads split buffers on page boundaries

class HostMemory final : public Benchmark {
 public:
  HostMemory(std::string kind, int64_t bytes, ThreadPool& pool)
      : kind_(std::move(kind)), bytes_(bytes / 8 * 8), pool_(pool) {
    if (bytes_ < 8) throw InputError(fmt::format("memory size {} must be at least 8 bytes", bytes));
    const int64_t set_bytes = kind_ == "copy" ? 2 * bytes_ : bytes_;
    const int sets = rotation_sets(set_bytes);
    check_room(set_bytes * sets, host_available_bytes(),
               fmt::format("memory {} of {} bytes", kind_, bytes_), "host");
    for (int i = 0; i < sets; ++i) {
      src_.push_back(allocate_host(bytes_));
      if (kind_ == "copy") dst_.push_back(allocate_host(bytes_));
    }
    sums_.assign(static_cast<size_t>(pool.size()) * 8, 0);  // 64 bytes apart: no false sharing
    // First touch from the threads that will use the pages (NUMA placement), with a pattern.
    for (size_t s = 0; s < src_.size(); ++s) {
      pool_.run([&](int t) {
        const Range r = share(bytes_, t, pool_.size(), kAlign);
        auto* p = reinterpret_cast<uint64_t*>(src_[s].get());
        for (int64_t i = r.begin / 8; i < r.end / 8; ++i) p[i] = pattern(i);
        if (!dst_.empty())
          std::memset(dst_[s].get() + r.begin, 0, static_cast<size_t>(r.end - r.begin));
      });
    }
    kernel_ = fastest_kernel();
  }

  // The kernel measured: copy and write each try theirs (the C library's, and streaming stores
  // where the CPU has them) on these buffers, and the fastest is kept, so the figure is the
  // platform's best at this size: streaming stores win past the caches on some CPUs (a copy
  // then moves 2 bytes per byte instead of 3), the library's where the data stays in cache.
  const std::string& kernel() const { return kernel_; }

  void prepare(int i) override { set_ = static_cast<size_t>(i) % src_.size(); }

  void run(int iteration) override {
    const size_t s = set_;
    if (kind_ == "copy") {
      pool_.run([&](int t) {
        const Range r = share(bytes_, t, pool_.size(), kAlign);
        copy_kernel(kernel_, dst_[s].get() + r.begin, src_[s].get() + r.begin,
                    static_cast<size_t>(r.end - r.begin));
      });
    } else if (kind_ == "read") {
      pool_.run([&](int t) {
        const Range r = share(bytes_, t, pool_.size(), kAlign);
        sums_[static_cast<size_t>(t) * 8] =
            read_sum4(reinterpret_cast<const uint64_t*>(src_[s].get() + r.begin),
                      static_cast<size_t>(r.end - r.begin) / 8);
      });
    } else {
      const int value = iteration & 0xff;
      pool_.run([&](int t) {
        const Range r = share(bytes_, t, pool_.size(), kAlign);
        write_kernel(kernel_, src_[s].get() + r.begin, value, static_cast<size_t>(r.end - r.begin));
      });
      written_ = value;
    }
  }

  int64_t check() override {
    set_ = 0;
    const int64_t words = bytes_ / 8;
    if (kind_ == "copy") {
      run(0);
      return std::memcmp(src_[0].get(), dst_[0].get(), static_cast<size_t>(bytes_)) == 0 ? 0 : 1;
    }
    if (kind_ == "read") {
      auto* p = reinterpret_cast<uint64_t*>(src_[0].get());
      for (int64_t i = 0; i < words; ++i) p[i] = pattern(i);
      run(0);
      uint64_t got = 0, want = 0;
      for (int t = 0; t < pool_.size(); ++t) got += sums_[static_cast<size_t>(t) * 8];
      for (int64_t i = 0; i < words; ++i) want += pattern(i);
      return got == want ? 0 : 1;
    }
    run(0x5a);
    const auto* p = reinterpret_cast<const unsigned char*>(src_[0].get());
    return std::count_if(p, p + bytes_, [&](unsigned char c) { return c != written_; });
  }
  int64_t checked_elements() const override { return bytes_; }

  // A plain multi-threaded loop of the kind's reference (memcpy, a running sum, a store loop):
  // one std::thread per share, each doing its share of the whole buffer, `iterations` times,
  // all threads meeting at a barrier after each (one copy of the buffer after another, as the
  // harness times them). What the harness must match.
  double baseline_seconds(int iterations) {
    const int threads = pool_.size();
    std::barrier<> each(threads);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        const Range r = share(bytes_, t, threads, kAlign);
        const auto n = static_cast<size_t>(r.end - r.begin);
        for (int i = 0; i < iterations; ++i, each.arrive_and_wait()) {
          const size_t s = static_cast<size_t>(i) % src_.size();
          if (kind_ == "copy") {
            reference_copy(dst_[s].get() + r.begin, src_[s].get() + r.begin, n);
          } else if (kind_ == "read") {
            sums_[static_cast<size_t>(t) * 8] +=
                reference_read(reinterpret_cast<const uint64_t*>(src_[s].get() + r.begin), n / 8);
          } else {
            reference_write(reinterpret_cast<uint64_t*>(src_[s].get() + r.begin),
                            0x0101010101010101ULL * static_cast<uint64_t>(i & 0xff), n / 8);
          }
        }
      });
    }
    for (auto& w : workers) w.join();
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(t1 - t0).count() / iterations;
  }

 private:
  // Each candidate through the harness's own loop: one pass to warm up, then the best of three
  // over the rotation's sets.
  std::string fastest_kernel() {
    const auto kernels = memory_kernels(kind_);
    std::string best(kernels.front());
    int64_t best_ns = 0;
    for (size_t i = 0; kernels.size() > 1 && i < kernels.size(); ++i) {
      kernel_ = std::string(kernels[i]);
      HostTimer timer;
      const std::vector<int64_t> ns = timed_loop(*this, timer, 4);
      const int64_t fastest = *std::min_element(ns.begin() + 1, ns.end());
      if (i == 0 || fastest < best_ns) best_ns = fastest, best = kernel_;
    }
    set_ = 0;
    return best;
  }

  static uint64_t pattern(int64_t i) { return static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ULL; }
  std::string kind_;
  int64_t bytes_;
  ThreadPool& pool_;
  std::vector<HostBuffer> src_, dst_;
  std::vector<uint64_t> sums_;
  size_t set_ = 0;
  int written_ = 0;
  std::string kernel_;
};

}  // namespace

MemoryReport host_bench_memory(const MemoryOptions& opt, const Progress& progress) {
  const auto kinds = memory_kinds("cpu");
  for (const auto& k : opt.kinds) {
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end())
      throw InputError(fmt::format("--op {} is not a host memory benchmark; use one of: {}", k,
                                   fmt::join(kinds, ", ")));
  }
  const Binding binding = resolve_binding(opt.cpus, opt.threads);
  ThreadPool pool(binding.threads, binding.cpus);
  MemoryReport report;
  report.device = host_device_record();
  report.binding = binding.where;
  report.planned = opt.kinds.size() * opt.sizes.size();
  for (const auto& kind : opt.kinds) {
    for (const int64_t bytes : opt.sizes) {
      if (stop_before_next(report, false)) return report;
      if (progress) progress(fmt::format("memory {} {} bytes", kind, bytes));
      HostMemory bench(kind, bytes, pool);
      HostTimer timer;
      const Measured m = measure(bench, timer, opt.timing);
      MemoryResult r = memory_result(kind, bytes / 8 * 8, m);
      r.kernel = bench.kernel();
      if (opt.compare_baseline) {
        r.baseline_gbps = static_cast<double>(r.bytes) /
                          bench.baseline_seconds(static_cast<int>(m.stats.iterations)) / 1e9;
      }
      report.results.push_back(r);
      checkpoint_last(opt.checkpoint, report);
    }
  }
  return report;
}

}  // namespace shardcost::bench
