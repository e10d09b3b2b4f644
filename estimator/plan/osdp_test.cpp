// Per-layer sharding (OSDP; docs/seed-planners.md, item 1): the mask's text, its checks, and a
// two-layer model on two GPUs priced by hand.
#include <gtest/gtest.h>

#include <string>

#include "plan/estimate_internal.h"
#include "plan/memory.h"
#include "plan/placement.h"
#include "plan/schedule.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "test_models.h"

namespace shardcost {
namespace {

TEST(ZeroLayers, TextRoundTripsAndMergesRuns) {
  Strategy s = parse_strategy("tp=1,gbs=8,zero=1,zero_layers=s3/rx2/r/s/s2x2/r", 8);
  EXPECT_EQ(s.zero_layers, (std::vector<int>{3, 0, 0, 0, 1, 2, 2, 0}));
  EXPECT_EQ(zero_layers_text(s.zero_layers), "s3/rx3/s/s2x2/r");
  EXPECT_NE(to_string(s).find(",zero_layers=s3/rx3/s/s2x2/r"), std::string::npos);
  // Runs and slices from the text, as written.
  EXPECT_EQ(parse_strategy("gbs=8,zero_layers=sx3", 8).zero_layers, (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(parse_strategy("gbs=8,zero_layers=s4x2", 8).zero_layers, (std::vector<int>{4, 4}));
}

TEST(ZeroLayers, BadMarksAreOneLineNamingTheKey) {
  for (const char* bad : {"q", "r2", "sx", "s0", "rx0", "s/", "sxx2", "s2y", "s2000"}) {
    const std::string why = test_models::input_error_of(
        [&] { (void)parse_strategy(std::string("gbs=8,zero_layers=") + bad, 8); });
    EXPECT_NE(why.find("strategy key 'zero_layers'"), std::string::npos) << bad << ": " << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << bad;
  }
}

TEST(ZeroLayers, AMaskMustMatchTheLayersAndLeaveReplicatedOnesBelowZero3) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 64);
  const auto w = transformer_workload(m);
  // 32 layers: 34 marks (the embedding, the layers, the head).
  Strategy s = parse_strategy("tp=1,gbs=128,zero=1,zero_layers=s/rx31/s", 64);
  ASSERT_TRUE(check_strategy(*w, c, s).has_value());
  EXPECT_EQ(*check_strategy(*w, c, s),
            "zero_layers gives 33 marks for 32 layers; give 34: one for the embedding, one per "
            "layer, one for the head");
  s = parse_strategy("tp=1,gbs=128,zero=3,zero_layers=s/rx32/s", 64);
  EXPECT_NE(check_strategy(*w, c, s).value_or("").find("with zero=3 every layer is sharded"),
            std::string::npos);
  s = parse_strategy("tp=1,gbs=128,zero=1,zero_layers=s/rx32/s", 64);
  EXPECT_FALSE(check_strategy(*w, c, s).has_value());
  // Stacks: no ZeRO-3 to shard with; no ZeRO-3 under pipelining.
  EXPECT_NE(unsupported(software_preset("megatron-lm-2022"), s).value_or("").find("no ZeRO-3"),
            std::string::npos);
  s.pp = 2;
  EXPECT_NE(unsupported(software_preset("megatron-core"), s).value_or("").find("pipeline"),
            std::string::npos);
  s.zero = 0;  // torchtitan's stages are 0 and 3
  EXPECT_NE(unsupported(software_preset("torchtitan"), s).value_or("").find("once a step"),
            std::string::npos);
}

TEST(ZeroLayers, ATiedHeadIsMarkedAsTheEmbedding) {
  // Gemma 2 2B's shape ties its head to the embedding: one sharded and the other replicated
  // would gather the table for one use and not the other.
  const Model m =
      load_model(std::string(SHARDCOST_SOURCE_DIR) + "/data/examples/gemma2-2b-shape.json");
  const Cluster c = load_cluster("abci-v100", 64);
  const auto w = transformer_workload(m);
  Strategy s = parse_strategy("tp=2,cp=2,gbs=256,sp=true,zero=1,zero_layers=s/rx26/r", 64);
  EXPECT_NE(check_strategy(*w, c, s).value_or("").find("tied embeddings"), std::string::npos);
  s = parse_strategy("tp=2,cp=2,gbs=256,sp=true,zero=1,zero_layers=s/rx26/s", 64);
  EXPECT_FALSE(check_strategy(*w, c, s).has_value());
}

// Two layers of 60 parameters between an embedding of 100 and a head of 40; no compute.
Graph two_layers() {
  Graph g;
  Block emb, layer, head;
  emb.pin = Block::Pin::first_stage, emb.dense_params = 100, emb.largest_tensor_params = 100;
  layer.count = 2, layer.dense_params = 60, layer.largest_tensor_params = 40;
  head.pin = Block::Pin::last_stage, head.dense_params = 40, head.largest_tensor_params = 40;
  g.blocks = {emb, layer, head};
  return g;
}

TEST(ZeroLayers, TwoLayersOnTwoGpusByHand) {
  const Graph g = two_layers();
  // The embedding sharded, layer 0 replicated, layer 1 sharded in two slices, the head
  // replicated; the replicated ones under ZeRO-1; data parallel over 2 GPUs, bf16.
  const Strategy s =
      parse_strategy("tp=1,mbs=1,gbs=4,zero=1,zero_layers=s/r/s2/r,precision=bf16", 2);
  const Software sw = software_preset("megatron-core");
  const StageLayout layout(2, 1);
  const StageShards p = stage_shards(g, s, sw, layout.span(0));
  EXPECT_EQ(p.held_zero, 1);
  EXPECT_DOUBLE_EQ(p.held.total(), 60 + 40);
  EXPECT_DOUBLE_EQ(p.sharded.total(), 100 + 60);
  EXPECT_DOUBLE_EQ(p.gather_calls, 1 + 2);  // the embedding whole, layer 1 in two slices
  // Gathered at once: the embedding alone (layer 0 is held), then layer 1's two halves of 30.
  EXPECT_DOUBLE_EQ(p.gathered_peak, 100);

  const MemoryBreakdown mem = stage_memory(g, s, sw, layout.span(0), 0);
  // Weights: 2 B x (held 100 + sharded 160 / 2) + 2 B x the gathered peak 100.
  EXPECT_DOUBLE_EQ(mem.weights, 2 * (100 + 80) + 2 * 100);
  // Gradients: ZeRO-1 keeps the held ones whole (4 B), the sharded ones a half each, and
  // during the backward two sharded units' gradients unsharded (fp32 into the buffer and
  // into the reduce-scatter: 4 B x the gathered peak 100).
  EXPECT_DOUBLE_EQ(mem.gradients, 4 * (100 + 80) + 4 * 100);
  // Adam's 12 B: ZeRO-1 and ZeRO-3 both shard it.
  EXPECT_DOUBLE_EQ(mem.optimizer, 12 * (50 + 80));

  // The collectives: the sharded 160 gathered in 3 calls before every micro-batch's forward
  // and backward, and reduce-scattered in 3 after every backward; the held 100 reduce-
  // scattered once a step (one bucket) and their updated shards gathered after it.
  const Cluster c = load_cluster("dgx-h100", 2);
  const NodeGroup& group = c.groups.front();
  const Pricer pr(group.device, group.intra_node, c.inter_node, group.gpus_per_node, nullptr);
  const Placement place = placement(s);
  DataParallelComm comm;
  (void)step_times({g, s, layout, sw, place, pr, false, nullptr, &comm});
  auto coll = [&](CollectiveOp op, double bytes, int calls) {
    return calls * pr.collective(op, bytes / calls, place.dp_cp).seconds;
  };
  // The first unit's call (the embedding's, 100) has nothing to hide behind: the forward
  // waits for its gather and its reduce-scatter follows the backward's last op; the held
  // part fits one bucket, which holds its first unit (layer 0): exposed whole.
  const double ag_rest = coll(CollectiveOp::all_gather, 2 * 60.0, 2);
  const double ag_first = coll(CollectiveOp::all_gather, 2 * 100.0, 1);
  EXPECT_NEAR(comm.every_forward.hidden.seconds, ag_rest, 1e-15);
  EXPECT_NEAR(comm.every_forward.exposed.seconds, ag_first, 1e-15);
  EXPECT_NEAR(comm.every_backward.hidden.seconds,
              ag_rest + ag_first + coll(CollectiveOp::reduce_scatter, 4 * 60.0, 2), 1e-15);
  EXPECT_NEAR(comm.every_backward.exposed.seconds, coll(CollectiveOp::reduce_scatter, 4 * 100.0, 1),
              1e-15);
  EXPECT_NEAR(comm.last_backward.hidden.seconds, 0, 1e-15);
  EXPECT_NEAR(comm.last_backward.exposed.seconds, coll(CollectiveOp::reduce_scatter, 4 * 100.0, 1),
              1e-15);
  EXPECT_NEAR(comm.next_forward.exposed.seconds, coll(CollectiveOp::all_gather, 2 * 100.0, 1),
              1e-15);
}

TEST(ZeroLayers, EveryUnitAlikeIsTheUniformStage) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 64);
  auto step = [&](const std::string& text) {
    return estimate(m, c, parse_strategy(text, 64)).step_time_s;
  };
  const std::string shape = "tp=1,pp=1,dp=64,mbs=1,gbs=128,";
  // Every unit sharded, each gathered whole: ZeRO-3, whatever the replicated stage.
  for (const char* base : {"zero=0", "zero=1", "zero=2"})
    EXPECT_DOUBLE_EQ(step(shape + base + ",zero_layers=sx34"), step(shape + "zero=3")) << base;
  // Every unit replicated: the base stage.
  for (const char* base : {"zero=0", "zero=1", "zero=2"})
    EXPECT_DOUBLE_EQ(step(shape + base + ",zero_layers=rx34"), step(shape + base)) << base;
}

}  // namespace
}  // namespace shardcost
