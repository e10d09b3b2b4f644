// Collectives and point-to-point over MPI: nccl-tests' sizes, bandwidths and check, on CPUs.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "backends.h"
#include "collective_check.h"
#include "harness.h"
#include "host_buffers.h"
#include "mpi_api.h"
#include "result_records.h"
#include "shardcost/error.h"
#include "stop.h"
#include "watchdog.h"

namespace shardcost::bench {
namespace {

void store(mpi::Type t, std::byte* p, int64_t i, double v) {
  switch (t) {
    case mpi::Type::f32:
      reinterpret_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case mpi::Type::f64:
      reinterpret_cast<double*>(p)[i] = v;
      break;
    case mpi::Type::i32:
      reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      break;
    case mpi::Type::i64:
      reinterpret_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
      break;
  }
}

double load(mpi::Type t, const std::byte* p, int64_t i) {
  switch (t) {
    case mpi::Type::f32:
      return reinterpret_cast<const float*>(p)[i];
    case mpi::Type::f64:
      return reinterpret_cast<const double*>(p)[i];
    case mpi::Type::i32:
      return reinterpret_cast<const int32_t*>(p)[i];
    case mpi::Type::i64:
      return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
  }
  return 0;
}

class MpiCollective final : public Benchmark {
 public:
  MpiCollective(const CollectiveOptions& o, std::string op, int64_t bytes)
      : o_(o),
        op_(std::move(op)),
        type_(mpi::parse_type(o.dtype)),
        redop_(mpi::parse_op(o.redop)),
        w_(mpi::world()) {
    layout_ = collective_layout(op_, bytes, static_cast<int64_t>(mpi::type_size(type_)), w_.size);
    in_place_ = o.in_place && op_ != "send_recv";
    const auto ts = static_cast<int64_t>(mpi::type_size(type_));
    check_room(2 * std::max(layout_.send_count, layout_.recv_count) * ts, host_available_bytes(),
               fmt::format("MPI {} of {} bytes", op_, layout_.bytes), "host");
    send_.resize(static_cast<size_t>(std::max(layout_.send_count, layout_.recv_count) * ts));
    recv_.resize(static_cast<size_t>(std::max(layout_.send_count, layout_.recv_count) * ts));
    fill();
  }

  bool in_place() const { return in_place_; }
  const CollectiveLayout& layout() const { return layout_; }

  void prepare(int) override { mpi::barrier(); }

  void run(int) override {
    const void* s = in_place_ ? nullptr : send_.data();
    const CollectiveLayout& l = layout_;
    if (op_ == "all_reduce")
      mpi::all_reduce(s, recv_.data(), l.send_count, type_, redop_);
    else if (op_ == "all_gather")
      mpi::all_gather(s, recv_.data(), l.send_count, type_);
    else if (op_ == "reduce_scatter")
      mpi::reduce_scatter(s, recv_.data(), l.recv_count, type_, redop_);
    else if (op_ == "broadcast")
      mpi::broadcast(recv_.data(), l.send_count, type_, o_.root);
    else if (op_ == "reduce")
      mpi::reduce(s, recv_.data(), l.send_count, type_, redop_, o_.root);
    else if (op_ == "all_to_all")
      mpi::alltoall(s, recv_.data(), l.send_count / w_.size, type_);
    else
      mpi::sendrecv(send_.data(), (w_.rank + 1) % w_.size, recv_.data(),
                    (w_.rank - 1 + w_.size) % w_.size, l.send_count, type_);
  }

  int agree(int iterations) override { return mpi::min_all(iterations); }
  // A collective takes as long as its slowest rank.
  void combine(std::vector<int64_t>& ns) override { mpi::max_all(ns); }

  int64_t check() override {
    fill();
    mpi::barrier();
    run(0);
    int64_t wrong = 0;
    for (int64_t i = 0; i < layout_.recv_count; ++i) {
      const auto want = expected_value(op_, o_.redop, w_.size, w_.rank, o_.root, i, layout_);
      if (want && load(type_, recv_.data(), i) != *want) ++wrong;
    }
    return mpi::sum_all(wrong);
  }

 private:
  // Send buffer holds this rank's inputs; in place, the receive buffer holds them where the
  // operation reads them (all_gather: this rank's slot).
  void fill() {
    std::byte* s = send_.data();
    for (int64_t i = 0; i < layout_.send_count; ++i)
      store(type_, s, i, input_value(o_.redop, w_.rank, i));
    std::memset(recv_.data(), 0, recv_.size());
    if (op_ == "broadcast" && w_.rank == o_.root) std::memcpy(recv_.data(), s, recv_.size());
    if (!in_place_) return;
    if (op_ == "all_gather") {
      std::memcpy(recv_.data() + w_.rank * layout_.send_count * mpi::type_size(type_), s,
                  static_cast<size_t>(layout_.send_count) * mpi::type_size(type_));
    } else if (op_ != "broadcast") {
      std::memcpy(recv_.data(), s, static_cast<size_t>(layout_.send_count) * mpi::type_size(type_));
    }
  }

  const CollectiveOptions& o_;
  std::string op_;
  mpi::Type type_;
  mpi::Op redop_;
  const mpi::World& w_;
  CollectiveLayout layout_;
  bool in_place_ = false;
  std::vector<std::byte> send_, recv_;
};

// Rank 0 and one peer ping-pong a message; every other rank only joins the barriers.
class MpiPingPong final : public Benchmark {
 public:
  MpiPingPong(int peer, int64_t bytes) : peer_(peer), bytes_(bytes), w_(mpi::world()) {
    out_.resize(static_cast<size_t>(bytes));
    back_.resize(static_cast<size_t>(bytes));
    for (int64_t i = 0; i < bytes; ++i)
      out_[static_cast<size_t>(i)] = static_cast<std::byte>(i * 7 + 3);
  }
  void prepare(int) override { mpi::barrier(); }
  void run(int) override {
    if (w_.rank == 0) {
      mpi::send(out_.data(), bytes_, peer_);
      mpi::recv(back_.data(), bytes_, peer_);
    } else if (w_.rank == peer_) {
      mpi::recv(back_.data(), bytes_, 0);
      mpi::send(back_.data(), bytes_, 0);
    }
  }
  int agree(int iterations) override { return mpi::min_all(iterations); }
  // Rank 0's clock saw the whole round trip; everyone reports that.
  void combine(std::vector<int64_t>& ns) override { mpi::broadcast_values(ns, 0); }
  int64_t check() override {
    std::fill(back_.begin(), back_.end(), std::byte{0});
    mpi::barrier();
    run(0);
    int64_t wrong = 0;
    if (w_.rank == 0 || w_.rank == peer_) {
      for (size_t i = 0; i < out_.size(); ++i) wrong += back_[i] != out_[i];
    }
    return mpi::sum_all(wrong);
  }

 private:
  int peer_;
  int64_t bytes_;
  const mpi::World& w_;
  std::vector<std::byte> out_, back_;
};

// Arms the watchdog for one size point; a rank told to stall (tests) sleeps past it.
void guard_point(Watchdog& dog, const CollectiveOptions& o, const std::string& what) {
  dog.arm(o.timeout_s, what);
  if (o.debug_stall_rank == mpi::world().rank)
    std::this_thread::sleep_for(std::chrono::duration<double>(o.timeout_s * 3 + 1));
}

void validate(const CollectiveOptions& o, int ranks) {
  check_timeout(o.timeout_s);
  if (o.root < 0 || o.root >= ranks)
    throw InputError(fmt::format("--root {} is not a rank of this run (0..{})", o.root, ranks - 1));
}

}  // namespace

CollectiveReport mpi_bench_collective(const CollectiveOptions& o, const Progress& progress) {
  for (const auto& op : o.ops) bus_factor(op, 1);  // rejects unknown names
  mpi::parse_type(o.dtype);
  mpi::parse_op(o.redop);
  const mpi::World& w = mpi::world();
  validate(o, w.size);
  CollectiveReport report;
  report.rank = w.rank;
  report.ranks = w.size;
  report.nodes = w.nodes;
  report.fabric_level = w.nodes > 1 ? "inter_node" : "intra_node";
  report.library_version = mpi::version();
  report.device = host_device_record();
  Watchdog dog(o.on_timeout, [] { mpi::abort(3); });
  report.planned = o.ops.size() * o.sizes.size();
  for (const auto& op : o.ops) {
    for (const int64_t bytes : o.sizes) {
      if (stop_before_next(report, true)) return report;
      MpiCollective bench(o, op, bytes);
      const std::string what =
          fmt::format("MPI {} of {} bytes over {} ranks", op, bench.layout().bytes, w.size);
      if (progress && w.rank == 0) progress(what);
      guard_point(dog, o, what);
      HostTimer timer;
      const Measured m = measure(bench, timer, o.timing);
      dog.disarm();
      report.results.push_back(
          collective_result(o, op, bench.layout(), bench.in_place(), w.size, m));
      checkpoint_last(o.checkpoint, report);
    }
  }
  return report;
}

P2pReport mpi_bench_p2p(const CollectiveOptions& o, const Progress& progress) {
  const mpi::World& w = mpi::world();
  if (w.size < 2)
    throw InputError("bench p2p needs at least 2 ranks; launch it with mpirun -np 2 (or srun)");
  validate(o, w.size);
  P2pReport report;
  report.rank = w.rank;
  report.ranks = w.size;
  report.nodes = w.nodes;
  report.library_version = mpi::version();
  report.device = host_device_record();
  Watchdog dog(o.on_timeout, [] { mpi::abort(3); });
  report.planned = static_cast<size_t>(w.size - 1) * o.sizes.size();
  for (int peer = 1; peer < w.size; ++peer) {
    for (const int64_t bytes : o.sizes) {
      if (stop_before_next(report, true)) return report;
      const std::string what =
          fmt::format("MPI send/recv of {} bytes between ranks 0 and {}", bytes, peer);
      if (progress && w.rank == 0) progress(what);
      MpiPingPong bench(peer, bytes);
      guard_point(dog, o, what);
      HostTimer timer;
      Measured m = measure(bench, timer, o.timing);
      dog.disarm();
      P2pResult r;
      r.from = 0;
      r.to = peer;
      r.fabric_level = w.same_node(0, peer) ? "intra_node" : "inter_node";
      r.bytes = bytes;
      // Half a round trip is one transfer.
      auto half = [](int64_t v) { return v / 2; };
      r.stats = m.stats;
      r.stats.median_ns = half(m.stats.median_ns);
      r.stats.p10_ns = half(m.stats.p10_ns);
      r.stats.p90_ns = half(m.stats.p90_ns);
      r.stats.min_ns = half(m.stats.min_ns);
      r.stats.max_ns = half(m.stats.max_ns);
      r.stats.mean_ns = m.stats.mean_ns / 2;
      for (int64_t& v : r.stats.samples_ns) v = half(v);
      r.wrong = m.wrong;
      r.latency_us = static_cast<double>(r.stats.median_ns) / 1e3;
      r.bandwidth_gbps =
          static_cast<double>(bytes) / static_cast<double>(std::max<int64_t>(1, r.stats.median_ns));
      report.results.push_back(r);
      checkpoint_last(o.checkpoint, report);
    }
  }
  return report;
}

}  // namespace shardcost::bench
