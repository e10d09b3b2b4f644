#include <gtest/gtest.h>

#include "shardcost/estimator.h"

namespace shardcost {
namespace {

// One set of catalog constants for every row; these bounds are the project's promises
// (docs/validation.md explains the remaining error).
TEST(Validate, KorthikantiTable5MeanErrorIsAtMostFivePercent) {
  const ValidationReport r = validate();
  EXPECT_EQ(std::count_if(r.rows.begin(), r.rows.end(),
                          [](const auto& x) { return x.table == "korthikanti2022"; }),
            8);
  EXPECT_LE(r.mean_abs_error("korthikanti2022"), 0.05);
  EXPECT_LE(r.max_abs_error("korthikanti2022"), 0.15);
}

TEST(Validate, Megatron2021Table1StaysWithinItsBound) {
  const ValidationReport r = validate();
  EXPECT_EQ(std::count_if(r.rows.begin(), r.rows.end(),
                          [](const auto& x) { return x.table == "megatron2021"; }),
            10);
  EXPECT_LE(r.mean_abs_error("megatron2021"), 0.15);
  for (const auto& row : r.rows) {
    if (row.table != "megatron2021") continue;
    EXPECT_EQ(row.strategy.recompute, Recompute::full) << row.label;
    EXPECT_GT(row.predicted_s, 0) << row.label;
  }
}

}  // namespace
}  // namespace shardcost
