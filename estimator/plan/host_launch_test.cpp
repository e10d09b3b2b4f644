// The host's launches (issue 32, item 7: small work per GPU): without CUDA graphs the host
// launches every kernel, and a pass whose kernels run shorter than their launches waits for
// it. Hand calculations beside each rule.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plan/block_times.h"
#include "shardcost/estimator.h"
#include "test_models.h"

namespace shardcost {
namespace {

using test_models::part;

struct Fixture {
  Cluster c = load_cluster("dgx-h100", 8);
  const NodeGroup& g = c.groups.front();
  Pricer pr{g.device, g.intra_node, c.inter_node, g.gpus_per_node, nullptr};
  Strategy s = parse_strategy("tp=1,gbs=1", 1);
  Placement place = placement(s);

  // An elementwise pass over `bytes`, forward and backward.
  static Op pass(double bytes) {
    Op op;
    op.name = "elementwise";
    op.kind = OpKind::memory;
    op.bytes = bytes;
    op.backward_bytes = bytes;
    return op;
  }
  static Op gemm(int64_t m, int64_t n, int64_t k) {
    Op op;
    op.name = "linear";
    op.kind = OpKind::gemm;
    op.gemm = {m, n, k, 1};
    return op;
  }
};

// Ten passes over 64 KiB: each 65,536 B / (3,350 GB/s x the STREAM fraction x 0.665) + 2 us,
// about 2.03 us of GPU time (H100's HBM3 at the framework fraction, the kernel gap). Forward the
// host takes 10 x 8 us = 80 us to launch them (Python through the ATen dispatcher), backward 10 x 4
// us (autograd's C++ engine): the passes wait 80 - 20.3 and 40 - 20.3 us.
TEST(HostLaunch, APassOfShortKernelsWaitsForTheirLaunches) {
  Fixture f;
  const std::vector<Op> ops(10, Fixture::pass(65536));
  const Software sw = software_preset("megatron-core");
  const Times t = block_times(ops, f.pr, f.place, Recompute::none, sw, false);
  const double kernel = f.pr.memory_pass(65536).seconds;
  EXPECT_NEAR(
      kernel,
      65536 / (f.g.device.memory_bandwidth_Bps * f.g.device.memory_efficiency * 0.665) + 2e-6,
      1e-12);
  EXPECT_NEAR(kernel, 2.03e-6, 0.01e-6);
  EXPECT_NEAR(t.s[kComputeForward], 10 * kernel, 1e-12);
  EXPECT_NEAR(t.s[kHostLaunch], (80e-6 - 10 * kernel) + (40e-6 - 10 * kernel), 1e-12);
  // Under CUDA graphs each layer is one launch: no wait.
  Software graphs = sw;
  graphs.cuda_graphs = true;
  EXPECT_EQ(block_times(ops, f.pr, f.place, Recompute::none, graphs, false).s[kHostLaunch], 0);
  // Chainer runs each backward in Python too: 80 us both ways.
  const Times chainer =
      block_times(ops, f.pr, f.place, Recompute::none, software_preset("chainermn"), false);
  EXPECT_NEAR(chainer.s[kHostLaunch], 2 * (80e-6 - 10 * kernel), 1e-12);
}

// A recomputed forward is launched from Python again inside the backward: full recomputation
// adds 10 x 8 us of launches to the backward's 10 x 4 us, against 20 kernels of GPU time.
TEST(HostLaunch, RecomputationLaunchesItsForwardAgain) {
  Fixture f;
  const std::vector<Op> ops(10, Fixture::pass(65536));
  const Software sw = software_preset("megatron-core");
  const Times t = block_times(ops, f.pr, f.place, Recompute::full, sw, false);
  const double kernel = f.pr.memory_pass(65536).seconds;
  EXPECT_NEAR(t.s[kHostLaunch], (80e-6 - 10 * kernel) + (120e-6 - 20 * kernel), 1e-12);
}

// A collective over a group of one rank (expert parallelism of 1) takes no time and launches
// nothing; one GEMM per local expert launches the others from the same C++ call at the
// driver's 3 us each: 8 experts wait 8 + 7 x 3 us forward and 2 x (4 + 7 x 3) backward.
TEST(HostLaunch, OnlyKernelsThatRunAreLaunched) {
  Fixture f;
  const Software sw = software_preset("megatron-core");
  Op dispatch;
  dispatch.name = "ep_dispatch";
  dispatch.kind = OpKind::collective;
  dispatch.axis = Axis::ep;
  dispatch.op = dispatch.backward_op = CollectiveOp::all_to_all;
  dispatch.bytes = 1 << 20;
  const std::vector<Op> alone = {dispatch};
  EXPECT_EQ(block_times(alone, f.pr, f.place, Recompute::none, sw, false).s[kHostLaunch], 0);
  Op experts = Fixture::gemm(16, 16, 16);
  experts.gemm.batch = 8;
  experts.per_expert_kernels = true;
  ASSERT_TRUE(sw.grouped_gemm_per_expert);
  const Times t = block_times({experts}, f.pr, f.place, Recompute::none, sw, false);
  const double host = (8e-6 + 7 * 3e-6) + 2 * (4e-6 + 7 * 3e-6);
  EXPECT_NEAR(t.s[kHostLaunch], host - t.s[kComputeForward] - t.s[kComputeBackward], 1e-12);
}

// A GEMM of 8192^3 (1.1 TFLOP, about 1.6 ms on H100) hides its launches: no wait; a layer of
// them with two short passes neither (the host runs ahead while the GEMM computes).
TEST(HostLaunch, LongKernelsHideTheLaunches) {
  Fixture f;
  const Software sw = software_preset("megatron-core");
  const std::vector<Op> ops = {Fixture::pass(65536), Fixture::gemm(8192, 8192, 8192),
                               Fixture::pass(65536)};
  EXPECT_EQ(block_times(ops, f.pr, f.place, Recompute::none, sw, false).s[kHostLaunch], 0);
}

// A step of small kernels: GPT-3 Small (125M: 12 layers, h 768) at one 256-token sequence on
// one H100. Its layers' kernels run about as long as their launches, so the step waits for the
// host; CUDA graphs take exactly that part off. The breakdown says host_launch only where it
// is not zero (a large model's step has none).
TEST(HostLaunch, ASmallModelsStepWaitsForTheHostUnlessGraphed) {
  Model m = load_model("gpt3-1.3b");
  m.name = "gpt3-small";
  m.layers = 12;
  m.hidden = 768;
  m.heads = 12;
  m.kv_heads = 12;
  m.ffn_hidden = 3072;
  m.seq_len = 256;
  const Cluster c = load_cluster("dgx-h100", 1);
  const Strategy s = parse_strategy("tp=1,pp=1,dp=1,mbs=1,gbs=1", 1);
  EstimateOptions opt;
  opt.breakdown = true;
  opt.software = software_preset("megatron-core");
  const Estimate eager = estimate(m, c, s, opt);
  opt.software.cuda_graphs = true;
  const Estimate graphed = estimate(m, c, s, opt);
  // About 60 us of GPU work a layer's forward against 10 launches of 8 us.
  EXPECT_GT(part(eager, "host_launch"), 0.2 * part(eager, "compute_forward"));
  // Per-layer graphs: the layers' wait goes; the embedding's stays (its lookup of 256 tokens
  // runs shorter than its launch), a few microseconds.
  const double left = part(graphed, "host_launch");
  EXPECT_GT(left, 0);
  EXPECT_LT(left, 8e-6);
  EXPECT_NEAR(eager.step_time_s - graphed.step_time_s, part(eager, "host_launch") - left, 1e-12);
  const Estimate large =
      estimate(load_model("gpt3-13b"), load_cluster("dgx-h100", 8),
               parse_strategy("tp=8,pp=1,dp=1,mbs=1,gbs=1,sp=true", 8), EstimateOptions{});
  EXPECT_EQ(part(large, "host_launch"), -1);
}

}  // namespace
}  // namespace shardcost
