// Local-update training as a schedule (docs/seed-planners.md, item 2): a two-layer model on two
// stages priced by hand from its blocks, the memory it keeps, and the checks.
#include <gtest/gtest.h>

#include <string>

#include "plan/block_times.h"
#include "plan/memory.h"
#include "plan/placement.h"
#include "plan/schedule.h"
#include "shardcost/estimator.h"
#include "test_models.h"
#include "workload/transformer.h"

namespace shardcost {
namespace {

Model two_layer_model() {
  Model m;
  m.name = "two-layer";
  m.layers = 2, m.hidden = 1024, m.heads = 8, m.kv_heads = 8, m.ffn_hidden = 4096;
  m.vocab = 32000, m.seq_len = 1024;
  m.tied_embeddings = false;  // the head holds its own weights (tied: see below)
  return m;
}

// The model on two stages of one layer each, 8 micro-batches, no data parallelism.
struct TwoStages {
  Strategy s = parse_strategy("tp=1,pp=2,dp=1,mbs=1,gbs=8,precision=bf16", 2);
  Software sw = software_preset("megatron-core");
  Graph g;
  explicit TwoStages(const Model& m) { transformer_workload(m)->graph(s, sw.attention, g); }
};

struct Priced {
  Times step;
  std::vector<double> stages;  // seconds per micro-batch, in rank order
};

Priced priced(const Graph& g, const Strategy& s, const Software& sw, const Pricer& pr) {
  Priced out;
  const StageLayout layout(2, s.pp);
  const Placement place = placement(s);
  ScheduleInputs in{g, s, layout, sw, place, pr, true};
  in.stage_seconds = &out.stages;
  out.step = step_times(in);
  return out;
}

TEST(LocalUpdates, TwoLayersOnTwoStagesByHand) {
  TwoStages two(two_layer_model());
  Strategy& s = two.s;
  const Software& sw = two.sw;
  const Graph& g = two.g;
  const Cluster c = load_cluster("dgx-h100", 2);
  const NodeGroup& group = c.groups.front();
  const Pricer pr(group.device, group.intra_node, c.inter_node, group.gpus_per_node, nullptr);
  const Placement place = placement(s);
  // Each block's seconds per micro-batch (forward and backward), and a boundary's send.
  double embedding = 0, layer = 0, head = 0;
  for (const Block& b : g.blocks) {
    const double t = block_times(b.ops, pr, place, Recompute::none, sw, false).total();
    (b.pin == Block::Pin::first_stage ? embedding : b.pin == Block::Pin::body ? layer : head) += t;
  }
  const double hop = pr.send_recv(g.boundary_bytes, GroupPlacement{2, place.pp_stride}).seconds;
  // The embedding's dense gradient, zeroed (2 B) and added into the fp32 main gradient (read 2,
  // read and write 4) every micro-batch on the first stage.
  double table = 0;
  for (const Block& b : g.blocks)
    if (b.pin == Block::Pin::first_stage) table += b.dense_params;
  embedding += pr.memory("memset", 2 * table).seconds + pr.memory_pass(10 * table).seconds;
  ASSERT_GT(head, 0);
  ASSERT_GT(hop, 0);

  const Priced e2e = priced(g, s, sw, pr);
  s.schedule = PipeSchedule::local;
  const Priced local = priced(g, s, sw, pr);
  // 1F1B: an activation forward and its gradient back across the boundary per micro-batch.
  ASSERT_EQ(e2e.stages.size(), 2u);
  EXPECT_NEAR(e2e.stages[0], embedding + layer + 2 * hop, 1e-12);
  EXPECT_NEAR(e2e.stages[1], layer + head + 2 * hop, 1e-12);
  // Local: stage 0 also runs its copy of the head; activations go forward only.
  ASSERT_EQ(local.stages.size(), 2u);
  EXPECT_NEAR(local.stages[0], embedding + layer + head + hop, 1e-12);
  EXPECT_NEAR(local.stages[1], layer + head + hop, 1e-12);
  // No fill and drain: the step is the slowest stage's 8 micro-batches, plus the optimizer.
  const double pace = std::max(local.stages[0], local.stages[1]);
  EXPECT_EQ(local.step.s[kBubble], 0);
  EXPECT_NEAR(local.step.total(), 8 * pace + local.step.s[kOptimizer] + local.step.s[kDpComm],
              1e-12);
  // 1F1B's bubble is the other stage's work once.
  EXPECT_NEAR(e2e.step.s[kBubble], std::min(e2e.stages[0], e2e.stages[1]), 1e-12);
}

TEST(LocalUpdates, OneMicroBatchInFlightAndAHeadOnEveryStage) {
  TwoStages two(two_layer_model());
  Strategy& s = two.s;
  const Software& sw = two.sw;
  const Graph& g = two.g;
  const StageLayout layout(2, 2);
  double kept_layer = 0, kept_embedding = 0, kept_head = 0, head_working = 0, head_params = 0;
  for (const Block& b : g.blocks) {
    if (b.pin == Block::Pin::body) kept_layer += b.kept_bytes[0];
    if (b.pin == Block::Pin::first_stage) kept_embedding += b.kept_bytes[0];
    if (b.pin == Block::Pin::last_stage) {
      kept_head += b.kept_bytes[0], head_working += b.working_bytes;
      head_params += b.dense_params + b.tied_params;
    }
  }
  // 1F1B keeps 2 micro-batches in flight on stage 0 (pp - 0), local updates 1.
  const MemoryBreakdown e2e = stage_memory(g, s, sw, layout.span(0), 0);
  EXPECT_NEAR(e2e.activations, 2 * (kept_layer + kept_embedding), 1);
  s.schedule = PipeSchedule::local;
  const MemoryBreakdown local = stage_memory(g, s, sw, layout.span(0), 0);
  EXPECT_NEAR(local.activations, kept_layer + kept_embedding + kept_head + head_working, 1);
  // The head's copy: its parameters' 16-bit weights (bf16 with fp32 main gradients and Adam).
  EXPECT_NEAR(local.weights - e2e.weights, 2 * head_params, 1);
  EXPECT_NEAR(local.optimizer - e2e.optimizer, 12 * head_params, 1);
  // The last stage holds what it always held.
  EXPECT_NEAR(
      stage_memory(g, s, sw, layout.span(1), 1).weights,
      [&] {
        Strategy o = s;
        o.schedule = PipeSchedule::one_f_one_b;
        return stage_memory(g, o, sw, layout.span(1), 1).weights;
      }(),
      1e-6);
}

TEST(LocalUpdates, ATiedHeadOnTheFirstStageSharesTheEmbedding) {
  Model m = two_layer_model();
  m.tied_embeddings = true;
  TwoStages two(m);
  Strategy& s = two.s;
  s.schedule = PipeSchedule::local;
  const Software& sw = two.sw;
  const Graph& g = two.g;
  const StageLayout layout(2, 2);
  double untied = 0;  // the head's own parameters besides the tied projection (its norm)
  for (const Block& b : g.blocks)
    if (b.pin == Block::Pin::last_stage) untied += b.dense_params;
  Strategy o = s;
  o.schedule = PipeSchedule::one_f_one_b;
  EXPECT_NEAR(stage_memory(g, s, sw, layout.span(0), 0).weights -
                  stage_memory(g, o, sw, layout.span(0), 0).weights,
              2 * untied, 1);
}

TEST(LocalUpdates, NeedsAPipelineWithoutInterleaving) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 64);
  const auto w = transformer_workload(m);
  EXPECT_NE(check_strategy(*w, c, parse_strategy("tp=1,pp=1,gbs=64,schedule=local", 64))
                .value_or("")
                .find("schedule=local needs pp>=2"),
            std::string::npos);
  EXPECT_NE(check_strategy(*w, c, parse_strategy("tp=1,pp=4,vpp=2,gbs=64,schedule=local", 64))
                .value_or("")
                .find("no interleaving"),
            std::string::npos);
  EXPECT_FALSE(check_strategy(*w, c, parse_strategy("tp=1,pp=4,gbs=64,schedule=local", 64)));
  // Multi-token prediction puts more than a head on the last stage: not copied, refused.
  const auto v3 = transformer_workload(load_model("deepseek-v3"));
  EXPECT_NE(check_strategy(*v3, load_cluster("dgx-h100", 64),
                           parse_strategy("tp=1,pp=4,ep=16,gbs=64,schedule=local", 64))
                .value_or("")
                .find("multi-token prediction"),
            std::string::npos);
}

}  // namespace
}  // namespace shardcost
