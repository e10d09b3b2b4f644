// Communication overlap as today's stacks run it (issue 12, item 13): TP collectives behind
// their GEMMs (Transformer Engine's userbuffers) and interleaved pipeline sends behind the next
// chunk, each a preset property with its SM cost; hand calculations beside each rule.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "plan/block_times.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "test_models.h"
#include "workload/transformer_ops.h"

namespace shardcost {
namespace {

using test_models::part;

struct Fixture {
  Cluster c = load_cluster("dgx-h100", 8);
  const NodeGroup& g = c.groups.front();
  Pricer pr{g.device, g.intra_node, c.inter_node, g.gpus_per_node, nullptr};
  Strategy s = parse_strategy("tp=8,sp=true,gbs=1", 8);
  Placement place = placement(s);
  double bytes = 2.0 * 8192 * 8192;  // an 8192-token, h 8192 activation in bf16
  GemmShape shape{8192, 8192 / 8 * 3, 8192, 1};

  // The forward collective alone (no backward one): its part is its exposed time.
  Op collective(CollectiveOp fwd, bool before_column_parallel) const {
    Op op;
    op.name = "tp";
    op.kind = OpKind::collective;
    op.axis = Axis::tp;
    op.op = fwd;
    op.bytes = bytes;
    op.before_column_parallel = before_column_parallel;
    op.userbuffers = true;
    return op;
  }
  Op gemm() const {
    Op op;
    op.name = "linear";
    op.kind = OpKind::gemm;
    op.gemm = shape;
    return op;
  }
};

TEST(Overlap, AnAllGatherRidesAsARingExchangeBehindItsColumnParallelGemm) {
  Fixture f;
  const std::vector<Op> ops = {f.collective(CollectiveOp::all_gather, true), f.gemm()};
  Software off = software_preset("megatron-core");
  off.tp_comm_overlap = false;
  const Software on = software_preset("megatron-core");
  const Times exposed = block_times(ops, f.pr, f.place, Recompute::none, off, false);
  const Times hidden = block_times(ops, f.pr, f.place, Recompute::none, on, false);
  const double ag = f.pr.collective(CollectiveOp::all_gather, f.bytes, f.place.tp).seconds;
  const double gemm = f.pr.gemm(f.shape).seconds;
  EXPECT_DOUBLE_EQ(exposed.s[kTpComm], ag);
  // tp steps, the first on the local block: the exchange hides behind 7/8 of the GEMM, on the
  // copy engines (one SM of 132).
  const double window = gemm * 7 / 8;
  const double covered = std::min(ag, window);
  EXPECT_NEAR(hidden.s[kTpComm], ag - covered + covered / 132, 1e-12);
  EXPECT_LT(hidden.s[kTpComm], exposed.s[kTpComm]);
}

TEST(Overlap, AReduceScatterIsPipelinedInFourSplitsTheLastExposed) {
  Fixture f;
  const std::vector<Op> ops = {f.gemm(), f.collective(CollectiveOp::reduce_scatter, false)};
  const Software on = software_preset("megatron-core");
  const Times t = block_times(ops, f.pr, f.place, Recompute::none, on, false);
  const double rs = f.pr.collective(CollectiveOp::reduce_scatter, f.bytes, f.place.tp).seconds;
  const double gemm = f.pr.gemm(f.shape).seconds;
  const double covered = std::min(rs * 3 / 4, gemm * 3 / 4);
  EXPECT_NEAR(t.s[kTpComm], rs * 3 / 4 - covered + covered * 16 / 132 + rs / 4, 1e-12);
}

// NeMo's userbuffers configurations reserve SMs for the pipelined reduce-scatters
// (set_sm_margin): the row-parallel GEMM runs on the other SMs throughout, 24 withheld after
// the attention projection and 16 after fc2 (issue 32, item 5). Megatron-core under
// Transformer Engine's defaults of 2024 reserves none: the comm kernels take 16 SMs while they
// run.
// Megatron's output layer is its own ColumnParallelLinear, not a Transformer Engine linear:
// the head's sequence-parallel all-gather runs whole before the LM head's GEMM even where the
// layers' ride behind theirs (GPTModel.output_layer; the audit's "the LM head's all-gather on
// userbuffers").
TEST(Overlap, TheHeadsAllGatherIsNotOnUserbuffers) {
  Fixture f;
  const Model m = load_model("llama3-8b");
  const MicroBatch mb{1, 8192, 8192.0 * 8192};
  std::vector<Op> head, layer;
  head_ops(m, f.s, mb, head);
  layer_ops(m, f.s, AttentionKernel::flash, mb, {Mixer::attention, Ffn::dense}, layer);
  auto gather = [](const std::vector<Op>& ops) {
    for (const Op& op : ops)
      if (op.name == std::string("tp_all_gather")) return op;
    ADD_FAILURE() << "no all-gather";
    return Op{};
  };
  EXPECT_TRUE(gather(layer).userbuffers);
  const Op ag = gather(head);
  EXPECT_FALSE(ag.userbuffers);
  // Its forward is the collective's whole time: 8,192 tokens of h 4,096 in bf16 over 8 GPUs.
  Op forward = ag;
  forward.backward_op.reset();
  forward.backward_regather = false;
  Op lm_head;
  for (const Op& op : head)
    if (op.name == std::string("lm_head")) lm_head = op;
  const Software on = software_preset("megatron-core");
  const Times t = block_times({forward, lm_head}, f.pr, f.place, Recompute::none, on, false);
  EXPECT_DOUBLE_EQ(
      t.s[kTpComm],
      f.pr.collective(CollectiveOp::all_gather, 2.0 * 8192 * 4096, f.place.tp).seconds);
}

TEST(Overlap, ASmMarginSlowsTheWholeRowParallelGemm) {
  Fixture f;
  Op proj = f.gemm();
  proj.name = "attention_proj";
  Op fc2 = f.gemm();
  fc2.name = "mlp_fc2";
  const Software nemo = software_preset("nemo");
  EXPECT_EQ(nemo.ub_margin_proj_sms, 24);
  EXPECT_EQ(nemo.ub_margin_fc2_sms, 16);
  EXPECT_EQ(software_preset("megatron-core").ub_margin_proj_sms, 0);
  const double rs = f.pr.collective(CollectiveOp::reduce_scatter, f.bytes, f.place.tp).seconds;
  const double gemm = f.pr.gemm(f.shape).seconds;
  for (const auto& [op, margin] : {std::pair{proj, 24}, std::pair{fc2, 16}}) {
    const std::vector<Op> ops = {op, f.collective(CollectiveOp::reduce_scatter, false)};
    const Times t = block_times(ops, f.pr, f.place, Recompute::none, nemo, false);
    // The GEMM takes 132 / (132 - margin) of its time; the first three splits hide behind
    // 3/4 of that longer GEMM at no SM cost, the last is exposed.
    const double slower = gemm * margin / (132 - margin);
    const double covered = std::min(rs * 3 / 4, (gemm + slower) * 3 / 4);
    EXPECT_NEAR(t.s[kTpComm], slower + rs * 3 / 4 - covered + rs / 4, 1e-12) << op.name;
    EXPECT_DOUBLE_EQ(t.s[kComputeForward], gemm) << op.name;
  }
}

TEST(Overlap, TheStacksOf2021And2022OverlapNoTpCollectiveAndNoPipelineSend) {
  for (const char* name : {"megatron-lm-2021", "megatron-lm-2022"}) {
    const Software sw = software_preset(name);
    EXPECT_FALSE(sw.tp_comm_overlap) << name;
    EXPECT_FALSE(sw.overlap_p2p) << name;
  }
  EXPECT_TRUE(software_preset("megatron-core").tp_comm_overlap);
  EXPECT_TRUE(software_preset("nemo").overlap_p2p);
}

TEST(Overlap, InterleavedSendsHideBehindTheNextChunkAndOneFOneBSendsWait) {
  const Model m = load_model("llama3-70b");
  const Cluster c = load_cluster("dgx-h100", 64);
  EstimateOptions on, off;
  off.software.overlap_p2p = false;
  const Strategy interleaved =
      parse_strategy("tp=8,pp=4,dp=2,mbs=1,gbs=64,vpp=5,sp=true,recompute=selective", 64);
  const double waits = part(estimate(m, c, interleaved, off), "pp_p2p");
  const double hidden = part(estimate(m, c, interleaved, on), "pp_p2p");
  EXPECT_GT(waits, 0);
  // Waiting, every micro-batch (32 of them) sends 2 vpp times: hop = waits / 320. Behind the
  // next chunk each send (a few MB over NVLink or a NIC) is far shorter than a chunk of 4
  // layers: only the compute it slows remains (kOverlapSlowdown, the measured 18.9 %); but the
  // fill and the drain carry one
  // micro-batch through all pp vpp = 20 chunks in turn, and their 2 x 19 sends wait (issue 32,
  // item 2).
  const double hop = waits / (2 * 5 * 32);
  EXPECT_NEAR(hidden, waits * GemmModel::kOverlapSlowdown + 2 * (4 * 5 - 1) * hop, 1e-9 * waits);
  // Without interleaving the sends wait, on or off.
  const Strategy plain = parse_strategy("tp=8,pp=4,dp=2,mbs=1,gbs=64,sp=true", 64);
  EXPECT_DOUBLE_EQ(part(estimate(m, c, plain, on), "pp_p2p"),
                   part(estimate(m, c, plain, off), "pp_p2p"));
}

// The gradient bucket holding a stage's first unit is reduced after the backward's last op and
// its parameters gathered before the forward's first: nothing hides them (issue 32, item 7).
// Llama 3 8B over 16 H100s (2 nodes), one micro-batch: the rest hides behind the backward and
// forward (0.1-0.3 s against tens of milliseconds of traffic), costing the measured slowdown
// of the compute beside it (kOverlapSlowdown); the
// embedding's bucket (525M parameters, above Megatron-core's 40M bucket) is exposed whole:
// its fp32 reduce-scatter and bf16 all-gather.
TEST(Overlap, TheBucketHoldingTheFirstUnitHasNothingToHideBehind) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 16);
  const NodeGroup& g = c.groups.front();
  const Pricer pr{g.device, g.intra_node, c.inter_node, g.gpus_per_node, nullptr};
  const Strategy s = parse_strategy("tp=1,dp=16,mbs=1,gbs=16,zero=1", 16);
  const Estimate e = estimate(m, c, s, {});
  const GroupPlacement dp = placement(s).dp_cp;
  const double total = e.parameters, first = 128256.0 * 4096;
  const double calls = std::ceil(total / 4e7);
  auto rest = [&](CollectiveOp op, double bytes) {
    return pr.collective(op, (total - first) * bytes / (calls - 1), dp).seconds * (calls - 1);
  };
  const double hidden = rest(CollectiveOp::reduce_scatter, 4) + rest(CollectiveOp::all_gather, 2);
  const double exposed = pr.collective(CollectiveOp::reduce_scatter, first * 4, dp).seconds +
                         pr.collective(CollectiveOp::all_gather, first * 2, dp).seconds;
  EXPECT_GT(exposed, 0.005);
  EXPECT_NEAR(part(e, "dp_comm"), hidden * GemmModel::kOverlapSlowdown + exposed, 1e-9);
}

// ep_overlap=true (Megatron-core's --overlap-moe-expert-parallel-comm): each expert-parallel
// all-to-all runs behind another micro-batch's compute, costing the compute it slows: NCCL's
// measured 18.9 % under megatron-core, HybridEP's 32 of 132 SMs under nemo (issue 32, item 3).
// Mixtral 8x7B, ep 8 over 16 H100s, one micro-batch: the all-to-alls (tens of milliseconds)
// are far shorter than the compute.
TEST(Overlap, ExpertParallelAllToAllsHideBehindTheOtherMicroBatchsCompute) {
  const Model m = load_model("mixtral-8x7b");
  const Cluster c = load_cluster("dgx-h100", 16);
  const std::string base = "tp=1,dp=16,ep=8,mbs=1,gbs=16,zero=1,recompute=none";
  for (const auto& [preset, share] :
       {std::pair{"megatron-core", GemmModel::kOverlapSlowdown}, std::pair{"nemo", 32.0 / 132}}) {
    EstimateOptions opt;
    opt.software = software_preset(preset);
    const Estimate plain = estimate(m, c, parse_strategy(base, 16), opt);
    const Estimate hidden = estimate(m, c, parse_strategy(base + ",ep_overlap=true", 16), opt);
    const double comm = part(plain, "ep_comm");
    const double compute = part(plain, "compute_forward") + part(plain, "compute_backward") +
                           part(plain, "compute_recompute");
    ASSERT_GT(comm, 0.01) << preset;
    ASSERT_LT(comm, compute) << preset;
    EXPECT_NEAR(part(hidden, "ep_comm"), comm * share, 1e-9) << preset;
    EXPECT_DOUBLE_EQ(part(hidden, "compute_forward"), part(plain, "compute_forward")) << preset;
  }
  // What it needs: experts over ranks, 1F1B, a stack that has it.
  EXPECT_THROW(estimate(m, c, parse_strategy("tp=1,dp=16,mbs=1,gbs=16,ep_overlap=true", 16)),
               InputError);
  EstimateOptions old;
  old.software = software_preset("torchtitan");
  EXPECT_THROW(
      estimate(m, c, parse_strategy("tp=1,dp=16,ep=8,mbs=1,gbs=16,ep_overlap=true", 16), old),
      InputError);
  // Megatron-core runs it without a pipeline or in an interleaved one, and never under full
  // recomputation (TransformerConfig's checks): anything else is one clear error.
  const Cluster two_nodes = load_cluster("dgx-h100", 32);
  const std::string piped =
      "tp=1,pp=2,dp=16,ep=8,mbs=1,gbs=32,zero=1,recompute=none,ep_overlap=true";
  const std::string why =
      test_models::input_error_of([&] { (void)estimate(m, two_nodes, parse_strategy(piped, 32)); });
  EXPECT_NE(why.find("ep_overlap=true with pp>1 needs vpp>1"), std::string::npos) << why;
  EXPECT_GT(estimate(m, two_nodes, parse_strategy(piped + ",vpp=2", 32)).step_time_s, 0);
  EXPECT_NE(
      test_models::input_error_of([&] {
        (void)estimate(
            m, c,
            parse_strategy("tp=1,dp=16,ep=8,mbs=1,gbs=16,recompute=full,ep_overlap=true", 16));
      }).find("does not run under recompute=full"),
      std::string::npos);
  // rank, with the overlap pinned, uses it only where it runs: not under full recomputation nor
  // the MoE layer's checkpoint.
  RankOptions ro;
  ro.global_batch = 32;
  ro.fixed = "tp=1,pp=2,ep=8,ep_overlap=true";
  ro.top = 100;
  const RankResult ranked = rank(m, two_nodes, ro);
  ASSERT_FALSE(ranked.best.empty());
  for (const Estimate& e : ranked.best)
    EXPECT_EQ(e.strategy.ep_overlap, e.strategy.vpp > 1 &&
                                         e.strategy.recompute != Recompute::full &&
                                         (e.strategy.selective_modules() & kRecomputeMoe) == 0)
        << to_string(e.strategy);
  EXPECT_EQ(to_string(parse_strategy(base + ",ep_overlap=true", 16)).find(",ep_overlap=true") !=
                std::string::npos,
            true);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// The dispatcher is the stack's (issue 32, item 3): under nemo (Megatron-core's flex
// dispatcher, HybridEP or DeepEP) a token crosses the network once per remote node its
// experts sit on; under megatron-core (the alltoall dispatcher) once per expert. DeepSeek-V3
// over 4 DGX B200 nodes (ep 32, group-limited routing to 4 of 8 groups, 2 groups a node):
// 4 x (1 - C(6,4)/C(8,4)) = 3.14 nodes reached against 8 copies, so the all-to-alls, bound by
// the NICs, take 3.14 / 8 of the time (within their latency).
TEST(Overlap, AFlexDispatcherSendsATokenOncePerNode) {
  const Model m = load_model("deepseek-v3");
  const Cluster c = load_cluster("dgx-b200", 256);
  const Strategy s = parse_strategy(
      "tp=1,pp=8,dp=32,ep=32,mbs=1,gbs=4096,vpp=2,recompute=none,zero=1,precision=mxfp8", 256);
  EstimateOptions flex;
  flex.software = software_preset("nemo");
  EstimateOptions flat = flex;
  flat.software.ep_dispatcher = EpDispatcher::alltoall;
  const double deduplicated = part(estimate(m, c, s, flex), "ep_comm");
  const double every_copy = part(estimate(m, c, s, flat), "ep_comm");
  ASSERT_GT(every_copy, 1.0);
  EXPECT_NEAR(deduplicated / every_copy, 4 * (1 - 15.0 / 70) / 8, 0.01);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// The experts' GEMMs as Transformer Engine's GroupedLinear runs them: one cuBLASLt GEMM per
// local expert, each a kernel of its own. 32 local experts of 1,024 tokens (DeepSeek-V3's
// fc1 at ep 8 on B200): the grouped work priced once, and 31 more kernels at 1.5 us each in
// the forward, the input gradient and the weight gradient; a stack with one grouped kernel
// (DeepGEMM: the deepseek-v3 preset, or grouped_gemm_per_expert=false) pays none of them.
TEST(GroupedGemm, EachExpertsKernelPaysItsLaunchUnderTransformerEngine) {
  Fixture f;
  Op op = f.gemm();
  op.gemm = GemmShape{1024, 4096, 7168, 32};
  op.per_expert_kernels = true;
  const Software te = software_preset("megatron-core");
  Software one = te;
  one.grouped_gemm_per_expert = false;
  EXPECT_FALSE(software_preset("deepseek-v3").grouped_gemm_per_expert);
  const Times per_expert = block_times({op}, f.pr, f.place, Recompute::none, te, false);
  const Times grouped = block_times({op}, f.pr, f.place, Recompute::none, one, false);
  const double launches = 31 * 1.5e-6;
  EXPECT_NEAR(per_expert.s[kComputeForward] - grouped.s[kComputeForward], launches, 1e-12);
  EXPECT_NEAR(per_expert.s[kComputeBackward] - grouped.s[kComputeBackward], 2 * launches, 1e-12);
  EXPECT_DOUBLE_EQ(grouped.s[kComputeForward], f.pr.gemm(op.gemm).seconds);
  // A dense GEMM is one kernel either way.
  Op dense = f.gemm();
  EXPECT_DOUBLE_EQ(block_times({dense}, f.pr, f.place, Recompute::none, te, false).total(),
                   block_times({dense}, f.pr, f.place, Recompute::none, one, false).total());
  // The key reads and writes back as a software override.
  EXPECT_FALSE(
      parse_software("megatron-core:grouped_gemm_per_expert=false").grouped_gemm_per_expert);
  EXPECT_EQ(software_text(one), "megatron-core:grouped_gemm_per_expert=false");
}

// Fused grouped GEMMs for block-scaled SwiGLU experts (Software::fused_grouped_mlp: TE's op
// fuser on cuDNN front-end's grouped GEMM + SwiGLU kernels): forward, the fc1 input's MXFP8
// cast stays, SwiGLU and fc2's input cast run in fc1's epilogue; backward, fc2's output
// gradient's cast stays, SwiGLU's gradient and fc1's output gradient's cast run in fc2's
// input-gradient GEMM; no expert pays a launch of its own. DeepSeek-V3 at ep 8 in MXFP8:
// the fused stack's expert passes cost exactly the bytes that stay, in one pass each way.
TEST(GroupedGemm, FusedGroupedMlpLeavesTheActivationAndItsCastsToTheGemms) {
  const Cluster c = load_cluster("dgx-b200", 8);
  const NodeGroup& node = c.groups.front();
  const Pricer pr{node.device, node.intra_node, c.inter_node, node.gpus_per_node, nullptr};
  const Strategy st = parse_strategy("tp=1,pp=1,ep=8,mbs=1,gbs=8,precision=mxfp8", 8);
  const Placement place = placement(st);
  const Model m = load_model("deepseek-v3");
  Graph g;
  transformer_workload(m)->graph(st, AttentionKernel::flash, g);
  std::vector<Op> experts;
  for (const Block& b : g.blocks)
    for (const Op& op : b.ops)
      if (experts.size() < 5 && std::string(op.name).rfind("expert_", 0) == 0)
        experts.push_back(op);
  ASSERT_EQ(experts.size(), 5u);
  EXPECT_STREQ(experts[0].name, "expert_fc1");
  EXPECT_STREQ(experts[1].name, "expert_fc1_fp8_casts");
  EXPECT_STREQ(experts[2].name, "expert_swiglu");
  EXPECT_STREQ(experts[3].name, "expert_fc2");
  EXPECT_STREQ(experts[4].name, "expert_fc2_fp8_casts");
  EXPECT_EQ(experts[1].grouped_mlp_bytes, experts[1].bytes);
  EXPECT_EQ(experts[1].grouped_mlp_backward_bytes, 0);
  EXPECT_EQ(experts[2].grouped_mlp_bytes, 0);
  EXPECT_EQ(experts[2].grouped_mlp_backward_bytes, 0);
  EXPECT_EQ(experts[4].grouped_mlp_bytes, 0);
  EXPECT_EQ(experts[4].grouped_mlp_backward_bytes, experts[4].backward_bytes);

  const Software te = software_preset("nemo");
  Software fused = te;
  fused.fused_grouped_mlp = true;
  const Times plain = block_times(experts, pr, place, Recompute::none, te, false);
  const Times one = block_times(experts, pr, place, Recompute::none, fused, false);
  const double local = experts[0].gemm.batch;  // 32 local experts
  const double launches = (local - 1) * 1.5e-6;
  auto gemm_s = [&](const GemmShape& s) { return pr.gemm(s, DType::mxfp8).seconds; };
  auto pass_s = [&](double bytes) { return pr.memory_pass(bytes).seconds; };
  const double fwd_gemms = gemm_s(experts[0].gemm) + gemm_s(experts[3].gemm);
  EXPECT_NEAR(one.s[kComputeForward], fwd_gemms + pass_s(experts[1].bytes), 1e-12);
  EXPECT_NEAR(plain.s[kComputeForward],
              fwd_gemms + 2 * launches + pass_s(experts[1].bytes) + pass_s(experts[2].bytes) +
                  pass_s(experts[4].bytes),
              1e-12);
  EXPECT_NEAR(plain.s[kComputeBackward] - one.s[kComputeBackward],
              4 * launches + pass_s(experts[1].backward_bytes) + pass_s(experts[2].backward_bytes),
              1e-12);
  EXPECT_EQ(software_text(fused), "nemo:fused_grouped_mlp=true");

  // BF16 experts have no block-scaled casts to fuse: the key changes nothing there.
  Graph bf16;
  transformer_workload(m)->graph(parse_strategy("tp=1,pp=1,ep=8,mbs=1,gbs=8", 8),
                                 AttentionKernel::flash, bf16);
  for (const Block& b : bf16.blocks)
    for (const Op& op : b.ops) EXPECT_LT(op.grouped_mlp_bytes, 0) << op.name;
}

// Attention in FP8 (Software::fp8_attention) where the run quantizes its linears: DeepSeek-V3's
// MLA attention in MXFP8 on GB300 at the kernel's MXFP8 rates, forward 1515 -> 2517 TFLOP/s at
// 4k; a BF16 run's attention stays 16-bit whatever the key says.
TEST(Fp8Attention, AQuantizedRunsAttentionTakesTheFp8Rate) {
  const Cluster c = load_cluster("gb300-nvl72", 72);
  const NodeGroup& node = c.groups.front();
  const Pricer pr{node.device, node.intra_node, c.inter_node, node.domain_gpus(), nullptr};
  const Model m = load_model("deepseek-v3");
  auto attention = [&](const char* strategy) {
    Graph g;
    transformer_workload(m)->graph(parse_strategy(strategy, 8), AttentionKernel::flash, g);
    for (const Block& b : g.blocks)
      for (const Op& op : b.ops)
        if (op.kind == OpKind::attention) return op;
    return Op{};
  };
  const Op mx = attention("tp=1,pp=1,ep=8,mbs=1,gbs=8,precision=mxfp8");
  const Op bf = attention("tp=1,pp=1,ep=8,mbs=1,gbs=8");
  ASSERT_EQ(mx.kind, OpKind::attention);
  EXPECT_TRUE(mx.fp8_capable);
  EXPECT_FALSE(bf.fp8_capable);
  const Placement place = placement(parse_strategy("tp=1,pp=1,ep=8,mbs=1,gbs=8", 8));
  Software sw = software_preset("nemo");
  const double plain = block_times({mx}, pr, place, Recompute::none, sw, false).s[kComputeForward];
  sw.fp8_attention = true;
  const double fp8 = block_times({mx}, pr, place, Recompute::none, sw, false).s[kComputeForward];
  EXPECT_NEAR((plain - 2e-6) / (fp8 - 2e-6), 2517.0 / 1515.0, 1e-3);
  EXPECT_DOUBLE_EQ(
      block_times({bf}, pr, place, Recompute::none, sw, false).total(),
      block_times({bf}, pr, place, Recompute::none, software_preset("nemo"), false).total());
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// A fused kernel that moves more than it computes takes its bytes' time: Nemotron-H 56B's
// Mamba-2 scan on one of 8 TP ranks of H100s, an 8,192-token micro-batch (families_test.cpp
// has its counts: 21,495,808 FLOPs, 401,408 bytes forward and 1,138,688 backward a token, over
// 8 ranks). Forward at the attention rate about 0.04 ms; its 411 MB at the framework kernels'
// 1.98 TB/s (3.35 x 0.887 x 0.665) 0.21 ms.
TEST(FusedKernels, AScanThatMovesMoreThanItComputesIsPricedByItsBytes) {
  Fixture f;
  Op scan;
  scan.name = "mamba_ssd_scan";
  scan.kind = OpKind::attention;
  const double tokens = 8192.0 / 8;
  scan.flops = 21495808 * tokens;
  scan.bytes = 401408 * tokens;
  scan.backward_bytes = 1138688 * tokens;
  const Software sw = software_preset("megatron-core");
  const Times t = block_times({scan}, f.pr, f.place, Recompute::none, sw, false);
  const double fwd = f.pr.memory_pass(scan.bytes).seconds;
  EXPECT_DOUBLE_EQ(t.s[kComputeForward], fwd);
  EXPECT_DOUBLE_EQ(t.s[kComputeBackward], f.pr.memory_pass(scan.backward_bytes).seconds);
  EXPECT_NEAR(fwd, 411.0e6 / (3.35e12 * 0.887 * 0.665), 0.01e-3);
  EXPECT_GT(fwd, 3 * f.pr.fused_attention(scan.flops).seconds);
  // Without bytes (attention), the FLOPs' time as before.
  scan.bytes = scan.backward_bytes = 0;
  const Times flops = block_times({scan}, f.pr, f.place, Recompute::none, sw, false);
  EXPECT_DOUBLE_EQ(flops.s[kComputeForward], f.pr.fused_attention(scan.flops).seconds);
}

}  // namespace
}  // namespace shardcost
