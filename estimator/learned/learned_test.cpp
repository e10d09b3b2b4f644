// Learned GEMM models: features, the fitted record, the native tree evaluator against
// XGBoost's own predictions, domains and fallbacks.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "gemm_features.h"
#include "gemm_model.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "tree_ensemble.h"
#include "xgboost_api.h"

namespace shardcost::learned {
namespace {

// 300 rows of aiconfigurator's A100 bf16 table (tests/fixtures/measured/README.md).
std::vector<GemmRow> sample() {
  std::ifstream in(SHARDCOST_SOURCE_DIR "/tests/fixtures/measured/gemm_a100_sample.csv");
  std::string line;
  std::getline(in, line);  // device,host,dtype,m,n,k,batch,time_ns,...
  std::vector<GemmRow> rows;
  while (std::getline(in, line)) {
    std::stringstream ls(line);
    std::vector<std::string> c;
    for (std::string cell; std::getline(ls, cell, ',');) c.push_back(cell);
    rows.push_back({{std::stoll(c[3]), std::stoll(c[4]), std::stoll(c[5]), std::stoll(c[6])},
                    std::stod(c[7]) * 1e-9});
  }
  return rows;
}

TEST(GemmFeatures, OneValuePerNameAndTheRooflineByHand) {
  const Device a100 = find_device("a100-sxm4-80gb");
  std::vector<float> row;
  gemm_features(a100, DType::bf16, {4096, 4096, 4096, 1}, row);
  EXPECT_EQ(row.size(), gemm_feature_names().size());
  for (float v : row) EXPECT_TRUE(std::isfinite(v));
  // 2 * 4096^3 FLOPs at 312 TFLOP/s: 440.5 us, well above 3 * 32 MiB at 2039 GB/s.
  EXPECT_NEAR(gemm_roofline_seconds(a100, DType::bf16, {4096, 4096, 4096, 1}),
              2.0 * 4096 * 4096 * 4096 / 312e12, 1e-12);
  // Memory-bound: a matrix-vector product moves the 4096 x 4096 weights once (32 MiB).
  EXPECT_NEAR(gemm_roofline_seconds(a100, DType::bf16, {1, 4096, 4096, 1}),
              2.0 * (4096 + 4096 * 4096 + 4096) / 2039e9, 1e-12);
}

TEST(GemmModelFit, NativeTreesPredictWhatXGBoostPredicts) {
  if (!xgb::available()) GTEST_SKIP() << "this build has no XGBoost (libxgboost-dev)";
  const Device a100 = find_device("a100-sxm4-80gb");
  const auto rows = sample();
  const GemmFit fit = fit_gemm(a100, DType::bf16, rows);
  ASSERT_EQ(fit.cv.size(), 2u);
  EXPECT_GT(fit.cv[0].median, 0);
  EXPECT_EQ(fit.cv[0].rows, rows.size());
  const auto booster = xgb::Booster::load(fit.booster);
  const auto trees = TreeEnsemble::from_xgboost_json(fit.booster);
  std::vector<float> x;
  for (const auto& r : rows) gemm_features(a100, DType::bf16, r.shape, x);
  const auto want = booster.predict(x, gemm_feature_names().size());
  for (size_t i = 0; i < rows.size(); ++i)
    EXPECT_NEAR(trees.predict(&x[i * gemm_feature_names().size()]), want[i], 1e-4) << i;
  // The record round-trips, and a second fit is the same model.
  const GemmFit again = GemmFit::from_json(fit.to_json());
  EXPECT_EQ(again.rows, fit.rows);
  EXPECT_EQ(nlohmann::json::parse(again.booster), nlohmann::json::parse(fit.booster));
  EXPECT_EQ(fit_gemm(a100, DType::bf16, rows).to_json(), fit.to_json());
  // The folds and the final fit on three threads: the same model and the same held-out errors.
  EXPECT_EQ(fit_gemm(a100, DType::bf16, rows, 3).to_json(), fit.to_json());
  // Inside the fitted shapes, and far outside.
  EXPECT_TRUE(fit.domain.contains(rows.front().shape));
  EXPECT_FALSE(fit.domain.contains({1, 1, 1 << 24, 1}));
  const GemmModel model(again);
  const auto predicted = model.predict(a100, {rows.front().shape});
  EXPECT_GT(predicted.front(), 0);
}

TEST(GemmModelFit, BadInputsAreInputErrors) {
  const Device a100 = find_device("a100-sxm4-80gb");
  auto rows = sample();
  rows.resize(10);
  EXPECT_THROW(fit_gemm(a100, DType::bf16, rows), InputError);     // too few
  EXPECT_THROW(fit_gemm(a100, DType::fp8, sample()), InputError);  // no fp8 peak
  EXPECT_THROW(GemmFit::from_json("{}"), InputError);
  EXPECT_THROW(GemmFit::from_json("not json"), InputError);
  EXPECT_THROW(TreeEnsemble::from_xgboost_json(R"({"learner": {}})"), InputError);
  // A tree that points outside itself.
  EXPECT_THROW(TreeEnsemble::from_xgboost_json(R"({"learner": {
      "learner_model_param": {"base_score": "0.5", "num_class": "0", "num_feature": "2"},
      "gradient_booster": {"name": "gbtree", "model": {"trees": [{
        "left_children": [5, -1], "right_children": [1, -1], "split_indices": [0, 0],
        "split_conditions": [1.0, 2.0], "default_left": [0, 0]}]}}}})"),
               InputError);
}

TEST(GemmPriorFit, RecoversTheConstantsOfTimesItGenerated) {
  // Times made by the prior itself with 5,000 launch cycles and p = 4 on two devices: the fit
  // finds them again (to its grid's resolution), and the pooled prior's leave-one-device-out
  // errors are then small.
  const GemmPrior truth{5000, 4};
  std::vector<DeviceRows> data;
  for (const char* name : {"a100-sxm4-80gb", "h100-sxm5-80gb"}) {
    DeviceRows d{find_device(name), {}};
    for (int64_t m : {1, 4, 16, 64, 128, 1024, 4096, 8192, 16384})
      for (int64_t nk : {512, 4096, 16384})
        d.rows.push_back(
            {{m, nk, nk, 1}, gemm_prior_seconds(d.device, DType::bf16, {m, nk, nk, 1}, truth)});
    data.push_back(std::move(d));
  }
  std::vector<PriorRow> rows;
  for (const auto& d : data)
    for (const auto& r : d.rows) rows.push_back({&d.device, DType::bf16, r.shape, r.seconds});
  const GemmPrior fitted = fit_gemm_prior(rows);
  EXPECT_NEAR(fitted.c0_cycles / truth.c0_cycles, 1, 0.05);
  EXPECT_NEAR(fitted.p / truth.p, 1, 0.1);
  const PooledGemmPrior pooled = fit_pooled_gemm_prior(DType::bf16, data);
  ASSERT_EQ(pooled.cv.size(), 2u);
  EXPECT_EQ(pooled.cv[0].split, "without a100-sxm4-80gb");
  EXPECT_LT(pooled.cv[0].median, 0.01);
  const PooledGemmPrior again = PooledGemmPrior::from_json(pooled.to_json());
  EXPECT_EQ(again.devices, pooled.devices);
  EXPECT_DOUBLE_EQ(again.prior.p, pooled.prior.p);
}

TEST(GemmPrior, ASplitKGemmPaysTwoLaunches) {
  // cuBLAS runs a GEMM whose K it splits as two kernels (the split products, then their
  // reduction), each paying the launch cost. With a launch of 10^7 cycles the work (12 us at
  // most here) is within 0.2 %: m = 16, n = 128, k = 8192 on A100 is one 16 x 128 tile, which
  // the prior splits into 32 K slices (108 SMs, at least 256 of K each): 2 x 10^7 cycles at
  // 1,410 MHz, 14.18 ms. A 2,048 x 2,048 x 256 GEMM has 256 tiles of 128 x 128 for the 108
  // SMs and no K to split: one launch, 7.09 ms.
  const Device& a100 = find_device("a100-sxm4-80gb");
  const GemmPrior prior{1e7, 3};
  const double launch = 1e7 / 1.41e9;
  EXPECT_NEAR(gemm_prior_seconds(a100, DType::bf16, {16, 128, 8192, 1}, prior), 2 * launch,
              0.005 * launch);
  EXPECT_NEAR(gemm_prior_seconds(a100, DType::bf16, {2048, 2048, 256, 1}, prior), launch,
              0.005 * launch);
}

TEST(TreeEnsembleEval, RefusesTreesThatLoop) {
  // A node whose child is itself (or an ancestor) would never reach a leaf.
  EXPECT_THROW(TreeEnsemble::from_xgboost_json(R"({"learner": {
      "learner_model_param": {"base_score": "0.5", "num_class": "0", "num_feature": "1"},
      "gradient_booster": {"name": "gbtree", "model": {"trees": [{
        "left_children": [0, -1], "right_children": [1, -1], "split_indices": [0, 0],
        "split_conditions": [1.0, 2.0], "default_left": [0, 0]}]}}}})"),
               InputError);
}

TEST(TreeEnsembleEval, FollowsXGBoostsRule) {
  // One stump on feature 1 at 3.0: below goes left (leaf -1), else right (leaf +2); missing
  // values take the default (left) side.
  const auto t = TreeEnsemble::from_xgboost_json(R"({"learner": {
      "learner_model_param": {"base_score": "5E-1", "num_class": "0", "num_feature": "2"},
      "gradient_booster": {"name": "gbtree", "model": {"trees": [{
        "left_children": [1, -1, -1], "right_children": [2, -1, -1], "split_indices": [1, 0, 0],
        "split_conditions": [3.0, -1.0, 2.0], "default_left": [1, 0, 0]}]}}}})");
  const float below[] = {0, 2.9f}, at[] = {0, 3.0f}, missing[] = {0, NAN};
  EXPECT_DOUBLE_EQ(t.predict(below), -0.5);
  EXPECT_DOUBLE_EQ(t.predict(at), 2.5);
  EXPECT_DOUBLE_EQ(t.predict(missing), -0.5);
}

}  // namespace
}  // namespace shardcost::learned
