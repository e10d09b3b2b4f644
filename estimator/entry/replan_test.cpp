// Networks that change (issue 19, item 3): bandwidth traces, one plan over them, replanning.
#include <gtest/gtest.h>

#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost {
namespace {

constexpr double kGBps = 1e9;

TEST(NetworkTrace, PointsMustIncreaseAndBandwidthsBePositive) {
  EXPECT_THROW(checked_trace({{0, 25}}, "t"), InputError);            // one point
  EXPECT_THROW(checked_trace({{0, 25}, {0, 5}}, "t"), InputError);    // not increasing
  EXPECT_THROW(checked_trace({{10, 25}, {5, 5}}, "t"), InputError);   // decreasing
  EXPECT_THROW(checked_trace({{0, 25}, {60, -1}}, "t"), InputError);  // negative
  EXPECT_THROW(checked_trace({{0, 25}, {60, 0}}, "t"), InputError);   // zero
  EXPECT_THROW(checked_trace({{-1, 25}, {60, 5}}, "t"), InputError);  // before 0
  const BandwidthTrace t = checked_trace({{0, 25}, {60, 5}, {90, 5}}, "t");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_DOUBLE_EQ(t[1].second, 5 * kGBps);
  const BandwidthTrace csv = parse_network_trace_csv(
      "seconds,bandwidth_GBps\n0,50\n# a comment\n30,2.5\r\n60,2.5\n", "x.csv");
  ASSERT_EQ(csv.size(), 3u);
  EXPECT_DOUBLE_EQ(csv[1].first, 30);
  EXPECT_THROW(parse_network_trace_csv("0,50\n30;2\n", "x.csv"), InputError);
  EXPECT_THROW(parse_network_trace_csv("0,50\n", "x.csv"), InputError);
}

TEST(NetworkTrace, SegmentsMergeTheTracesBreakpoints) {
  // A network trace and a link's trace: the union of their points, up to the earlier end.
  Cluster c = parse_cluster_json(R"({"name": "mix", "inter_node_bandwidth_GBps": 50,
    "node_groups": [
      {"name": "a", "device": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8, "intra_node_bandwidth_GBps": 300},
      {"name": "h", "device": "h100-sxm5-80gb", "nodes": 1, "gpus_per_node": 8, "intra_node_bandwidth_GBps": 450}],
    "links": [{"between": ["a", "h"], "bandwidth_GBps": 12.5, "trace": [[0, 12.5], [100, 1], [300, 1]]}]})",
                                 "mix.json");
  EXPECT_TRUE(network_segments(c).size() == 2);
  c.network_trace = checked_trace({{0, 50}, {50, 10}, {200, 50}, {400, 50}}, "net");
  const auto s = network_segments(c);
  ASSERT_EQ(s.size(), 4u);  // 0-50, 50-100, 100-200, 200-300
  EXPECT_EQ(s[1].start_s, 50);
  EXPECT_EQ(s[3].end_s, 300);
  EXPECT_DOUBLE_EQ(s[1].cluster.inter_node.bandwidth_Bps, 10 * kGBps);
  EXPECT_DOUBLE_EQ(s[1].cluster.links[0].fabric.bandwidth_Bps, 12.5 * kGBps);
  EXPECT_DOUBLE_EQ(s[2].cluster.links[0].fabric.bandwidth_Bps, 1 * kGBps);
  EXPECT_EQ(s[2].bandwidths, "network 10 GB/s, a-h 1 GB/s");
}

TEST(NetworkTrace, MeasuredSweepsScaleWithTheTracedBandwidth) {
  // dgx-a100's network has no sweep; give one and halve the bandwidth: each point halves.
  Cluster c = load_cluster("dgx-a100", 16);
  c.inter_node.busbw_curves[0] = {{1e6, 10 * kGBps}, {1e9, 20 * kGBps}};
  c.network_trace = checked_trace({{0, 12.5}, {10, 12.5}}, "net");
  const auto s = network_segments(c);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].cluster.inter_node.busbw_curves[0][1].busbw_Bps, 10 * kGBps);
}

TEST(Replan, NeverFewerStepsThanTheBestSinglePlanAndSlowerWhenTheNetworkIs) {
  Cluster c = load_cluster("dgx-h100", 64);
  c.network_trace = checked_trace({{0, 50}, {600, 1}, {900, 50}, {1200, 50}}, "net");
  const Model m = load_model("llama3-8b");
  const auto w = transformer_workload(m);
  const Strategy s = parse_strategy("tp=1,dp=64,mbs=1,gbs=128,zero=2", 64);
  const TraceEstimate t = estimate_over_trace(*w, c, plan_of(s));
  ASSERT_TRUE(t.segments.at(0).estimate.feasible) << t.segments[0].estimate.reason;
  ASSERT_EQ(t.segments.size(), 3u);
  EXPECT_GT(t.segments[1].estimate.step_time_s, t.segments[0].estimate.step_time_s);
  EXPECT_DOUBLE_EQ(t.segments[0].estimate.step_time_s, t.segments[2].estimate.step_time_s);
  double steps = 0;
  for (const auto& seg : t.segments) steps += (seg.end_s - seg.start_s) / seg.estimate.step_time_s;
  EXPECT_DOUBLE_EQ(t.steps, steps);
  EXPECT_EQ(t.duration_s, 1200);

  RankOptions ro;
  ro.global_batch = 128;
  const ReplanResult r = replan(m, c, ro);
  ASSERT_EQ(r.best.size(), 3u);
  EXPECT_GE(r.replan_steps, r.single_steps * (1 - 1e-12));
  for (size_t i = 0; i < r.best.size(); ++i) {
    if (r.single_step_s[i] > 0) {
      EXPECT_LE(r.best[i].estimate.step_time_s, r.single_step_s[i] * (1 + 1e-12));
    }
  }
  // No trace: said so.
  EXPECT_THROW(replan(m, load_cluster("dgx-h100", 64), ro), InputError);
}

}  // namespace
}  // namespace shardcost
