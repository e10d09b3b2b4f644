// One request, one report (issue 36): requests read and written as JSON, the pricing path each
// takes, and how a report ends.
#include "shardcost/request.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "shardcost/error.h"
#include "shardcost/planner_requests.h"
#include "shardcost/units.h"

namespace shardcost {
namespace {

PlanRequest llama_estimate() {
  PlanRequest r;
  r.model = "llama3-8b";
  r.cluster = "dgx-h100";
  r.gpus = 16;
  r.strategy = "tp=2,pp=1,dp=8,mbs=1,gbs=128,recompute=selective,sp=true,zero=1";
  return r;
}

TEST(Request, JsonHoldsTheInputsAndWhatDiffersFromTheDefaults) {
  PlanRequest r = llama_estimate();
  r.seq_len = 4096;
  r.varlen.dist = "fixed:2048";
  r.varlen.seed = 7;
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j.at("model"), "llama3-8b");
  EXPECT_EQ(j.at("seq_len"), 4096);
  EXPECT_EQ(j.at("seq_dist"), "fixed:2048");
  EXPECT_EQ(j.at("seed"), 7);
  EXPECT_FALSE(j.contains("top"));  // a rank key, not an estimate's
  EXPECT_FALSE(j.contains("db"));   // the default
  const PlanRequest back = plan_request_from_json(j, "test");
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(to_json(back, true), to_json(r, true));
}

TEST(Request, BadJsonIsOneLineNamingTheKey) {
  auto refused = [](const char* text) {
    try {
      plan_request_from_json(nlohmann::json::parse(text), "t.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(
      refused(R"({"model": "m", "cluster": "c", "strategy": "tp=1", "gpu": 8})").find("'gpu'"),
      std::string::npos);
  EXPECT_NE(
      refused(R"({"model": "m", "cluster": "c", "strategy": "tp=1", "gpus": "8"})").find("gpus"),
      std::string::npos);
  EXPECT_NE(refused(R"({"model": "m", "cluster": "c"})").find("strategy"), std::string::npos);
  EXPECT_NE(refused(R"({"command": "rank", "model": "m", "cluster": "c"})").find("gbs"),
            std::string::npos);
  EXPECT_NE(refused(R"({"command": "fit", "model": "m", "cluster": "c"})").find("estimate or rank"),
            std::string::npos);
  EXPECT_NE(refused("[1, 2]").find("not a JSON object"), std::string::npos);
}

TEST(Request, EstimateReportsTheSameStepAsTheEstimatorAndItsRequest) {
  const EstimateReport r = run_estimate(llama_estimate());
  EXPECT_EQ(r.request.software, "megatron-core");  // the preset resolved
  EXPECT_EQ(r.verdict.exit_code, 0);
  EstimateOptions opt;
  const Estimate direct = estimate(load_model("llama3-8b"), load_cluster("dgx-h100", 16),
                                   parse_strategy(llama_estimate().strategy, 16), opt);
  EXPECT_DOUBLE_EQ(r.estimate.step_time_s, direct.step_time_s);
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j.at("request").at("strategy"), llama_estimate().strategy);
  EXPECT_DOUBLE_EQ(j.at("step_time_s").get<double>(), round6(direct.step_time_s));
  EXPECT_GT(r.uncertainty.relative, 0);
}

TEST(Request, APlanThatDoesNotFitEndsWithExitOne) {
  PlanRequest q = llama_estimate();
  q.model = "llama3-70b";
  q.strategy = "tp=1,pp=1,dp=16,mbs=1,gbs=64";
  const EstimateReport r = run_estimate(q);
  EXPECT_FALSE(r.estimate.feasible);
  EXPECT_EQ(r.verdict.exit_code, 1);
  EXPECT_EQ(r.verdict.message.rfind("the strategy does not fit: ", 0), 0u);
}

TEST(Request, RankTakesTheFixedLengthSearchAndSaysWhatFitsWhereNothingDoes) {
  PlanRequest q;
  q.command = "rank";
  q.model = "llama3-70b";
  q.cluster = "dgx-h100";
  q.gpus = 1;
  q.gbs = 8;
  const RankReport r = run_rank(q);
  ASSERT_TRUE(r.fixed);
  EXPECT_FALSE(r.varlen || r.replanned || r.graph);
  EXPECT_EQ(r.fixed->feasible, 0);
  EXPECT_EQ(r.verdict.exit_code, 1);
  EXPECT_NE(r.verdict.message.find("the fewest GPUs (doubling) that hold it"), std::string::npos);
  // Variable-length data takes the variable-length search.
  q.model = "llama3-8b";
  q.gpus = 8;
  q.top = 2;
  q.varlen.dist = "fixed:1024";
  q.varlen.batches = 2;
  const RankReport v = run_rank(q);
  ASSERT_TRUE(v.varlen);
  EXPECT_FALSE(v.fixed);
  EXPECT_EQ(to_json(v).at("strategies").size(), 2u);
}

TEST(Request, AFixEveryPlanTurnsAwayIsBadInputFoundByPricing) {
  PlanRequest q;
  q.command = "rank";
  q.model = "gpt3-1.3b";  // 16 heads
  q.cluster = "dgx-a100";
  q.gpus = 6;
  q.gbs = 66;
  q.fix = "tp=3";
  const RankReport r = run_rank(q);
  EXPECT_EQ(r.fixed->feasible, 0);
  EXPECT_EQ(r.verdict.exit_code, 2);
  EXPECT_NE(r.verdict.message.find("every plan of 6 GPUs that takes it is turned away"),
            std::string::npos);
  // Variable-length keys without variable-length data: refused before any search.
  q.fix = "balance=sorted";
  EXPECT_THROW(run_rank(q), InputError);
}

TEST(Request, AReportsJsonRunsAgainAsItsRequest) {
  const EstimateReport r = run_estimate(llama_estimate());
  const std::string path = ::testing::TempDir() + "report.json";
  std::ofstream(path) << json_text(to_json(r));
  const PlanRequest again = load_plan_request(path);
  EXPECT_EQ(json_text(to_json(run_estimate(again))), json_text(to_json(r)));
  std::remove(path.c_str());
}

TEST(Request, OperatorGraphOptionsAreRefusedForTransformersAndBack) {
  PlanRequest q = llama_estimate();
  q.optimizer = "adam";
  EXPECT_THROW(run_estimate(q), InputError);
  q = llama_estimate();
  q.model = "x.onnx";
  q.seq_len = 128;
  EXPECT_THROW(run_estimate(q), InputError);
}

// The sibling planners' requests as JSON (the Python module's): each read whole, then run as its
// command runs it.
std::string planner_refusal(const nlohmann::json& j) {
  try {
    (void)run_planner_json(j, "t");
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(PlannerRequest, EachKeyIsItsCommandsAndAnUnknownOneIsRefusedWithTheClosest) {
  const std::string onnx = std::string(SHARDCOST_SOURCE_DIR) + "/tests/data/onnx/cnn-dynamic.onnx";
  EXPECT_TRUE(is_planner_command("shard-tables") && !is_planner_command("rank"));
  EXPECT_NE(
      planner_refusal({{"command", "place"}, {"model", onnx}, {"cluster", "dgx-a100"}, {"gpu", 4}})
          .find("did you mean 'gpus'"),
      std::string::npos);
  EXPECT_NE(planner_refusal({{"command", "place"}, {"cluster", "dgx-a100"}}).find("'model'"),
            std::string::npos);
  EXPECT_NE(planner_refusal({{"command", "schedule"}, {"cluster", "dgx-h100"}}).find("\"jobs\""),
            std::string::npos);
  EXPECT_NE(
      planner_refusal(
          {{"command", "schedule"}, {"cluster", "dgx-h100"}, {"search", "s.json"}, {"spill", true}})
          .find("'spill'"),
      std::string::npos);
  EXPECT_NE(planner_refusal({{"command", "fit"}}).find("not a planner"), std::string::npos);
  EXPECT_NE(planner_refusal(nlohmann::json::array()).find("not a JSON object"), std::string::npos);
  // A placement runs and says how it ended, as place --format json prints it.
  const PlannerRun r = run_planner_json(
      {{"command", "place"}, {"model", onnx}, {"cluster", "dgx-a100"}, {"gpus", 4}}, "t");
  EXPECT_EQ(r.verdict.exit_code, 0);
  EXPECT_TRUE(r.report.at("feasible").get<bool>());
  EXPECT_EQ(r.report.at("gpus"), 4);
}

TEST(PlannerRequest, DenseMlpsAreListsOfWidthsOrTheCommandLinesText) {
  const std::string tables =
      std::string(SHARDCOST_SOURCE_DIR) + "/data/examples/criteo-kaggle-tables.csv";
  auto dense = [&](const nlohmann::json& mlp) {
    const nlohmann::json j = {{"command", "shard-tables"},
                              {"tables", tables},
                              {"cluster", "dgx-a100"},
                              {"gpus", 8},
                              {"batch", 4096},
                              {"dense_mlp", mlp}};
    return run_planner_json(j, "t").report.at("dense").at("parameters").get<double>();
  };
  // 13x512 + 512x256 and their biases.
  const double one = 13 * 512 + 512 + 512 * 256 + 256;
  EXPECT_DOUBLE_EQ(dense("13,512,256"), one);
  EXPECT_DOUBLE_EQ(dense({13, 512, 256}), one);
  EXPECT_DOUBLE_EQ(dense({{13, 512, 256}, "256,1"}), one + 256 + 1);
  for (const nlohmann::json& bad :
       {nlohmann::json("13,x"), nlohmann::json({13}), nlohmann::json({13, -4}), nlohmann::json(7)})
    EXPECT_NE(planner_refusal({{"command", "shard-tables"},
                               {"tables", tables},
                               {"cluster", "dgx-a100"},
                               {"batch", 4096},
                               {"dense_mlp", bad}})
                  .find("dense_mlp"),
              std::string::npos)
        << bad.dump();
}

}  // namespace
}  // namespace shardcost
