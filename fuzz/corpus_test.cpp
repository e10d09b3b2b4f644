// Replays the kept fuzz corpus through the same entry points on every build: each input must
// parse or fail with an InputError (a crash or another exception fails the test).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "fuzz_targets.h"

namespace {

void replay(const char* dir, void (*target)(const uint8_t*, size_t)) {
  const std::filesystem::path root = std::filesystem::path(SHARDCOST_FUZZ_CORPUS) / dir;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(target(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    ++files;
  }
  EXPECT_GT(files, 5) << "corpus " << root << " is nearly empty";
}

TEST(FuzzCorpus, ModelJson) {
  replay("model", shardcost::fuzz::model_json);
}

TEST(FuzzCorpus, OnnxModel) {
  replay("onnx", shardcost::fuzz::onnx_model);
}
TEST(FuzzCorpus, ClusterJson) {
  replay("cluster", shardcost::fuzz::cluster_json);
}
TEST(FuzzCorpus, StrategyText) {
  replay("strategy", shardcost::fuzz::strategy_text);
}
TEST(FuzzCorpus, JobsFile) {
  replay("jobs", shardcost::fuzz::jobs_file);
}
TEST(FuzzCorpus, TablesFile) {
  replay("tables", shardcost::fuzz::tables_file);
}
TEST(FuzzCorpus, RunsTable) {
  replay("runs_table", shardcost::fuzz::runs_table);
}
TEST(FuzzCorpus, MegatronLog) {
  replay("megatron_log", shardcost::fuzz::megatron_log);
}
TEST(FuzzCorpus, TorchtitanLog) {
  replay("torchtitan_log", shardcost::fuzz::torchtitan_log);
}
TEST(FuzzCorpus, NemoLog) {
  replay("nemo_log", shardcost::fuzz::nemo_log);
}
TEST(FuzzCorpus, JobInstance) {
  replay("job_instance", shardcost::fuzz::job_instance);
}
TEST(FuzzCorpus, PlanJson) {
  replay("plan", shardcost::fuzz::plan_json);
}
TEST(FuzzCorpus, FittedModelJson) {
  replay("fitted_model", shardcost::fuzz::fitted_model_json);
}
TEST(FuzzCorpus, SeqDistText) {
  replay("seq_dist", shardcost::fuzz::seq_dist_text);
}
TEST(FuzzCorpus, KinetoJson) {
  replay("kineto", shardcost::fuzz::kineto_json);
}
TEST(FuzzCorpus, NcclTests) {
  replay("nccl_tests", shardcost::fuzz::nccl_tests);
}

}  // namespace
