// NCCL collectives: one process driving --gpus local GPUs, or one GPU per MPI rank with MPI
// bootstrapping the communicator. Hung collectives are bounded: polled, then aborted.
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "backends.h"
#include "collective_check.h"
#include "cuda/cuda_api.h"
#include "cuda/nccl_api.h"
#include "harness.h"
#include "mpi_api.h"
#include "result_records.h"
#include "shardcost/error.h"

namespace shardcost::bench {
namespace {

struct Lane {
  int device = 0, rank = 0;
  cuda::Stream stream;
  cuda::DeviceBuffer send, recv, scratch;
};

class NcclCollective final : public Benchmark {
 public:
  NcclCollective(const CollectiveOptions& o, std::string op, int64_t bytes,
                 std::vector<Lane>& lanes, std::vector<cuda::Comm>& comms, int ranks,
                 bool multi_process)
      : o_(o), op_(std::move(op)), lanes_(lanes), comms_(comms), ranks_(ranks), mp_(multi_process) {
    ts_ = static_cast<int64_t>(cuda::nccl_type_size(o.dtype));
    layout_ = collective_layout(op_, bytes, ts_, ranks);
    const int64_t n = std::max(layout_.send_count, layout_.recv_count);
    for (auto& l : lanes_) {
      SC_CUDA(cudaSetDevice(l.device));
      l.send = cuda::device_alloc(n * ts_);
      l.recv = cuda::device_alloc(n * ts_);
      l.scratch = cuda::device_alloc(n * 4);
    }
    fill();
  }
  const CollectiveLayout& layout() const { return layout_; }
  void prepare(int) override {
    if (mp_) mpi::barrier();
  }
  void run(int) override {
    cuda::group_start();
    for (size_t i = 0; i < lanes_.size(); ++i) {
      Lane& l = lanes_[i];
      SC_CUDA(cudaSetDevice(l.device));
      // In place, both pointers lie in one buffer at the offsets NCCL documents (an all-gather
      // sends from its own slot of the output, a reduce-scatter receives into its slot).
      const InPlaceOffsets at = in_place_offsets(op_, l.rank, layout_, ts_);
      const void* send =
          o_.in_place ? static_cast<const void*>(l.recv.get() + at.send) : l.send.get();
      void* recv = o_.in_place ? static_cast<void*>(l.recv.get() + at.recv) : l.recv.get();
      cuda::enqueue(op_, send, recv, layout_.send_count, layout_.recv_count, o_.dtype, o_.redop,
                    o_.root, l.rank, ranks_, comms_[i].get(), l.stream.get());
    }
    cuda::group_end();
  }
  // Waits with a deadline; a hung collective is aborted and reported instead of hanging.
  void finish() override {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(o_.timeout_s);
    for (auto& l : lanes_) {
      SC_CUDA(cudaSetDevice(l.device));
      for (;;) {
        const cudaError_t rc = cudaStreamQuery(l.stream.get());
        if (rc == cudaSuccess) break;
        if (rc != cudaErrorNotReady) SC_CUDA(rc);
        if (std::chrono::steady_clock::now() > deadline) {
          for (auto& c : comms_) c.abort();
          throw Error(
              fmt::format("NCCL {} of {} bytes over {} ranks did not finish within {:g} s; "
                          "communicators aborted. Check that every rank runs the same command, or "
                          "raise --timeout",
                          op_, layout_.bytes, ranks_, o_.timeout_s));
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }
  int agree(int n) override { return mp_ ? mpi::min_all(n) : n; }
  void combine(std::vector<int64_t>& ns) override {
    if (mp_) mpi::max_all(ns);
  }
  int64_t check() override {
    fill();
    run(0);
    finish();
    int64_t wrong = 0;
    for (auto& l : lanes_) {
      SC_CUDA(cudaSetDevice(l.device));
      std::vector<float> out(static_cast<size_t>(layout_.recv_count));
      const int64_t result_at = o_.in_place ? in_place_offsets(op_, l.rank, layout_, ts_).recv : 0;
      cuda::launch_convert_to_f32(l.recv.get() + result_at,
                                  reinterpret_cast<float*>(l.scratch.get()), layout_.recv_count,
                                  o_.dtype, l.stream.get());
      l.stream.sync();
      SC_CUDA(cudaMemcpy(out.data(), l.scratch.get(), out.size() * 4, cudaMemcpyDeviceToHost));
      for (int64_t i = 0; i < layout_.recv_count; ++i) {
        const auto want = expected_value(op_, o_.redop, ranks_, l.rank, o_.root, i, layout_);
        if (want && out[static_cast<size_t>(i)] != static_cast<float>(*want)) ++wrong;
      }
    }
    return mp_ ? mpi::sum_all(wrong) : wrong;
  }

 private:
  void fill() {
    for (auto& l : lanes_) {
      SC_CUDA(cudaSetDevice(l.device));
      std::vector<float> in(static_cast<size_t>(layout_.send_count));
      for (int64_t i = 0; i < layout_.send_count; ++i)
        in[static_cast<size_t>(i)] = static_cast<float>(input_value(o_.redop, l.rank, i));
      SC_CUDA(cudaMemcpy(l.scratch.get(), in.data(), in.size() * 4, cudaMemcpyHostToDevice));
      cuda::launch_convert_from_f32(reinterpret_cast<float*>(l.scratch.get()), l.send.get(),
                                    layout_.send_count, o_.dtype, l.stream.get());
      SC_CUDA(cudaMemsetAsync(
          l.recv.get(), 0,
          static_cast<size_t>(std::max(layout_.send_count, layout_.recv_count) * ts_),
          l.stream.get()));
      l.stream.sync();
      if (o_.in_place || op_ == "broadcast") {
        // In place, the input sits where NCCL reads it: this rank's slot for all_gather.
        const int64_t offset = o_.in_place ? in_place_offsets(op_, l.rank, layout_, ts_).send : 0;
        SC_CUDA(cudaMemcpy(l.recv.get() + offset, l.send.get(),
                           static_cast<size_t>(layout_.send_count * ts_),
                           cudaMemcpyDeviceToDevice));
      }
    }
  }
  const CollectiveOptions& o_;
  std::string op_;
  std::vector<Lane>& lanes_;
  std::vector<cuda::Comm>& comms_;
  int ranks_;
  bool mp_;
  int64_t ts_ = 4;
  CollectiveLayout layout_;
};

}  // namespace

CollectiveReport nccl_bench_collective(const CollectiveOptions& o, const Progress& progress) {
  for (const auto& op : o.ops) bus_factor(op, 1);
  cuda::nccl_type(o.dtype);
  cuda::nccl_op(o.redop);
  cuda::use_device(0);
  const int visible = cuda::device_count();
  // Under mpirun/srun with several ranks: one GPU per rank; otherwise --gpus GPUs here.
  const bool mp = mpi::available() && o.gpus == 0 &&
                  (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") ||
                   std::getenv("SLURM_NTASKS"));
  int rank = 0, ranks = mp ? mpi::world().size : std::max(1, o.gpus), base = 0;
  if (!mp && ranks > visible)
    throw InputError(fmt::format("--gpus {} but this machine has {} CUDA devices", ranks, visible));
  std::vector<Lane> lanes;
  std::vector<cuda::Comm> comms;
  if (mp) {
    rank = mpi::world().rank;
    base = rank;
    Lane l;
    l.device = rank % visible;
    l.rank = rank;
    SC_CUDA(cudaSetDevice(l.device));
    lanes.push_back(std::move(l));
    ncclUniqueId id{};
    if (rank == 0) id = cuda::unique_id();
    mpi::broadcast(&id, sizeof(id) / 4, mpi::Type::i32, 0);
    comms.push_back(cuda::init_rank(id, ranks, rank));
  } else {
    std::vector<int> devices;
    for (int d = 0; d < ranks; ++d) {
      SC_CUDA(cudaSetDevice(d));
      Lane l;
      l.device = d;
      l.rank = d;
      lanes.push_back(std::move(l));
      devices.push_back(d);
    }
    comms = cuda::init_all(devices);
  }
  (void)base;
  if (o.root < 0 || o.root >= ranks)
    throw InputError(fmt::format("--root {} is not a rank (0..{})", o.root, ranks - 1));
  CollectiveReport report;
  report.rank = rank;
  report.ranks = ranks;
  report.nodes = mp ? mpi::world().nodes : 1;
  report.fabric_level = report.nodes > 1 ? "inter_node" : "intra_node";
  report.library_version = "nccl " + cuda::nccl_version();
  report.device = cuda_device_record(lanes.front().device);
  std::vector<cuda::EventTimer::Lane> timer_lanes;
  for (auto& l : lanes) timer_lanes.push_back({l.device, l.stream.get()});
  for (const auto& op : o.ops) {
    for (const int64_t bytes : o.sizes) {
      NcclCollective bench(o, op, bytes, lanes, comms, ranks, mp);
      if (progress && rank == 0)
        progress(fmt::format("NCCL {} of {} bytes over {} ranks", op, bench.layout().bytes, ranks));
      cuda::EventTimer timer(timer_lanes);
      const Measured m = measure(bench, timer, o.timing);
      report.results.push_back(collective_result(o, op, bench.layout(), o.in_place, ranks, m));
    }
  }
  return report;
}

}  // namespace shardcost::bench
