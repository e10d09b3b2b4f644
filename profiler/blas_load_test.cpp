// OpenBLAS is loaded on first use, not linked (profiler/blas.cpp): a command that never runs a
// host GEMM does not map it, nor start its thread pool, whose idle worker polls a core. Its own
// executable, so that this process has not loaded it before the test.
#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "blas.h"

namespace shardcost::bench::blas {
namespace {

bool mapped(const std::string& what) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(what) != std::string::npos) return true;
  return false;
}

int threads() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

TEST(Blas, LoadsOnFirstUseWithoutAThreadPool) {
  ASSERT_FALSE(mapped("openblas")) << "OpenBLAS is mapped before any host GEMM asked for it";
  const bool user_set = std::getenv("OPENBLAS_NUM_THREADS") != nullptr;
  const int before = threads();
  EXPECT_NE(version().find("OpenBLAS"), std::string::npos) << version();
  EXPECT_TRUE(mapped("openblas"));
  if (!user_set) {
    // Loaded with one thread: no worker started, and the variable it was loaded under is gone.
    EXPECT_EQ(threads(), before);
    EXPECT_EQ(std::getenv("OPENBLAS_NUM_THREADS"), nullptr);
  }
  // And it computes: [1 2; 3 4] x [5 6; 7 8] = [19 22; 43 50].
  const float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
  float c[4] = {};
  sgemm(2, 2, 2, a, b, c);
  EXPECT_FLOAT_EQ(c[0], 19);
  EXPECT_FLOAT_EQ(c[1], 22);
  EXPECT_FLOAT_EQ(c[2], 43);
  EXPECT_FLOAT_EQ(c[3], 50);
}

}  // namespace
}  // namespace shardcost::bench::blas
