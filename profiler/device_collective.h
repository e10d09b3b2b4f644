#pragma once
// The NCCL collective benchmark's logic, CUDA-free: each lane's buffers, inputs placed where
// NCCL reads them (in place at the offsets it documents), one grouped launch per iteration, a
// bounded wait, the check against expected values. The device and the library are behind
// CollectiveLanes: CUDA and NCCL in cuda/nccl_bench.cpp, host memory and a fake multi-rank
// NCCL in the tests (device_collective_test.cpp).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collective_check.h"
#include "harness.h"
#include "shardcost/profiler.h"

namespace shardcost::bench {

// The lanes (one GPU and one rank each) one process drives, and the library between them.
class CollectiveLanes {
 public:
  using Buffer = std::unique_ptr<std::byte[], std::function<void(std::byte*)>>;
  virtual ~CollectiveLanes() = default;
  virtual int lanes() const = 0;
  virtual int rank(int lane) const = 0;
  virtual int ranks() const = 0;  // across every process
  virtual int64_t type_size(const std::string& dtype) const = 0;
  // Device memory of a lane, and what the lane's GPU has free now.
  virtual Buffer alloc(int lane, int64_t bytes) = 0;
  virtual int64_t free_bytes(int lane) const = 0;
  // Host values converted to dtype, written at dst; and read back from src as floats.
  virtual void upload(int lane, const std::vector<float>& values, std::byte* dst,
                      const std::string& dtype) = 0;
  virtual std::vector<float> download(int lane, const std::byte* src, int64_t count,
                                      const std::string& dtype) = 0;
  virtual void zero(int lane, std::byte* p, int64_t bytes) = 0;
  virtual void copy(int lane, std::byte* dst, const std::byte* src, int64_t bytes) = 0;
  // One collective, each lane's part enqueued between group_start and group_end.
  virtual void group_start() = 0;
  virtual void group_end() = 0;
  virtual void enqueue(int lane, const std::string& op, const void* send, void* recv,
                       int64_t send_count, int64_t recv_count, const std::string& dtype,
                       const std::string& redop, int root) = 0;
  // Waits for every lane's work; false when the deadline passed first.
  virtual bool wait(std::chrono::steady_clock::time_point deadline) = 0;
  // After a hang: the communicators aborted, nothing left to wait for.
  virtual void abort() = 0;
};

// What multi-process runs add: a barrier before each iteration and the ranks' agreement
// (MPI in the real benchmark; absent for one process).
struct RankGroup {
  std::function<void()> barrier;
  std::function<int(int)> min_all;
  std::function<void(std::vector<int64_t>&)> max_all;
  std::function<int64_t(int64_t)> sum_all;
};

class DeviceCollective final : public Benchmark {
 public:
  DeviceCollective(const CollectiveOptions&, std::string op, int64_t bytes, CollectiveLanes&,
                   RankGroup group = {});
  const CollectiveLayout& layout() const { return layout_; }
  // In place as asked, except for the point-to-point ops (alltoall's and sendrecv's grouped
  // sends and receives on one buffer would race): those run out of place, and say so.
  bool in_place() const { return in_place_; }
  void prepare(int) override;
  void run(int) override;
  void finish() override;  // throws Error after aborting the communicators on a hang
  int agree(int n) override { return group_.min_all ? group_.min_all(n) : n; }
  void combine(std::vector<int64_t>& ns) override {
    if (group_.max_all) group_.max_all(ns);
  }
  int64_t check() override;
  int64_t checked_elements() const override;

 private:
  void fill();
  // This lane's send and receive pointers for this run.
  std::pair<const std::byte*, std::byte*> pointers(int lane) const;

  const CollectiveOptions& o_;
  std::string op_;
  CollectiveLanes& lanes_;
  RankGroup group_;
  bool in_place_ = false;
  int64_t ts_ = 4;
  CollectiveLayout layout_;
  std::vector<CollectiveLanes::Buffer> send_, recv_;
};

}  // namespace shardcost::bench
