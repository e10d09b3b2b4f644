#include "collective_check.h"

#include <gtest/gtest.h>

#include "shardcost/error.h"

namespace shardcost::bench {
namespace {

TEST(CollectiveLayout, SizesFollowNcclTests) {
  // all_gather: the size is the gathered output; each rank sends a share.
  auto l = collective_layout("all_gather", 1 << 20, 4, 4);
  EXPECT_EQ(l.send_count, (1 << 18) / 4);
  EXPECT_EQ(l.recv_count, 1 << 18);
  EXPECT_EQ(l.bytes, 1 << 20);
  // reduce_scatter: the size is the whole input.
  l = collective_layout("reduce_scatter", 1 << 20, 4, 4);
  EXPECT_EQ(l.send_count, 1 << 18);
  EXPECT_EQ(l.recv_count, (1 << 18) / 4);
  // Shares round down to whole elements, and bytes report what really moved.
  l = collective_layout("all_to_all", 1000, 4, 3);
  EXPECT_EQ(l.send_count, 249);
  EXPECT_EQ(l.bytes, 996);
  l = collective_layout("all_reduce", 1000, 8, 3);
  EXPECT_EQ(l.elements, 125);
  EXPECT_THROW(collective_layout("all_reduce", 2, 4, 2), InputError);
}

TEST(ExpectedValue, ReductionsAreExactSmallIntegers) {
  const auto l = collective_layout("all_reduce", 64, 4, 3);
  // sum over ranks 0..2 of ((r + i) % 4 + 1) at i = 0: 1 + 2 + 3.
  EXPECT_EQ(*expected_value("all_reduce", "sum", 3, 0, 0, 0, l), 6);
  EXPECT_EQ(*expected_value("all_reduce", "max", 3, 1, 0, 0, l), 6);  // (r*3)%7: 0,3,6
  EXPECT_EQ(*expected_value("all_reduce", "min", 3, 1, 0, 0, l), 0);
  EXPECT_EQ(*expected_value("all_reduce", "prod", 3, 1, 0, 0, l), 4);  // ranks 0 and 2 give 2
  EXPECT_FALSE(expected_value("reduce", "sum", 3, 1, 0, 0, l).has_value());
  EXPECT_EQ(*expected_value("reduce", "sum", 3, 0, 0, 0, l), 6);
}

TEST(ExpectedValue, DataMovementOpsFindTheSendersValues) {
  const auto ag = collective_layout("all_gather", 4 * 6, 4, 3);  // 2 elements per rank
  EXPECT_EQ(*expected_value("all_gather", "sum", 3, 0, 0, 5, ag), input_value("sum", 2, 1));
  const auto a2a = collective_layout("all_to_all", 4 * 6, 4, 3);
  // Rank 1, slot from rank 2, element 1 of that slot: rank 2's element 1*2 + 1.
  EXPECT_EQ(*expected_value("all_to_all", "sum", 3, 1, 0, 5, a2a), input_value("sum", 2, 3));
  const auto sr = collective_layout("send_recv", 64, 4, 3);
  EXPECT_EQ(*expected_value("send_recv", "sum", 3, 0, 0, 4, sr), input_value("sum", 2, 4));
  EXPECT_EQ(*expected_value("broadcast", "sum", 3, 2, 1, 4, sr), input_value("sum", 1, 4));
  const auto rs = collective_layout("reduce_scatter", 4 * 6, 4, 3);
  EXPECT_EQ(*expected_value("reduce_scatter", "sum", 3, 2, 0, 1, rs),
            *expected_value("all_reduce", "sum", 3, 0, 0, 5, rs));
}

}  // namespace
}  // namespace shardcost::bench

namespace shardcost::bench {
namespace {

// NCCL's in-place semantics (its "In-place Operations" documentation): all_gather is in place
// when sendbuff == recvbuff + rank * sendcount, reduce_scatter when recvbuff == sendbuff +
// rank * recvcount. Before this, every rank passed the buffer's start for both, so ranks
// other than 0 sent the wrong data in place.
TEST(InPlace, PointersAtTheOffsetsNcclDocuments) {
  const CollectiveLayout ag =
      collective_layout("all_gather", 8 << 20, 2, 8);  // 8 MiB gathered, bf16
  ASSERT_EQ(ag.send_count, (8 << 20) / 2 / 8);
  const InPlaceOffsets a3 = in_place_offsets("all_gather", 3, ag, 2);
  EXPECT_EQ(a3.send, 3 * ag.send_count * 2);
  EXPECT_EQ(a3.recv, 0);
  EXPECT_EQ(in_place_offsets("all_gather", 0, ag, 2).send, 0);
  const CollectiveLayout rs =
      collective_layout("reduce_scatter", 8 << 20, 4, 4);  // 8 MiB input, fp32
  const InPlaceOffsets r2 = in_place_offsets("reduce_scatter", 2, rs, 4);
  EXPECT_EQ(r2.send, 0);
  EXPECT_EQ(r2.recv, 2 * rs.recv_count * 4);
  EXPECT_EQ(rs.recv_count * 4, (8 << 20) / 4);  // each rank's share of the input
  for (const char* op : {"all_reduce", "broadcast", "reduce", "all_to_all"}) {
    const InPlaceOffsets x = in_place_offsets(op, 5, collective_layout(op, 1 << 20, 2, 8), 2);
    EXPECT_EQ(x.send, 0) << op;
    EXPECT_EQ(x.recv, 0) << op;
  }
}

}  // namespace
}  // namespace shardcost::bench

namespace shardcost::bench {
namespace {

// A rank's GPU is its place on its node, never its world rank: ranks 8..15 on the second node
// of 8-GPU nodes drive GPUs 0..7 there.
TEST(RankDevice, TheLocalRankPicksTheGpu) {
  EXPECT_EQ(rank_device(3, 8, 8), 3);
  EXPECT_EQ(rank_device(0, 4, 8), 0);
  // The launcher gave each task its own GPU (CUDA_VISIBLE_DEVICES per task).
  EXPECT_EQ(rank_device(5, 8, 1), 0);
  // More ranks than GPUs on a node: one clear line, not two ranks on one GPU.
  try {
    rank_device(8, 9, 8);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("9 ranks on this node but 8 visible GPUs"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(rank_device(0, 1, 0), InputError);
}

}  // namespace
}  // namespace shardcost::bench
