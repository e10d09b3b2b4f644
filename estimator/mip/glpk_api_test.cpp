// The GLPK door: a start that breaks a row is dropped (GLPK would trust it and prune the
// search with it), a good one is kept, and infeasibility is told from a time limit.
#include "mip/glpk_api.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace shardcost::mip {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// max x + y over binaries with x + y <= 1, as a minimisation of -(x + y).
struct Knapsack {
  MipProblem m;
  int x = m.add_column(0, 1, true, -1);
  int y = m.add_column(0, 1, true, -1);
  Knapsack() { m.add_row({{x, 1}, {y, 1}}, -kInf, 1); }
};

TEST(Glpk, AStartThatBreaksARowIsDroppedAndTheOptimumFound) {
  Knapsack k;
  k.m.set_start({1, 1});  // x + y = 2 > 1: would claim an objective of -2
  std::string why;
  ASSERT_EQ(k.m.minimise(10, why), MipProblem::Status::optimal) << why;
  EXPECT_DOUBLE_EQ(k.m.value(k.x) + k.m.value(k.y), 1);
}

TEST(Glpk, AGoodStartIsKept) {
  Knapsack k;
  k.m.set_start({0, 1});
  std::string why;
  ASSERT_EQ(k.m.minimise(10, why), MipProblem::Status::optimal) << why;
  EXPECT_DOUBLE_EQ(k.m.value(k.x) + k.m.value(k.y), 1);
}

TEST(Glpk, InfeasibleIsProvenWithAndWithoutAStart) {
  for (bool start : {false, true}) {
    MipProblem m;
    const int x = m.add_column(0, 1, true, 1);
    m.add_row({{x, 1}}, 2, kInf);  // a binary of at least 2
    if (start) m.set_start({1});
    std::string why;
    EXPECT_EQ(m.minimise(10, why), MipProblem::Status::none);
    EXPECT_TRUE(m.proven_infeasible()) << why;
  }
}

}  // namespace
}  // namespace shardcost::mip
