// cuBLASLt is loaded on first use, not linked (its load costs 210 MB of resident memory): the
// library of the toolkit this was built with loads, and every entry point resolves. Needs no
// GPU: loading and asking the version touch no device.
#include <gtest/gtest.h>

#include "cuda/cublaslt_api.h"

namespace shardcost::bench::cuda {
namespace {

TEST(CublasLt, LoadsOnFirstUse) {
  const std::string v = LtMatmul::version();
  EXPECT_EQ(v.rfind("cublasLt=", 0), 0u) << v;
  EXPECT_GT(std::stol(v.substr(9)), 0) << v;
}

}  // namespace
}  // namespace shardcost::bench::cuda
