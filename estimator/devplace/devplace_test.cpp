#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>

#include "devplace/stage_costs.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost {
namespace {

std::string path(const char* rel) {
  return std::string(SHARDCOST_SOURCE_DIR) + "/" + rel;
}

// Two A100s and a V100, each a node of its own.
Cluster mixed(int a100 = 2, int v100 = 1) {
  return parse_cluster_json(fmt::format(R"({{"name": "mix", "inter_node_bandwidth_GBps": 12.5,
    "node_groups": [
      {{"name": "a", "device": "a100-sxm4-80gb", "nodes": {}, "gpus_per_node": 1, "intra_node_bandwidth_GBps": 300}},
      {{"name": "v", "device": "v100-sxm2-16gb", "nodes": {}, "gpus_per_node": 1, "intra_node_bandwidth_GBps": 300}}]}})",
                                        a100, v100),
                            "mix.json");
}

// Every placement: each operator a stage number, non-decreasing along every edge, the stages
// numbered 0..p-1 with none empty, each on a device of some group within its count.
double brute_force(const StageCosts& sc, const Cluster& c, int micro_batches) {
  const size_t n = sc.operators();
  double best = 1e300;
  for (int p = 1; p <= std::min<int>(c.total_gpus(), static_cast<int>(n)); ++p) {
    std::vector<int> stage(n, 0);
    std::function<void(size_t)> label = [&](size_t i) {
      if (i == n) {
        std::vector<OpSet> sets(static_cast<size_t>(p), OpSet(n));
        for (size_t v = 0; v < n; ++v) sets[static_cast<size_t>(stage[v])].add(v);
        for (const OpSet& s : sets)
          if (s.size() == 0) return;
        // Groups for the stages.
        std::vector<size_t> group(static_cast<size_t>(p), 0);
        std::function<void(size_t)> assign = [&](size_t k) {
          if (k == static_cast<size_t>(p)) {
            std::vector<int> used(sc.groups(), 0);
            double slowest = 0;
            for (size_t s = 0; s < group.size(); ++s) {
              if (++used[group[s]] > c.groups[group[s]].gpus()) return;
              const double mem = sc.weights(group[s], sets[s]) +
                                 static_cast<double>(p - static_cast<int>(s)) * sc.kept(sets[s]);
              if (mem > sc.capacity(group[s])) return;
              slowest = std::max(slowest, sc.seconds(group[s], sets[s]));
            }
            best = std::min(best, (micro_batches + p - 1) * slowest);
            return;
          }
          for (size_t gi = 0; gi < sc.groups(); ++gi) group[k] = gi, assign(k + 1);
        };
        assign(0);
        return;
      }
      for (int s = 0; s < p; ++s) {
        bool ok = true;
        for (size_t u : sc.producers()[i]) ok = ok && stage[u] <= s;
        if (!ok) continue;
        stage[i] = s;
        label(i + 1);
      }
    };
    label(0);
  }
  return best;
}

// odd-shapes (a branch from the input to an add, 8 operators) on 2 A100s and a V100, on one of
// each, and on an A100 and 2 V100s: the placement equals brute force's.
void equals_brute_force(PlacementOptions::Solver solver) {
  const OpGraph g = load_onnx(path("tests/data/onnx/odd-shapes.onnx"));
  for (auto [a, v] : {std::pair{2, 1}, std::pair{1, 1}, std::pair{1, 2}}) {
    const Cluster c = mixed(a, v);
    PlacementOptions o;
    o.micro_batch = 512;
    o.micro_batches = 8;
    o.solver = solver;
    o.program_time_s = 300;  // ample: each program stops once proven (seconds here)
    const DevicePlacement p = place_graph(g, c, o);
    ASSERT_TRUE(p.feasible) << p.reason;
    EXPECT_TRUE(p.exact) << p.note;
    const StageCosts sc(g, c, o);
    EXPECT_NEAR(p.step_s, brute_force(sc, c, 8), 1e-9 * p.step_s) << a << " + " << v;
    double slowest = 0;
    size_t ops = 0;
    for (const PlacedStage& s : p.stages) {
      EXPECT_LE(s.memory_bytes, s.capacity_bytes);
      slowest = std::max(slowest, s.seconds()), ops += s.operators.size();
    }
    EXPECT_NEAR(slowest, p.stage_s, 1e-15);
    EXPECT_EQ(ops, sc.operators());
  }
}

TEST(DevicePlacement, EqualsBruteForceOnSmallGraphs) {
  equals_brute_force(PlacementOptions::Solver::automatic);
}

TEST(DevicePlacement, TheIntegerProgramEqualsBruteForceOnSmallGraphs) {
  // The same cases by the integer program alone (GLPK), proven optimal.
  equals_brute_force(PlacementOptions::Solver::program);
}

TEST(DevicePlacement, AFastAndASlowDevice) {
  // VGG-16 over an A100 and a V100 (8 samples a micro-batch, 16 micro-batches): two stages
  // pace the pipeline faster than the A100 alone runs the whole model, every stage within its
  // device's memory.
  const OpGraph g = load_onnx(path("data/onnx/vgg16.onnx"));
  PlacementOptions o;
  o.micro_batch = 8;
  o.micro_batches = 16;
  const DevicePlacement two = place_graph(g, mixed(1, 1), o);
  ASSERT_TRUE(two.feasible) << two.reason;
  const Cluster alone = parse_cluster_json(
      R"({"name": "a", "inter_node_bandwidth_GBps": 12.5, "node_groups": [{"name": "a", "device": "a100-sxm4-80gb", "nodes": 1,
          "gpus_per_node": 1, "intra_node_bandwidth_GBps": 300}]})",
      "a.json");
  const DevicePlacement one = place_graph(g, alone, o);
  ASSERT_TRUE(one.feasible);
  ASSERT_EQ(one.stages.size(), 1u);
  EXPECT_EQ(one.stages[0].comm_s, 0);
  EXPECT_DOUBLE_EQ(one.step_s, 16 * one.stage_s);
  ASSERT_EQ(two.stages.size(), 2u);
  EXPECT_LT(two.stage_s, one.stage_s);
  EXPECT_LT(two.step_s, one.step_s);
  for (const PlacedStage& s : two.stages) {
    EXPECT_LE(s.memory_bytes, s.capacity_bytes);
    EXPECT_GT(s.comm_s, 0);  // the boundary activation and its gradient
  }
}

TEST(DevicePlacement, TooManyIdealsTakesTheIntegerProgramBesidePrefixes) {
  // odd-shapes past a limit of 2 ideals: the integer program finds the exact placement the
  // program over every ideal finds, and proves it.
  const OpGraph small = load_onnx(path("tests/data/onnx/odd-shapes.onnx"));
  PlacementOptions q;
  q.micro_batch = 512;
  q.micro_batches = 8;
  const DevicePlacement every = place_graph(small, mixed(2, 1), q);
  q.max_ideals = 2;
  q.program_time_s = 300;
  const DevicePlacement wide = place_graph(small, mixed(2, 1), q);
  EXPECT_NE(wide.note.find("integer program"), std::string::npos) << wide.note;
  EXPECT_TRUE(wide.exact) << wide.note;
  EXPECT_NEAR(wide.step_s, every.step_s, 1e-9 * every.step_s);

  // ResNet-50 past 50 ideals, a second for the program: never worse than the prefixes.
  const OpGraph g = load_onnx(path("data/onnx/resnet50.onnx"));
  PlacementOptions o;
  o.micro_batch = 8;
  o.max_ideals = 50;
  o.program_time_s = 1;
  const DevicePlacement p = place_graph(g, mixed(2, 2), o);
  EXPECT_NE(p.note.find("prefixes"), std::string::npos);
  ASSERT_TRUE(p.feasible);
  o.max_ideals = 20000;
  const DevicePlacement exact = place_graph(g, mixed(2, 2), o);
  EXPECT_TRUE(exact.exact);
  EXPECT_LE(exact.step_s, p.step_s * (1 + 1e-12));  // prefixes are ideals too
}

TEST(DevicePlacement, BadInput) {
  const OpGraph g = load_onnx(path("data/onnx/vgg16.onnx"));
  PlacementOptions o;
  o.micro_batch = 0;
  EXPECT_THROW(place_graph(g, mixed(), o), InputError);
  o.micro_batch = 1;
  EXPECT_THROW(place_graph(g, load_cluster("dgx-a100", 72), o), InputError);  // > 64 devices
}

}  // namespace
}  // namespace shardcost
