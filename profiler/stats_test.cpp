#include <gtest/gtest.h>

#include "shardcost/error.h"
#include "shardcost/profiler.h"

namespace shardcost::bench {
namespace {

TEST(Summarize, MedianPercentilesAndSpread) {
  std::vector<int64_t> v;
  for (int i = 10; i >= 1; --i) v.push_back(i * 100);  // unsorted on purpose
  const Stats s = summarize(v);
  EXPECT_EQ(s.iterations, 10);
  EXPECT_EQ(s.min_ns, 100);
  EXPECT_EQ(s.max_ns, 1000);
  EXPECT_EQ(s.median_ns, 550);
  EXPECT_EQ(s.p10_ns, 190);
  EXPECT_EQ(s.p90_ns, 910);
  EXPECT_DOUBLE_EQ(s.mean_ns, 550);
  EXPECT_NEAR(s.cv, 287.228 / 550, 1e-4);
}

TEST(Summarize, ConstantSamplesHaveNoSpreadAndEmptyIsZero) {
  const Stats s = summarize({7, 7, 7});
  EXPECT_EQ(s.median_ns, 7);
  EXPECT_EQ(s.cv, 0);
  EXPECT_EQ(summarize({}).iterations, 0);
}

TEST(ParseSize, SuffixesAreBinary) {
  EXPECT_EQ(parse_size("8"), 8);
  EXPECT_EQ(parse_size("64K"), 64 * 1024);
  EXPECT_EQ(parse_size("64k"), 64 * 1024);
  EXPECT_EQ(parse_size("1M"), 1 << 20);
  EXPECT_EQ(parse_size("2G"), 2LL << 30);
  EXPECT_EQ(parse_size("2GB"), 2LL << 30);
}

TEST(ParseSize, RejectsBadInputWithTheText) {
  for (const char* bad : {"", "K", "12Q", "-4", "0", "1.5M", "99999999999T"}) {
    try {
      parse_size(bad);
      FAIL() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("invalid size"), std::string::npos) << e.what();
    }
  }
}

TEST(SizeSweep, LikeNcclTests) {
  EXPECT_EQ(size_sweep(8, 128, 2), (std::vector<int64_t>{8, 16, 32, 64, 128}));
  EXPECT_EQ(size_sweep(1024, 1024, 1), (std::vector<int64_t>{1024}));
  EXPECT_EQ(size_sweep(1 << 10, 1 << 20, 4).size(), 6u);
  EXPECT_THROW(size_sweep(128, 8, 2), InputError);
  EXPECT_THROW(size_sweep(8, 128, 1), InputError);
}

// nccl-tests doc/PERFORMANCE.md: the factors that make busbw comparable to link bandwidth.
TEST(BusFactor, MatchesNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor("all_reduce", 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_factor("all_reduce", 1), 0);
  EXPECT_DOUBLE_EQ(bus_factor("all_gather", 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_factor("reduce_scatter", 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(bus_factor("all_to_all", 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_factor("broadcast", 8), 1);
  EXPECT_DOUBLE_EQ(bus_factor("reduce", 8), 1);
  EXPECT_DOUBLE_EQ(bus_factor("send_recv", 8), 1);
  EXPECT_THROW(bus_factor("allreduce_typo", 8), InputError);
  for (const auto& op : collective_ops()) EXPECT_NO_THROW(bus_factor(op, 2));
}

TEST(StoreOpName, MatchesTheStoreVocabulary) {
  EXPECT_EQ(canonical_collective("alltoall"), "all_to_all");
  EXPECT_EQ(canonical_collective("sendrecv"), "send_recv");
  EXPECT_EQ(canonical_collective("all_to_all"), "all_to_all");
  EXPECT_EQ(canonical_collective("all_reduce"), "all_reduce");
}

}  // namespace
}  // namespace shardcost::bench
