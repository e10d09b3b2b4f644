// The language-model loss as a stack computes it (Software::cross_entropy): Megatron's unfused
// VocabParallelCrossEntropy or Transformer Engine's fused Triton kernels.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "plan/block_times.h"
#include "plan/memory.h"
#include "plan/placement.h"
#include "plan/stages.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost {
namespace {

const Op& loss_of(const Graph& g) {
  for (const Block& b : g.blocks)
    if (std::string(b.name) == "head")
      for (const Op& op : b.ops)
        if (std::string(op.name) == "cross_entropy") return op;
  throw std::runtime_error("no cross_entropy op");
}

// Llama 3 8B at tp 2, one 8,192-token sequence: 8,192 x 64,128 logits a rank. TE's kernels
// read the bf16 logits twice and write the gradient over them once forward (6 B an element),
// then scale it in place backward (4 B); Megatron's passes move 38 and 14 B an element in fp32.
// Forward and backward of the head differ by exactly those passes, and the last stage's peak
// by the fp32 logits and gradient (8 B an element) against the bf16 logits alone (2 B).
TEST(Loss, TransformerEnginesCrossEntropyReadsTheLogitsTwiceAndWritesTheirGradientOnce) {
  const Model m = load_model("llama3-8b");
  const Strategy st = parse_strategy("tp=2,pp=2,dp=1,mbs=1,gbs=8,sp=true", 4);
  Graph g;
  transformer_workload(m)->graph(st, AttentionKernel::flash, g);
  const Op& loss = loss_of(g);
  const double elements = 8192.0 * m.vocab / 2;
  EXPECT_DOUBLE_EQ(loss.bytes, 38 * elements);
  EXPECT_DOUBLE_EQ(loss.backward_bytes, 14 * elements);
  EXPECT_DOUBLE_EQ(loss.te_loss_bytes, 6 * elements);
  EXPECT_DOUBLE_EQ(loss.te_loss_backward_bytes, 4 * elements);

  const Cluster c = load_cluster("dgx-h100", 4);
  const NodeGroup& node = c.groups.front();
  const Pricer pr{node.device, node.intra_node, c.inter_node, node.gpus_per_node, nullptr};
  const Placement place = placement(st);
  const Software unfused = software_preset("megatron-core");
  Software te = unfused;
  te.cross_entropy = CrossEntropy::te;
  const Times a = block_times({loss}, pr, place, Recompute::none, unfused, false);
  const Times b = block_times({loss}, pr, place, Recompute::none, te, false);
  EXPECT_NEAR(a.s[kComputeForward] - b.s[kComputeForward],
              pr.memory_pass(38 * elements).seconds - pr.memory_pass(6 * elements).seconds, 1e-12);
  EXPECT_NEAR(a.s[kComputeBackward] - b.s[kComputeBackward],
              pr.memory_pass(14 * elements).seconds - pr.memory_pass(4 * elements).seconds, 1e-12);
  EXPECT_GT(b.s[kComputeForward], 0);

  const StageLayout layout(m.layers, 2);
  const MemoryBreakdown ma = stage_memory(g, st, unfused, layout.span(1), 1);
  const MemoryBreakdown mb = stage_memory(g, st, te, layout.span(1), 1);
  EXPECT_NEAR(ma.activations - mb.activations, (8 - 2) * elements, 1);
  // The first stage holds no loss: the same either way.
  EXPECT_DOUBLE_EQ(stage_memory(g, st, unfused, layout.span(0), 0).activations,
                   stage_memory(g, st, te, layout.span(0), 0).activations);
}

// A soft-capped head (Gemma 2's cap * tanh(logits / cap)) keeps the unfused loss: TE's kernels
// take raw logits, so the key changes neither its time nor its memory.
TEST(Loss, ASoftCappedHeadKeepsTheUnfusedLoss) {
  Model m = load_model("llama3-8b");
  m.logit_softcap = 30;
  const Strategy st = parse_strategy("tp=1,pp=1,dp=1,mbs=1,gbs=1", 1);
  Graph g;
  transformer_workload(m)->graph(st, AttentionKernel::flash, g);
  EXPECT_LT(loss_of(g).te_loss_bytes, 0);
  EXPECT_LT(loss_of(g).te_loss_backward_bytes, 0);
  for (const Block& b : g.blocks) EXPECT_LT(b.te_loss_working_bytes, 0) << b.name;
}

// The key reads and writes back as a software override; a wrong value is one line naming both.
TEST(Loss, TheCrossEntropyKeyRoundTrips) {
  EXPECT_EQ(software_preset("nemo").cross_entropy, CrossEntropy::unfused);
  const Software s = parse_software("nemo:cross_entropy=te");
  EXPECT_EQ(s.cross_entropy, CrossEntropy::te);
  EXPECT_EQ(software_text(s), "nemo:cross_entropy=te");
  EXPECT_EQ(parse_software(software_text(s)).cross_entropy, CrossEntropy::te);
  try {
    parse_software("nemo:cross_entropy=fused");
    FAIL() << "accepted cross_entropy=fused";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'fused'"), std::string::npos) << what;
    EXPECT_NE(what.find("unfused"), std::string::npos) << what;
    EXPECT_NE(what.find("te"), std::string::npos) << what;
  }
}

// The megatron-bridge preset is nemo as Megatron-Bridge's performance recipes run it: the
// fused loss and its images' cuDNN, every other setting nemo's; its text round-trips, and an
// override back to Megatron's loss is said against it.
TEST(Loss, MegatronBridgeIsNemoWithTheFusedLossAndItsImagesCudnn) {
  const Software nemo = software_preset("nemo");
  const Software bridge = software_preset("megatron-bridge");
  EXPECT_EQ(bridge.cross_entropy, CrossEntropy::te);
  EXPECT_EQ(bridge.cudnn, "9.13");
  EXPECT_EQ(nemo.cudnn, "");
  Software as_nemo = parse_software("megatron-bridge:cross_entropy=unfused");
  EXPECT_EQ(software_text(as_nemo), "megatron-bridge:cross_entropy=unfused");
  as_nemo.cudnn = "";
  as_nemo.name = "nemo";
  EXPECT_EQ(software_text(as_nemo), "nemo");  // nothing else differs from nemo
  EXPECT_EQ(bridge.grad_bytes, nemo.grad_bytes);
  EXPECT_EQ(bridge.fp8_params, nemo.fp8_params);
  EXPECT_EQ(bridge.ep_dispatcher, nemo.ep_dispatcher);
}

}  // namespace
}  // namespace shardcost
