// Embedding tables: files, the shard cost model by hand, the planner against TorchRec's
// greedy baseline, memory limits.
#include "shardcost/embeddings.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "embeddings/cost.h"
#include "shardcost/error.h"
#include "test_models.h"

namespace shardcost {
namespace {

TEST(Embeddings, FilesAreReadStrictly) {
  const auto t = parse_tables(R"({"tables": [
      {"name": "user", "rows": 1e7, "dim": 128, "pooling_factor": 1},
      {"rows": 5000, "dim": 64, "pooling_factor": 30, "dtype": "fp16", "zipf": 1.1}]})",
                              "tables.json");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].rows, 10000000);
  EXPECT_EQ(t[1].name, "t1");
  EXPECT_EQ(t[1].dtype_bytes, 2);
  const auto csv =
      parse_tables("name,rows,dim,pooling_factor\na,100,16,2.5\nb,200,32,1\n", "tables.csv");
  ASSERT_EQ(csv.size(), 2u);
  EXPECT_EQ(csv[0].pooling, 2.5);
  auto error = [](const char* text) {
    return test_models::input_error_of([&] { (void)parse_tables(text, "tables.json"); });
  };
  EXPECT_NE(error(R"({"tables": [{"rows": 0, "dim": 8, "pooling_factor": 1}]})").find("rows"),
            std::string::npos);
  EXPECT_NE(error(R"({"tables": [{"rows": 10, "dim": 0, "pooling_factor": 1}]})").find("dim"),
            std::string::npos);
  EXPECT_NE(error("name,rows,dim,pooling_factor\na,100,16,lots\n")
                .find("line 2: pooling_factor 'lots' is not a number"),
            std::string::npos);
  EXPECT_NE(error(R"({"tables": [{"rows": 10, "dim": 8, "pooling": 1}]})").find("'pooling'"),
            std::string::npos);
  EXPECT_NE(error(R"({"tables": [{"rows": 10, "dim": 8, "pooling_factor": 1, "dtype": "int8"}]})")
                .find("give fp32, fp16 or bf16"),
            std::string::npos);
}

// Expected distinct rows: uniform 1 - exp(-n/R) of the rows; a skewed table touches fewer.
TEST(Embeddings, UniqueRowsFollowTheDraws) {
  EmbeddingTable t;
  t.rows = 1000000;
  t.dim = 64;
  EXPECT_NEAR(embeddings::CostModel::unique_rows(t, 1e6), 1e6 * (1 - std::exp(-1.0)), 1);
  EXPECT_NEAR(embeddings::CostModel::unique_rows(t, 10), 10, 1e-3);
  t.zipf = 1.05;
  EXPECT_LT(embeddings::CostModel::unique_rows(t, 1e6), 0.5 * 1e6 * (1 - std::exp(-1.0)));
  EXPECT_GT(embeddings::CostModel::unique_rows(t, 1e6), 1000);
}

// One table-wise shard by hand: on an H100 at its streaming rate, fp32, row-wise Adagrad.
TEST(Embeddings, AShardsBytesByHand) {
  const Cluster c = load_cluster("dgx-h100", 8);
  ShardingOptions o;
  o.batch = 1024;
  const embeddings::CostModel m(c, o, {});
  EmbeddingTable t;
  t.rows = 1 << 20;
  t.dim = 128;
  t.pooling = 10;
  const double lookups = 1024 * 10.0, row = 128 * 4.0;
  const double unique = embeddings::CostModel::unique_rows(t, lookups);
  const double bytes = lookups * row + 1024 * row +                          // gather, pooled out
                       1024 * row + lookups * 512 + unique * (2 * row + 8);  // grads, update
  const Device h100 = find_device("h100-sxm5-80gb");
  const double rate = h100.memory_bandwidth_Bps * h100.memory_efficiency;
  EXPECT_NEAR(m.compute_s(t, 1, 128, lookups, 1024), bytes / rate, 0.05 * bytes / rate);
  EXPECT_DOUBLE_EQ(m.memory_bytes(t, 1 << 20, 128), (1 << 20) * (128 * 4.0 + 4));
}

std::vector<EmbeddingTable> dlrm_like(int n, std::mt19937& rng) {
  std::lognormal_distribution<double> rows(13, 2.5), pooling(1.5, 1.2);
  std::vector<EmbeddingTable> out;
  const int dims[] = {32, 64, 128, 256};
  for (int i = 0; i < n; ++i) {
    EmbeddingTable t;
    t.name = fmt::format("t{}", i);
    t.rows = std::clamp<int64_t>(static_cast<int64_t>(rows(rng)), 10, 40000000);
    t.dim = dims[i % 4];
    t.pooling = std::clamp(pooling(rng), 1.0, 200.0);
    out.push_back(t);
  }
  return out;
}

// The search is never worse than the greedy baseline under its own cost model, and every
// GPU stays within its memory.
TEST(Embeddings, TheSearchIsNeverWorseThanGreedyAndFitsMemory) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 6; ++trial) {
    const auto tables = dlrm_like(20 + 15 * trial, rng);
    const Cluster c = load_cluster("dgx-a100", trial % 2 ? 16 : 8);
    ShardingOptions o;
    o.batch = 4096;
    const ShardingResult r = shard_tables(tables, c, o);
    EXPECT_LE(r.plan.step_s, r.greedy.step_s * (1 + 1e-12)) << "trial " << trial;
    EXPECT_EQ(r.plan.tables.size(), tables.size());
    const double budget = c.groups.front().device.memory_bytes * o.memory_fraction;
    for (const GpuLoad& g : r.plan.gpus) EXPECT_LE(g.memory_bytes, budget * (1 + 1e-12));
    for (const GpuLoad& g : r.greedy.gpus) EXPECT_LE(g.memory_bytes, budget * (1 + 1e-12));
    EXPECT_GE(r.plan.balance(), 1.0);
  }
}

// A table too large for one GPU goes row-wise in the baseline; one too large for all of them
// is one line naming it.
TEST(Embeddings, TablesLargerThanAGpu) {
  const Cluster c = load_cluster("dgx-a100", 8);
  ShardingOptions o;
  o.batch = 1024;
  EmbeddingTable big;
  big.name = "huge";
  big.rows = 200000000;  // 200 M x 128 fp32: 95 GiB
  big.dim = 128;
  big.pooling = 1;
  const ShardingResult r = shard_tables({big}, c, o);
  EXPECT_EQ(r.greedy.tables[0].type, ShardingType::row_wise);
  EXPECT_NE(r.plan.tables[0].type, ShardingType::table_wise);
  big.rows = 4000000000;  // 1.9 TiB: more than 8 x 56 GiB
  const std::string e = test_models::input_error_of([&] { (void)shard_tables({big}, c, o); });
  EXPECT_NE(e.find("table 'huge'"), std::string::npos) << e;
  EXPECT_NE(e.find("fits no sharding"), std::string::npos) << e;
  o.batch = 0;
  EXPECT_NE(test_models::input_error_of([&] { (void)shard_tables({big}, c, o); }).find("--batch"),
            std::string::npos);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// Where TorchRec's greedy packing runs out of room the search goes on (the review's case:
// 31.7 + 10.6 + 55.3 GiB over two GPUs of 56 GiB each).
TEST(Embeddings, TheSearchFitsWhereGreedyPackingDoesNot) {
  const Cluster c = load_cluster("dgx-a100", 2);
  ShardingOptions o;
  o.batch = 65536;
  std::vector<EmbeddingTable> tables(3);
  tables[0] = {"X", 66000000, 128, 100, 4, 0, {}};
  tables[1] = {"Y", 22000000, 128, 10, 4, 0, {}};
  tables[2] = {"Z", 115000000, 128, 1, 4, 0, {}};
  const ShardingResult r = shard_tables(tables, c, o);
  EXPECT_EQ(r.greedy_failed, "Z");
  ASSERT_EQ(r.plan.tables.size(), 3u);
  const double budget = c.groups.front().device.memory_bytes * o.memory_fraction;
  for (const GpuLoad& g : r.plan.gpus) EXPECT_LE(g.memory_bytes, budget);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// Each placed table's shards, as the passes bench embedding --plan runs, cost what the plan
// charged the table: the pass geometry and the planner's candidates agree.
TEST(Embeddings, ShardPassesAreWhatThePlanPriced) {
  std::mt19937 rng(11);
  const auto tables = dlrm_like(40, rng);
  const Cluster c = load_cluster("dgx-a100", 16);
  ShardingOptions o;
  o.batch = 8192;
  const ShardingResult r = shard_tables(tables, c, o);
  const embeddings::CostModel m(c, o, {});
  std::set<ShardingType> seen;
  for (const ShardingPlan* plan : {&r.plan, &r.greedy})
    for (const TablePlacement& p : plan->tables) {
      const EmbeddingTable& t = tables[p.table];
      seen.insert(p.type);
      double sum = 0;
      const auto passes = shard_passes(p, t, c, o.batch);
      ASSERT_EQ(passes.size(), p.gpus.size());
      for (const ShardPass& s : passes)
        sum += m.compute_s(t, s.rows / static_cast<double>(t.rows), s.dim, s.batch * s.pooling,
                           s.batch);
      EXPECT_NEAR(sum, p.compute_s, 1e-12 + 1e-9 * p.compute_s)
          << t.name << " " << to_string(p.type);
    }
  EXPECT_GE(seen.size(), 2u);
}

// A source with a lookup model prices the shards: the plan says so, pays the model's fixed
// part once per GPU, and is still never worse than the greedy baseline.
class FakeLookups final : public CostSource {
 public:
  std::optional<Priced> gemm(const Device&, DType, const GemmShape&) const override {
    return std::nullopt;
  }
  std::optional<Priced> collective(const Device&, CollectiveOp, double, GroupShape) const override {
    return std::nullopt;
  }
  std::optional<EmbeddingPriced> embedding(const Device&, const EmbeddingPass& p) const override {
    // 40 us fixed, 2 ns a lookup, 10 ns per distinct row touched backward.
    const double lookups = p.batch * p.pooling;
    const double s =
        40e-6 + 2e-9 * lookups +
        (p.backward ? 10e-9 * embeddings::CostModel::unique_rows(
                                  {"", static_cast<int64_t>(p.rows), 1, 1, 4, p.zipf, {}}, lookups)
                    : 0);
    return EmbeddingPriced{{s, CostOrigin::learned}, 40e-6};
  }
};

TEST(Embeddings, LearnedLookupsPriceTheShards) {
  std::mt19937 rng(3);
  const auto tables = dlrm_like(30, rng);
  const Cluster c = load_cluster("dgx-a100", 8);
  ShardingOptions o;
  o.batch = 4096;
  const FakeLookups source;
  EstimateOptions e;
  e.costs = &source;
  const ShardingResult r = shard_tables(tables, c, o, e);
  EXPECT_EQ(r.lookup_costs, "learned");
  EXPECT_LE(r.plan.step_s, r.greedy.step_s * (1 + 1e-12));
  const embeddings::CostModel m(c, o, e);
  EXPECT_DOUBLE_EQ(m.launch_s(), 80e-6);  // forward and backward fixed parts, once a GPU
  // One table-wise shard: both passes less their fixed parts.
  const EmbeddingTable& t = tables[0];
  const double lookups = o.batch * t.pooling;
  const double want = 2 * 2e-9 * lookups + 10e-9 * embeddings::CostModel::unique_rows(t, lookups);
  EXPECT_NEAR(m.compute_s(t, 1, t.dim, lookups, o.batch), want, 1e-15);
  const ShardingResult catalog = shard_tables(tables, c, o);
  EXPECT_EQ(catalog.lookup_costs, "catalog");
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// The dense part: every layer's three GEMMs at the cluster's prices plus one gradient
// all-reduce, added alike to the search's and the baseline's step; too large a dense part for
// what a GPU keeps beside the tables is one line.
TEST(Embeddings, TheDenseMlpsAddToEveryPlan) {
  std::mt19937 rng(5);
  const auto tables = dlrm_like(20, rng);
  const Cluster c = load_cluster("dgx-a100", 8);
  ShardingOptions o;
  o.batch = 8192;
  const ShardingResult bare = shard_tables(tables, c, o);
  o.dense_mlps = {{13, 512, 256, 128}, {479, 1024, 1024, 512, 256, 1}};
  const ShardingResult r = shard_tables(tables, c, o);
  const double params = 13 * 512 + 512 + 512 * 256 + 256 + 256 * 128 + 128 + 479 * 1024 + 1024 +
                        1024 * 1024 + 1024 + 1024 * 512 + 512 + 512 * 256 + 256 + 256 + 1;
  EXPECT_DOUBLE_EQ(r.dense.parameters, params);
  const embeddings::CostModel m(c, o, {});
  double gemms = 0;
  for (const auto& mlp : o.dense_mlps)
    for (size_t l = 0; l + 1 < mlp.size(); ++l)
      gemms += m.gemm_s({1024, mlp[l + 1], mlp[l], 1}, DType::fp32) +
               m.gemm_s({1024, mlp[l], mlp[l + 1], 1}, DType::fp32) +
               m.gemm_s({mlp[l], mlp[l + 1], 1024, 1}, DType::fp32);
  EXPECT_NEAR(r.dense.compute_s, gemms, 1e-15);
  EXPECT_NEAR(r.dense.all_reduce_s, m.data_parallel_s(params * 4), 1e-15);
  EXPECT_NEAR(r.plan.step_s - bare.plan.step_s, r.dense.compute_s + r.dense.all_reduce_s, 1e-12);
  EXPECT_NEAR(r.greedy.step_s - bare.greedy.step_s, r.dense.compute_s + r.dense.all_reduce_s,
              1e-12);
  o.dense_mlps = {{100000, 100000, 100000}};  // 20 G parameters: no GPU keeps that
  const std::string e = test_models::input_error_of([&] { (void)shard_tables(tables, c, o); });
  EXPECT_NE(e.find("the dense MLPs need"), std::string::npos) << e;
  o.dense_mlps = {{13}};
  EXPECT_NE(test_models::input_error_of([&] {
              (void)shard_tables(tables, c, o);
            }).find("at least two layer widths"),
            std::string::npos);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// The skew as a histogram: read from either format, checked, and priced through its buckets
// (one bucket is uniform access; a hot bucket touches fewer distinct rows).
TEST(Embeddings, HistogramsOfAccessAreTheSkew) {
  const auto t = parse_tables(R"({"tables": [{"name": "h", "rows": 1e6, "dim": 64,
      "pooling_factor": 4, "histogram": [[0.01, 0.6], [0.99, 0.4]]}]})",
                              "tables.json");
  ASSERT_EQ(t[0].histogram.size(), 2u);
  const auto csv = parse_tables(
      "name,rows,dim,pooling_factor,histogram\nh,1000000,64,4,0.01:0.6;0.99:0.4\n", "t.csv");
  EXPECT_EQ(csv[0].histogram, t[0].histogram);
  EmbeddingTable flat = t[0];
  flat.histogram = {{1.0, 1.0}};
  EmbeddingTable uniform = t[0];
  uniform.histogram.clear();
  EXPECT_NEAR(embeddings::CostModel::unique_rows(flat, 5e5),
              embeddings::CostModel::unique_rows(uniform, 5e5), 1e-6);
  const double hot = embeddings::CostModel::unique_rows(t[0], 5e5);
  // By hand: 10,000 rows take 300,000 draws (all seen), 990,000 take 200,000.
  EXPECT_NEAR(hot, 1e4 * (1 - std::exp(-30.0)) + 9.9e5 * (1 - std::exp(-2e5 / 9.9e5)), 1e-3);
  auto error = [](const char* text) {
    return test_models::input_error_of([&] { (void)parse_tables(text, "t.json"); });
  };
  EXPECT_NE(error(R"({"tables": [{"rows": 10, "dim": 8, "pooling_factor": 1,
      "histogram": [[0.5, 0.6], [0.4, 0.4]]}]})")
                .find("add up to 1"),
            std::string::npos);
  EXPECT_NE(error(R"({"tables": [{"rows": 10, "dim": 8, "pooling_factor": 1, "zipf": 1,
      "histogram": [[1, 1]]}]})")
                .find("once"),
            std::string::npos);
  EXPECT_NE(error(R"({"tables": [{"rows": 10, "dim": 8, "pooling_factor": 1,
      "histogram": [1, 1]}]})")
                .find("histogram"),
            std::string::npos);
  const Cluster c = load_cluster("dgx-a100", 8);
  ShardingOptions o;
  o.batch = 4096;
  EXPECT_EQ(shard_tables(t, c, o).plan.tables.size(), 1u);
}

}  // namespace
}  // namespace shardcost
