// The NCCL collective benchmark's logic against a fake multi-rank NCCL in host memory that
// holds every call to NCCL's documented rules (pointers inside their GPU's buffers, in-place
// offsets, one call per rank per group, the same op and counts on every rank) and computes the
// collective from the pointers it was given: a wrong offset or count gives wrong data, which
// the benchmark's own check must count.
#include "device_collective.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>

#include "shardcost/error.h"

namespace shardcost::bench {
namespace {

class FakeNccl final : public CollectiveLanes {
 public:
  explicit FakeNccl(int ranks) : ranks_(ranks) {}
  bool hang = false, corrupt = false, aborted = false;
  int collectives = 0;

  int lanes() const override { return ranks_; }
  int rank(int lane) const override { return lane; }
  int ranks() const override { return ranks_; }
  int64_t type_size(const std::string& dtype) const override {
    if (dtype != "float") throw std::invalid_argument("the fake holds float only");
    return 4;
  }
  int64_t free_bytes(int) const override { return int64_t{1} << 40; }
  Buffer alloc(int lane, int64_t bytes) override {
    auto* p = new std::byte[static_cast<size_t>(bytes)];
    buffers_[p] = {lane, bytes};
    return Buffer(p, [this](std::byte* q) {
      buffers_.erase(q);
      delete[] q;
    });
  }
  void upload(int lane, const std::vector<float>& v, std::byte* dst, const std::string&) override {
    inside(lane, dst, static_cast<int64_t>(v.size() * 4), "upload");
    std::memcpy(dst, v.data(), v.size() * 4);
  }
  std::vector<float> download(int lane, const std::byte* src, int64_t count,
                              const std::string&) override {
    inside(lane, src, count * 4, "download");
    std::vector<float> out(static_cast<size_t>(count));
    std::memcpy(out.data(), src, out.size() * 4);
    return out;
  }
  void zero(int lane, std::byte* p, int64_t bytes) override {
    inside(lane, p, bytes, "zero");
    std::memset(p, 0, static_cast<size_t>(bytes));
  }
  void copy(int lane, std::byte* dst, const std::byte* src, int64_t bytes) override {
    inside(lane, dst, bytes, "copy to");
    inside(lane, src, bytes, "copy from");
    std::memmove(dst, src, static_cast<size_t>(bytes));
  }
  void group_start() override {
    if (open_) throw std::logic_error("group_start inside a group");
    open_ = true;
    calls_.clear();
  }
  void enqueue(int lane, const std::string& op, const void* send, void* recv, int64_t send_count,
               int64_t recv_count, const std::string&, const std::string& redop,
               int root) override {
    if (!open_) throw std::logic_error("a collective outside ncclGroupStart/End");
    calls_.push_back({lane, op, static_cast<const std::byte*>(send), static_cast<std::byte*>(recv),
                      send_count, recv_count, redop, root});
  }
  void group_end() override {
    open_ = false;
    if (static_cast<int>(calls_.size()) != ranks_)
      throw std::logic_error("not one call per rank in the group");
    for (const Call& c : calls_) {
      const Call& a = calls_.front();
      if (c.op != a.op || c.send_count != a.send_count || c.recv_count != a.recv_count ||
          c.root != a.root || c.redop != a.redop)
        throw std::logic_error("ranks disagree on the collective");
      check_pointers(c);
    }
    execute();
    ++collectives;
  }
  bool wait(std::chrono::steady_clock::time_point) override { return !hang; }
  void abort() override { aborted = true; }

 private:
  struct Call {
    int lane;
    std::string op;
    const std::byte* send;
    std::byte* recv;
    int64_t send_count, recv_count;
    std::string redop;
    int root;
  };
  // [p, p + bytes) must lie in one buffer of this lane's GPU.
  void inside(int lane, const std::byte* p, int64_t bytes, const char* what) const {
    for (const auto& [base, info] : buffers_)
      if (info.first == lane && p >= base && p + bytes <= base + info.second) return;
    throw std::out_of_range(std::string(what) + ": outside every buffer of lane " +
                            std::to_string(lane));
  }
  static bool overlap(const std::byte* a, int64_t an, const std::byte* b, int64_t bn) {
    return a < b + bn && b < a + an;
  }
  // NCCL's rules: in place means the documented offset, never a partial overlap.
  void check_pointers(const Call& c) const {
    const int64_t sb = c.send_count * 4, rb = c.recv_count * 4;
    inside(c.lane, c.send, sb, (c.op + " send").c_str());
    inside(c.lane, c.recv, rb, (c.op + " recv").c_str());
    if (!overlap(c.send, sb, c.recv, rb)) return;
    bool ok = false;
    if (c.op == "all_gather")
      ok = c.send == c.recv + c.lane * sb;
    else if (c.op == "reduce_scatter")
      ok = c.recv == c.send + c.lane * rb;
    else if (c.op == "all_reduce" || c.op == "broadcast" || c.op == "reduce")
      ok = c.send == c.recv;
    if (!ok)
      throw std::invalid_argument(c.op + " on rank " + std::to_string(c.lane) +
                                  ": send and receive overlap but not as NCCL's in-place rule "
                                  "says");
  }
  static float reduce(const std::string& op, float a, float b) {
    if (op == "prod") return a * b;
    if (op == "max") return std::max(a, b);
    if (op == "min") return std::min(a, b);
    return a + b;
  }
  void execute() {
    // Every input read before any output is written, as a collective sees its inputs.
    std::vector<std::vector<float>> in(static_cast<size_t>(ranks_));
    for (const Call& c : calls_) {
      auto& v = in[static_cast<size_t>(c.lane)];
      v.resize(static_cast<size_t>(c.send_count));
      std::memcpy(v.data(), c.send, v.size() * 4);
    }
    for (const Call& c : calls_) {
      const int r = c.lane;
      std::vector<float> out(static_cast<size_t>(c.recv_count));
      std::memcpy(out.data(), c.recv, out.size() * 4);
      const auto at = [&](int q, int64_t i) {
        return in[static_cast<size_t>(q)][static_cast<size_t>(i)];
      };
      for (int64_t i = 0; i < c.recv_count; ++i) {
        float& o = out[static_cast<size_t>(i)];
        if (c.op == "all_reduce" || (c.op == "reduce" && r == c.root)) {
          o = at(0, i);
          for (int q = 1; q < ranks_; ++q) o = reduce(c.redop, o, at(q, i));
        } else if (c.op == "all_gather") {
          o = at(static_cast<int>(i / c.send_count), i % c.send_count);
        } else if (c.op == "reduce_scatter") {
          o = at(0, r * c.recv_count + i);
          for (int q = 1; q < ranks_; ++q) o = reduce(c.redop, o, at(q, r * c.recv_count + i));
        } else if (c.op == "broadcast") {
          o = at(c.root, i);
        } else if (c.op == "all_to_all") {
          const int64_t per = c.send_count / ranks_;
          o = at(static_cast<int>(i / per), r * per + i % per);
        } else if (c.op == "send_recv") {
          o = at((r - 1 + ranks_) % ranks_, i);
        }
        if (corrupt && i == 0 && r == ranks_ - 1) o += 1;
      }
      std::memcpy(c.recv, out.data(), out.size() * 4);
    }
  }

  int ranks_;
  bool open_ = false;
  std::vector<Call> calls_;
  std::map<std::byte*, std::pair<int, int64_t>> buffers_;  // base -> lane, bytes
};

CollectiveOptions options(bool in_place, const char* redop = "sum") {
  CollectiveOptions o;
  o.backend = "nccl";
  o.dtype = "float";
  o.redop = redop;
  o.in_place = in_place;
  o.root = 1;
  o.timeout_s = 1;
  return o;
}

const char* const kOps[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                            "reduce",     "all_to_all", "send_recv"};

TEST(DeviceCollective, EveryOpInAndOutOfPlaceOverManyRanksChecksClean) {
  for (int ranks : {2, 3, 4, 8})
    for (const char* op : kOps)
      for (bool in_place : {false, true})
        for (const char* redop : {"sum", "max"})
          for (int64_t bytes : {int64_t{4096}, int64_t{1000}}) {
            FakeNccl fake(ranks);
            const CollectiveOptions o = options(in_place, redop);
            DeviceCollective bench(o, op, bytes, fake);
            bench.run(0);
            bench.finish();
            EXPECT_EQ(bench.check(), 0) << op << " ranks " << ranks << " in place " << in_place
                                        << " " << redop << " " << bytes;
            EXPECT_EQ(fake.collectives, 2);
            EXPECT_EQ(bench.in_place(), in_place && std::string(op) != "all_to_all" &&
                                            std::string(op) != "send_recv");
          }
}

// What the benchmark passed before in-place offsets (both pointers at the buffer's start):
// NCCL's rule broken on every rank but 0, which the fake refuses.
TEST(DeviceCollective, TheFakeRefusesInPlacePointersAtTheWrongOffset) {
  FakeNccl fake(4);
  std::vector<CollectiveLanes::Buffer> buffers;  // freed before the fake
  for (int r = 0; r < 4; ++r) buffers.push_back(fake.alloc(r, 4 * 64));
  fake.group_start();
  for (int r = 0; r < 4; ++r) {
    std::byte* buf = buffers[static_cast<size_t>(r)].get();
    // Rank 1 as before the fix: both pointers at the buffer's start; the others well formed.
    const std::byte* send = r == 1 ? buf : buf + r * 64;
    fake.enqueue(r, "all_gather", send, buf, 16, 64, "float", "sum", 0);
  }
  EXPECT_THROW(fake.group_end(), std::invalid_argument);
  // And a receive that runs past its buffer.
  FakeNccl two(2);
  auto a = two.alloc(0, 64), b = two.alloc(1, 64);
  two.group_start();
  two.enqueue(0, "all_reduce", a.get(), a.get(), 32, 32, "float", "sum", 0);
  two.enqueue(1, "all_reduce", b.get(), b.get(), 32, 32, "float", "sum", 0);
  EXPECT_THROW(two.group_end(), std::out_of_range);
}

TEST(DeviceCollective, WrongResultsAreCounted) {
  FakeNccl fake(3);
  fake.corrupt = true;
  const CollectiveOptions o = options(false);
  DeviceCollective bench(o, "all_reduce", 4096, fake);
  EXPECT_EQ(bench.check(), 1);
}

TEST(DeviceCollective, AHungCollectiveIsAbortedAndSaysWhat) {
  FakeNccl fake(2);
  fake.hang = true;
  const CollectiveOptions o = options(false);
  DeviceCollective bench(o, "all_gather", 4096, fake);
  bench.run(0);
  try {
    bench.finish();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NCCL all_gather of 4096 bytes over 2 ranks did not "
                                         "finish within 1 s; communicators aborted"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fake.aborted);
}

// Under the harness: warm-up, timed iterations and the check, each iteration one collective.
TEST(DeviceCollective, MeasuredByTheHarness) {
  FakeNccl fake(4);
  const CollectiveOptions o = options(true);
  DeviceCollective bench(o, "reduce_scatter", 1 << 16, fake);
  HostTimer timer;
  Timing t;
  t.warmup = 2;
  t.iterations = 5;
  const Measured m = measure(bench, timer, t);
  EXPECT_EQ(m.wrong, 0);
  EXPECT_EQ(m.stats.iterations, 5);
  EXPECT_EQ(fake.collectives, 2 + 5 + 1);
}

}  // namespace
}  // namespace shardcost::bench
