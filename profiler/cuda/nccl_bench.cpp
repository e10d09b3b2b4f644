// NCCL collectives: one process driving --gpus local GPUs, or one GPU per MPI rank (the rank's
// local rank on its node) with MPI bootstrapping the communicator. The benchmark's logic is
// device_collective.cpp's; this file is its CUDA and NCCL lanes. Hung collectives and hung
// setup (the MPI broadcast and barriers) are bounded: polled and aborted, or the watchdog.
#include <fmt/format.h>

#include <thread>

#include "backends.h"
#include "collective_check.h"
#include "cuda/cuda_api.h"
#include "cuda/nccl_api.h"
#include "device_collective.h"
#include "mpi_api.h"
#include "result_records.h"
#include "shardcost/error.h"
#include "stop.h"
#include "watchdog.h"

namespace shardcost::bench {
namespace {

struct Lane {
  int device = 0, rank = 0;
  cuda::Stream stream;
  cuda::DeviceBuffer scratch;  // floats, for conversions
  int64_t scratch_bytes = 0;
};

class NcclLanes final : public CollectiveLanes {
 public:
  NcclLanes(std::vector<Lane>& lanes, std::vector<cuda::Comm>& comms, int ranks)
      : lanes_(lanes), comms_(comms), ranks_(ranks) {}
  int lanes() const override { return static_cast<int>(lanes_.size()); }
  int rank(int lane) const override { return at(lane).rank; }
  int ranks() const override { return ranks_; }
  int64_t type_size(const std::string& dtype) const override {
    return static_cast<int64_t>(cuda::nccl_type_size(dtype));
  }
  int64_t free_bytes(int lane) const override {
    cuda::set_device(at(lane).device);
    return cuda::free_bytes();
  }
  Buffer alloc(int lane, int64_t bytes) override {
    cuda::set_device(at(lane).device);
    cuda::DeviceBuffer b = cuda::device_alloc(bytes);
    return Buffer(b.release(), [](std::byte* p) { cuda::DeviceFree()(p); });
  }
  void upload(int lane, const std::vector<float>& values, std::byte* dst,
              const std::string& dtype) override {
    Lane& l = at(lane);
    float* scratch = scratch_for(l, static_cast<int64_t>(values.size()));
    cuda::copy(scratch, values.data(), static_cast<int64_t>(values.size() * 4));
    cuda::launch_convert_from_f32(scratch, dst, static_cast<int64_t>(values.size()), dtype,
                                  l.stream.get());
    l.stream.sync();
  }
  std::vector<float> download(int lane, const std::byte* src, int64_t count,
                              const std::string& dtype) override {
    Lane& l = at(lane);
    float* scratch = scratch_for(l, count);
    cuda::launch_convert_to_f32(src, scratch, count, dtype, l.stream.get());
    l.stream.sync();
    std::vector<float> out(static_cast<size_t>(count));
    cuda::copy(out.data(), scratch, static_cast<int64_t>(out.size() * 4));
    return out;
  }
  void zero(int lane, std::byte* p, int64_t bytes) override {
    Lane& l = at(lane);
    cuda::set_device(l.device);
    cuda::set_async(p, 0, bytes, l.stream.get());
    l.stream.sync();
  }
  void copy(int lane, std::byte* dst, const std::byte* src, int64_t bytes) override {
    cuda::set_device(at(lane).device);
    cuda::copy(dst, src, bytes);
  }
  void group_start() override { cuda::group_start(); }
  void group_end() override { cuda::group_end(); }
  void enqueue(int lane, const std::string& op, const void* send, void* recv, int64_t send_count,
               int64_t recv_count, const std::string& dtype, const std::string& redop,
               int root) override {
    Lane& l = at(lane);
    cuda::set_device(l.device);
    cuda::enqueue(op, send, recv, send_count, recv_count, dtype, redop, root, l.rank, ranks_,
                  comms_[static_cast<size_t>(lane)].get(), l.stream.get());
  }
  bool wait(std::chrono::steady_clock::time_point deadline) override {
    for (auto& l : lanes_) {
      cuda::set_device(l.device);
      while (!l.stream.done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    return true;
  }
  void abort() override {
    for (auto& c : comms_) c.abort();
  }

 private:
  Lane& at(int lane) const { return lanes_[static_cast<size_t>(lane)]; }
  float* scratch_for(Lane& l, int64_t count) {
    cuda::set_device(l.device);
    if (l.scratch_bytes < count * 4) {
      l.scratch = cuda::device_alloc(count * 4);
      l.scratch_bytes = count * 4;
    }
    return reinterpret_cast<float*>(l.scratch.get());
  }
  std::vector<Lane>& lanes_;
  std::vector<cuda::Comm>& comms_;
  int ranks_;
};

RankGroup mpi_group() {
  return {[] { mpi::barrier(); }, [](int n) { return mpi::min_all(n); },
          [](std::vector<int64_t>& v) { mpi::max_all(v); },
          [](int64_t n) { return mpi::sum_all(n); }};
}

}  // namespace

CollectiveReport nccl_bench_collective(const CollectiveOptions& o, const Progress& progress) {
  for (const auto& op : o.ops) bus_factor(op, 1);
  cuda::nccl_type(o.dtype);
  cuda::nccl_op(o.redop);
  check_timeout(o.timeout_s);
  // No device is selected before this rank's own is known: since CUDA 12, selecting one
  // creates a context on it, and every rank would hold one on GPU 0.
  const std::string why = cuda::why_no_device();
  if (!why.empty())
    throw Error(fmt::format("no CUDA device: {}; use --backend mpi for host collectives", why));
  const int visible = cuda::device_count();
  // Under mpirun/srun with several ranks: one GPU per rank; otherwise --gpus GPUs here.
  const bool mp = mpi::available() && o.gpus == 0 &&
                  (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") ||
                   std::getenv("SLURM_NTASKS"));
  int rank = 0, ranks = mp ? mpi::world().size : std::max(1, o.gpus);
  if (!mp && ranks > visible)
    throw InputError(fmt::format("--gpus {} but this machine has {} CUDA devices", ranks, visible));
  if (o.root < 0 || o.root >= ranks)
    throw InputError(fmt::format("--root {} is not a rank (0..{})", o.root, ranks - 1));
  // The setup's MPI calls wait on every rank: bounded like the collectives.
  Watchdog dog(o.on_timeout, [] { mpi::abort(3); });
  std::vector<Lane> lanes;
  std::vector<cuda::Comm> comms;
  if (mp) {
    const mpi::World& w = mpi::world();
    rank = w.rank;
    Lane l;
    l.device = rank_device(w.local_rank, w.local_size, visible);
    l.rank = rank;
    cuda::use_device(l.device);
    lanes.push_back(std::move(l));
    dog.arm(o.timeout_s, fmt::format("NCCL setup over {} ranks (MPI broadcast of the id)", ranks));
    ncclUniqueId id{};
    if (rank == 0) id = cuda::unique_id();
    mpi::broadcast(&id, sizeof(id) / 4, mpi::Type::i32, 0);
    comms.push_back(cuda::init_rank(id, ranks, rank));
    dog.disarm();
  } else {
    std::vector<int> devices;
    for (int d = 0; d < ranks; ++d) {
      cuda::use_device(d);
      Lane l;
      l.device = d;
      l.rank = d;
      lanes.push_back(std::move(l));
      devices.push_back(d);
    }
    comms = cuda::init_all(devices);
  }
  CollectiveReport report;
  report.rank = rank;
  report.ranks = ranks;
  report.nodes = mp ? mpi::world().nodes : 1;
  report.fabric_level = report.nodes > 1 ? "inter_node" : "intra_node";
  report.library_version = "nccl " + cuda::nccl_version();
  report.device = cuda_device_record(lanes.front().device);
  std::vector<cuda::EventTimer::Lane> timer_lanes;
  for (auto& l : lanes) timer_lanes.push_back({l.device, l.stream.get()});
  NcclLanes fabric(lanes, comms, ranks);
  report.planned = o.ops.size() * o.sizes.size();
  for (const auto& op : o.ops) {
    for (const int64_t bytes : o.sizes) {
      if (stop_before_next(report, mp)) return report;
      DeviceCollective bench(o, op, bytes, fabric, mp ? mpi_group() : RankGroup{});
      const std::string what =
          fmt::format("NCCL {} of {} bytes over {} ranks", op, bench.layout().bytes, ranks);
      if (progress && rank == 0) progress(what);
      // The per-iteration barriers and agreements are MPI calls the stream wait cannot bound.
      if (mp) dog.arm(o.timeout_s, what);
      cuda::EventTimer timer(timer_lanes);
      const Measured m = measure(bench, timer, o.timing);
      dog.disarm();
      report.results.push_back(
          collective_result(o, op, bench.layout(), bench.in_place(), ranks, m));
      checkpoint_last(o.checkpoint, report);
    }
  }
  return report;
}

}  // namespace shardcost::bench
