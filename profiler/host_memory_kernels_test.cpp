// The host memory kernels move exactly the bytes asked for, at any alignment and length.
#include "host_memory_kernels.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace shardcost::bench {
namespace {

TEST(HostMemoryKernels, CopiesAndWritesEveryByteAtAnyAlignment) {
  std::vector<std::byte> src(4096 + 64), dst(4096 + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 7 + 3);
  for (const std::string_view k : memory_kernels("copy")) {
    for (const size_t offset : {0, 1, 8, 15, 16, 63}) {
      for (const size_t n : {0, 1, 15, 16, 17, 64, 65, 1000, 4096}) {
        std::fill(dst.begin(), dst.end(), std::byte{0xee});
        copy_kernel(k, dst.data() + offset, src.data() + 5, n);
        for (size_t i = 0; i < dst.size(); ++i) {
          const bool inside = i >= offset && i < offset + n;
          ASSERT_EQ(dst[i], inside ? src[i - offset + 5] : std::byte{0xee})
              << k << " offset " << offset << " n " << n << " at " << i;
        }
      }
    }
  }
  for (const std::string_view k : memory_kernels("write")) {
    for (const size_t offset : {0, 3, 16, 40}) {
      for (const size_t n : {0, 7, 64, 129, 4000}) {
        std::fill(dst.begin(), dst.end(), std::byte{0});
        write_kernel(k, dst.data() + offset, 0x5a, n);
        for (size_t i = 0; i < dst.size(); ++i)
          ASSERT_EQ(dst[i], i >= offset && i < offset + n ? std::byte{0x5a} : std::byte{0})
              << k << " offset " << offset << " n " << n << " at " << i;
      }
    }
  }
}

TEST(HostMemoryKernels, ReadsSumEveryWordAsTheReferenceDoes) {
  std::vector<uint64_t> words(1003);
  std::iota(words.begin(), words.end(), uint64_t{1} << 40);
  for (const size_t n : {0, 1, 3, 4, 5, 1003}) {
    const uint64_t want =
        std::accumulate(words.begin(), words.begin() + static_cast<long>(n), uint64_t{0});
    EXPECT_EQ(read_sum4(words.data(), n), want) << n;
    EXPECT_EQ(reference_read(words.data(), n), want) << n;
  }
  std::vector<uint64_t> out(9, 0);
  reference_write(out.data(), 7, 8);
  EXPECT_EQ(out, (std::vector<uint64_t>{7, 7, 7, 7, 7, 7, 7, 7, 0}));
}

TEST(HostMemoryKernels, EachKindOffersItsReferenceFirst) {
  EXPECT_EQ(memory_kernels("copy").front(), "memcpy");
  EXPECT_EQ(memory_kernels("write").front(), "memset");
  EXPECT_EQ(memory_kernels("read"), std::vector<std::string_view>{"sum4"});
  EXPECT_EQ(memory_kernels("copy").size(), has_streaming_stores() ? 2u : 1u);
}

}  // namespace
}  // namespace shardcost::bench
