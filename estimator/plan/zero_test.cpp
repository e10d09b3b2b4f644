// ZeRO-3/FSDP as each stack issues it (issue 12, items 1-3 and 14): the calls per layer or per
// parameter tensor, the working set per preset, the megatron-deepspeed and torchtitan presets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "plan/memory.h"
#include "plan/placement.h"
#include "plan/schedule.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "test_models.h"

namespace shardcost {
namespace {

// The data-parallel collectives of one plan, as the schedule prices them.
struct Priced3 {
  DataParallelComm comm;
  StageParameters params;
  Pricer pricer;
  Placement place;
};

Priced3 zero_comm(const Model& m, const Cluster& c, const Strategy& s, const Software& sw) {
  const auto w = transformer_workload(m);
  Graph g;
  w->graph(s, sw.attention, g);
  const StageLayout layout(w->layers(), s.pp);
  const NodeGroup& group = c.groups.front();
  Priced3 out{{},
              stage_parameters(g, layout.span(0)),
              Pricer(group.device, group.intra_node, c.inter_node, group.gpus_per_node, nullptr),
              placement(s)};
  (void)step_times({g, s, layout, sw, out.place, out.pricer, false, nullptr, &out.comm});
  return out;
}

TEST(Zero3, GathersAreTheCallsTheStackMakesEachWithItsGroupsLatency) {
  // Llama 3 8B, ZeRO-3 over 1,536 H100s (192 nodes): 32 layers, the embedding and the head.
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 1536);
  Strategy s = parse_strategy("tp=1,mbs=1,gbs=1536,zero=3,precision=bf16", 1536);
  const Software fsdp = software_preset("megatron-core");
  const Priced3 layer = zero_comm(m, c, s, fsdp);
  // One all-gather per block: 32 + 2 calls. The first, the embedding's (128256 x 4096), is
  // waited for by the forward's first op; the other 33 move the rest in equal calls.
  ASSERT_EQ(layer.params.blocks, 34);
  const double bytes = 2 * layer.params.total();
  const double embedding = 2.0 * 128256 * 4096;
  const double one =
      layer.pricer.collective(CollectiveOp::all_gather, (bytes - embedding) / 33, layer.place.dp_cp)
          .seconds;
  const double first =
      layer.pricer.collective(CollectiveOp::all_gather, embedding, layer.place.dp_cp).seconds;
  EXPECT_NEAR(layer.comm.every_forward.hidden.seconds, 33 * one, 1e-9);
  EXPECT_NEAR(layer.comm.every_forward.exposed.seconds, first, 1e-9);

  // DeepSpeed's ZeRO-3 gathers each tensor: 32 x 6 (qkv, proj, fc1, fc2, two RMSNorm scales)
  // + the embedding + the head's norm and weight = 195 calls.
  Software ds = fsdp;
  ds.zero3_gathers = ShardedCalls::per_tensor;
  const Priced3 tensor = zero_comm(m, c, s, ds);
  ASSERT_EQ(tensor.params.tensors, 32 * 6 + 1 + 2);
  const double each =
      tensor.pricer
          .collective(CollectiveOp::all_gather, (bytes - embedding) / 194, tensor.place.dp_cp)
          .seconds;
  EXPECT_NEAR(tensor.comm.every_forward.hidden.seconds, 194 * each, 1e-9);
  EXPECT_NEAR(tensor.comm.every_forward.exposed.seconds, first, 1e-9);
  // At 1,536 ranks each call's latency is milliseconds (NCCL's ring, pricing_test): 195
  // calls cost over 0.3 s more than 34 moving the same bytes.
  EXPECT_GT(tensor.comm.every_forward.hidden.seconds - layer.comm.every_forward.hidden.seconds,
            (195 - 34) * 1.6e-3);
}

TEST(Zero3, GradientsGoOutInTheStacksBuckets) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 64);
  Strategy s = parse_strategy("tp=1,mbs=1,gbs=64,zero=1,precision=bf16", 64);
  // Megatron-core's DDP buckets: max(40M, 1M x dp) = 64M parameters; Llama 3 8B's 8.03B in
  // ceil(8.03e9 / 6.4e7) = 126 reduce-scatters, each of 4-byte gradients. The last, holding
  // the embedding (525M parameters, more than a bucket), runs after the backward's last op:
  // exposed; the other 125 share the rest.
  const Priced3 p = zero_comm(m, c, s, software_preset("megatron-core"));
  const double params = p.params.total();
  const double calls = std::ceil(params / 6.4e7);
  const double embedding = 128256.0 * 4096;
  EXPECT_EQ(calls, 126);
  const double each = p.pricer
                          .collective(CollectiveOp::reduce_scatter,
                                      4 * (params - embedding) / (calls - 1), p.place.dp_cp)
                          .seconds;
  EXPECT_NEAR(p.comm.last_backward.hidden.seconds, (calls - 1) * each, 1e-9);
  EXPECT_NEAR(
      p.comm.last_backward.exposed.seconds,
      p.pricer.collective(CollectiveOp::reduce_scatter, 4 * embedding, p.place.dp_cp).seconds,
      1e-9);
  // Megatron-LM of 2021/2022 reduced its one contiguous buffer in one call.
  Software old = software_preset("megatron-lm-2022");
  const Priced3 q = zero_comm(m, c, s, old);
  EXPECT_NEAR(q.comm.last_backward.exposed.seconds,
              q.pricer.collective(CollectiveOp::reduce_scatter, 4 * params, q.place.dp_cp).seconds,
              1e-9);
}

// Narayanan et al. 2021 trained a 530B GPT with DeepSpeed ZeRO-3 and no model parallelism on
// 640 A100-80GB (their ZeRO-3 comparison): it must fit.
TEST(Zero3, DeepSpeedsWorkingSetIsItsLargestTensorAndThePrefetchBucket) {
  Model m;
  m.name = "530B";
  m.layers = 105, m.hidden = 20480, m.heads = 128, m.kv_heads = 128, m.ffn_hidden = 81920;
  m.vocab = 51200, m.seq_len = 2048, m.dropout = 0.1;
  const Cluster c = load_cluster("dgx-a100", 640);
  const Strategy s = parse_strategy("tp=1,pp=1,dp=640,mbs=4,gbs=2560,recompute=full,zero=3", 640);
  EstimateOptions ds;
  ds.software = software_preset("megatron-deepspeed");
  const Estimate e = estimate(m, c, s, ds);
  EXPECT_TRUE(e.feasible) << e.reason;
  EXPECT_EQ(e.strategy.precision, DType::fp16);
  // The working set: fc1's 20480 x 81920 = 1.68e9 parameters and the 5e7 prefetched, in 2
  // bytes: 3.46 GB, where two gathered layers would be 2 x 5.03e9 x 2 B = 20.1 GB.
  const auto w = transformer_workload(m);
  Graph g;
  w->graph(e.strategy, AttentionKernel::standard, g);
  const StageLayout layout(105, 1);
  Strategy resolved = e.strategy;
  const MemoryBreakdown deep = stage_memory(g, resolved, ds.software, layout.span(0), 0);
  Software layered = ds.software;
  layered.zero3_gathers = ShardedCalls::per_layer;
  const MemoryBreakdown fsdp = stage_memory(g, resolved, layered, layout.span(0), 0);
  const double sharded = 2 * stage_parameters(g, layout.span(0)).total() / 640;
  EXPECT_NEAR(deep.weights - sharded, 2 * (20480.0 * 81920 + 5e7), 1e3);
  EXPECT_GT(fsdp.weights - sharded, 19e9);
}

// During the backward a per-layer ZeRO-3 stack holds two units' gradients unsharded (issue 32,
// item 8): the unit whose backward runs, in the type its weight-gradient GEMMs write, and the
// one before it, copied into its reduce-scatter's input in the reduction type until that
// reduce-scatter ends. FSDP2 (torchtitan): bf16 gradients from autograd, fp32 reduction;
// Megatron-core's FSDP: fp32 into the gradient buffer both. DeepSpeed's ZeRO-3 holds its
// reduce bucket (reduce_bucket_size 5e8 parameters) in fp16.
TEST(Zero3, TheBackwardHoldsTwoUnitsGradientsUnsharded) {
  const Model m = load_model("llama3-8b");
  const auto w = transformer_workload(m);
  const Strategy s = parse_strategy("tp=1,pp=1,dp=8,mbs=1,gbs=8,zero=3,precision=bf16", 8);
  Graph g;
  w->graph(s, AttentionKernel::flash, g);
  const StageLayout layout(32, 1);
  const Software titan = software_preset("torchtitan");
  const Software core = software_preset("megatron-core");
  const StageShards shards = stage_shards(g, s, titan, layout.span(0));
  const double params = stage_parameters(g, layout.span(0)).total();
  // The largest adjacent pair: the embedding (128256 x 4096) and the first layer (218.1 M).
  EXPECT_NEAR(shards.gathered_peak, 128256.0 * 4096 + 218112000.0, 1e-3 * shards.gathered_peak);
  const MemoryBreakdown t = stage_memory(g, s, titan, layout.span(0), 0);
  const MemoryBreakdown c = stage_memory(g, s, core, layout.span(0), 0);
  // The fp32 shard, and (2 + 4) / 2 B a parameter of the pair (torchtitan), 4 (Megatron-core).
  EXPECT_NEAR(t.gradients, 4 * params / 8 + 3 * shards.gathered_peak, 1);
  EXPECT_NEAR(c.gradients, 4 * params / 8 + 4 * shards.gathered_peak, 1);
  EXPECT_GT(t.gradients - 4 * params / 8, 2.2e9);  // 2.23 GB: Llama 3 8B's pair in flight
  // DeepSpeed: the reduce bucket, 5e8 parameters in fp16, beside the fp16 shard.
  Software ds = software_preset("megatron-deepspeed");
  Strategy fp16 = s;
  fp16.precision = DType::fp16;
  const MemoryBreakdown d = stage_memory(g, fp16, ds, layout.span(0), 0);
  EXPECT_NEAR(d.gradients, 2 * params / 8 + 2 * 5e8, 1);
}

// FSDP2 copies each all-gather's rank-major buffer into the unit's unsharded parameters on
// the compute stream (FSDPParamGroup.wait_for_unshard: foreach_all_gather_copy_out), once for
// the forward's gather and once for the backward's. Hand calculation, Llama 3 8B (P =
// 8.03e9 parameters, tp 1: every one gathered) on 64 A100-80GB, one micro-batch: each copy
// reads and writes 2 B a parameter, 4P = 32.1 GB at the framework kernels' bandwidth,
// 2,039 GB/s x 0.834 (BabelStream) x 0.665 = 1,131 GB/s: 28.4 ms, plus the 2 us kernel gap.
TEST(Zero3, Fsdp2CopiesEveryGatherIntoItsUnshardedParametersOnTheComputeStream) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-a100", 64);
  EstimateOptions with, without;
  with.software = software_preset("torchtitan");
  without.software = parse_software("torchtitan:fsdp_copy_out=false");
  ASSERT_TRUE(with.software.fsdp_copy_out);
  ASSERT_FALSE(software_preset("megatron-core").fsdp_copy_out);
  auto part = [](const Estimate& e, const std::string& name) {
    for (const TimePart& p : e.time)
      if (p.name == name) return p.seconds;
    return -1.0;
  };
  const Strategy fsdp = parse_strategy("tp=1,mbs=1,gbs=64,zero=3,precision=bf16", 64);
  const Estimate a = estimate(m, c, fsdp, with), b = estimate(m, c, fsdp, without);
  const double copy = 4 * a.parameters / (2039e9 * 0.834 * 0.665) + 2e-6;
  EXPECT_NEAR(copy, 0.0284, 0.0005);
  EXPECT_NEAR(part(a, "compute_forward") - part(b, "compute_forward"), copy, 1e-6);
  EXPECT_NEAR(part(a, "compute_backward") - part(b, "compute_backward"), copy, 1e-6);
  EXPECT_GT(a.step_time_s, b.step_time_s);
  // DDP gathers nothing: no copy.
  const Strategy ddp = parse_strategy("tp=1,mbs=1,gbs=64,zero=0,precision=bf16", 64);
  EXPECT_DOUBLE_EQ(estimate(m, c, ddp, with).step_time_s, estimate(m, c, ddp, without).step_time_s);
}

TEST(Zero3, EachPresetRefusesWhatItsStackCannotRun) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 16);
  EstimateOptions ds, titan;
  ds.software = software_preset("megatron-deepspeed");
  titan.software = software_preset("torchtitan");
  EXPECT_NE(test_models::input_error_of([&] {
              (void)estimate(m, c, parse_strategy("tp=8,pp=2,gbs=16,vpp=2", 16), ds);
            }).find("no interleaved pipeline schedule"),
            std::string::npos);
  EXPECT_NE(test_models::input_error_of([&] {
              (void)estimate(m, c, parse_strategy("tp=8,pp=2,gbs=16,zero=2", 16), ds);
            }).find("does not run ZeRO-2 with pipeline parallelism"),
            std::string::npos);
  EXPECT_NE(test_models::input_error_of([&] {
              (void)estimate(m, c, parse_strategy("tp=8,gbs=16,zero=1", 16), titan);
            }).find("torchtitan has no ZeRO-1"),
            std::string::npos);
  // rank proposes only what the stack runs.
  RankOptions ro;
  ro.global_batch = 32;
  ro.top = 50;
  ro.estimate = titan;
  for (const Estimate& e : rank(m, c, ro).best)
    EXPECT_TRUE(e.strategy.zero == 0 || e.strategy.zero == 3);
  ro.estimate = ds;
  for (const Estimate& e : rank(m, c, ro).best) EXPECT_EQ(e.strategy.vpp, 1);
}

// DeepSpeed's ZeRO-3 of 2021 (v0.3.13-v0.5.4, partition_parameters.py and stage3.py; issue
// 32, item 8): each gathered tensor's _allgather_param zeroes the tensor's buffer, calls
// torch.cuda.synchronize(), builds a list of one narrow() view per rank in Python and hands
// it to torch.distributed.all_gather, whose ProcessGroupNCCL copies the result into every
// view with its own copy_, issued once the collective is queued; each tensor's gradient goes
// through _reduce_scatter_gradient the same way (view and narrow per rank; ProcessGroupNCCL::
// reduce_scatter copies every view into its flat input). Tensors under
// stage3_param_persistence_threshold (1e5 elements) stay whole through a micro-batch; every
// backward releases them with the rest, the step gathers them back at once through
// _allgather_params, which copies each out from Python a rank at a time, and the later
// micro-batches' forwards a tensor at a time. GPT-3 175B on 1,536 A100s.
TEST(Zero3, DeepSpeedOf2021PaysTheHostAViewPerRankAndWaitsForEveryGather) {
  const Model m = load_model("gpt3-175b");
  const Cluster c = load_cluster("dgx-a100", 1536);
  const Strategy s =
      parse_strategy("tp=1,pp=1,dp=1536,mbs=1,gbs=1536,recompute=full,zero=3,precision=fp16", 1536);
  const Software ds = software_preset("megatron-deepspeed");
  ASSERT_TRUE(ds.zero3_list_collectives);
  ASSERT_EQ(ds.zero3_persistence_params, 1e5);
  const Priced3 p = zero_comm(m, c, s, ds);
  // Tensors: a layer's four weights and eight vectors (four biases, two LayerNorms' scale and
  // shift: 36,864, 12,288, 49,152 and 12,288 elements, and 4 x 12,288), the word and
  // position embeddings (the head's weight is the tied table), the final LayerNorm's two.
  ASSERT_EQ(p.params.tensors, 96 * 12 + 2 + 2);
  const auto w = transformer_workload(m);
  Graph g;
  w->graph(s, ds.attention, g);
  const StageShards shards = stage_shards(g, s, ds, StageLayout(96, 1).span(0));
  EXPECT_EQ(shards.gather_calls, 96 * 4 + 2);
  EXPECT_EQ(shards.reduce_calls, 96 * 12 + 2 + 2);
  EXPECT_EQ(shards.persistent_tensors, 96 * 8 + 2);
  const double vectors = 36864.0 + 12288 + 49152 + 12288 + 4 * 12288;
  EXPECT_NEAR(shards.persistent_params, 96 * vectors + 2 * 12288, 1e-6);

  // A Python ATen op that launches nothing: 2 us; a copy from C++: 4 us (1 us of dispatch
  // and the launch); a copy from Python: 2 + 3 us.
  const double py = 2e-6, cpp = 4e-6, ranks = 1536;
  ASSERT_EQ(ds.host_python_op_s, py);
  const double P = p.params.total(), table = (50257.0 + 2048) * 12288;
  // The gathers, each exposed: the first holds one of the embedding's two tensors (the
  // unit's share), the other 385 the rest in equal calls; the host's 386 x 1,536 views
  // before them and copies issued while they run; the zeroed buffers.
  const GroupPlacement& group = p.place.dp_cp;
  const double collectives =
      p.pricer.collective(CollectiveOp::all_gather, 2 * table / 2, group).seconds +
      385 * p.pricer.collective(CollectiveOp::all_gather, 2 * (P - table / 2) / 385, group).seconds;
  const double gathers = 386 * ranks * py + std::max(collectives, 386 * ranks * cpp) +
                         p.pricer.memory("memset", 2 * P).seconds;
  EXPECT_NEAR(386 * ranks * py, 1.186, 0.001);
  EXPECT_NEAR(386 * ranks * cpp, 2.372, 0.001);
  EXPECT_DOUBLE_EQ(p.comm.every_forward.hidden.seconds, 0);
  EXPECT_NEAR(p.comm.every_forward.exposed.seconds, gathers, 1e-9);
  // The backward gathers again and reduce-scatters every tensor's fp16 gradient: two views
  // and a copy per rank and tensor on the host beside its kernels.
  EXPECT_NEAR(p.comm.every_backward.host.seconds, 1156 * ranks * (2 * py + cpp), 1e-9);
  EXPECT_NEAR(p.comm.every_backward.host.seconds, 14.205, 0.001);
  EXPECT_NEAR(
      p.comm.every_backward.hidden.seconds,
      1155 * p.pricer.collective(CollectiveOp::reduce_scatter, 2 * (P - table / 2) / 1155, group)
                 .seconds,
      1e-9);
  // After the step the 770 persisting vectors: one gather, its 1,536 views and copies, and
  // from Python per vector and rank three views and a launched copy (11 us).
  const double all_at_once =
      p.pricer.collective(CollectiveOp::all_gather, 2 * shards.persistent_params, group).seconds;
  const double once =
      ranks * py + std::max(all_at_once, ranks * cpp) + 770 * ranks * (3 * py + py + 3e-6);
  EXPECT_NEAR(770 * ranks * (4 * py + 3e-6), 13.010, 0.001);
  EXPECT_NEAR(p.comm.next_forward.exposed.seconds, once, 1e-9);
  // In every micro-batch's forward but the first, a tensor at a time like the weights.
  const double each_vector =
      p.pricer.collective(CollectiveOp::all_gather, 2 * shards.persistent_params / 770, group)
          .seconds;
  EXPECT_NEAR(p.comm.later_forward.seconds,
              770 * ranks * py + std::max(770 * each_vector, 770 * ranks * cpp) +
                  p.pricer.memory("memset", 2 * shards.persistent_params).seconds,
              1e-9);

  // The step: 16.3 s without them (the gathers hidden, the gradients in 5e8 buckets), over
  // twice that with; a second micro-batch adds its compute, its passes' gathers and
  // reduce-scatters and the persisting vectors' gathers.
  EstimateOptions with, without;
  with.software = ds;
  without.software = parse_software("megatron-deepspeed:zero3_list_collectives=false");
  without.software.zero3_persistence_params = 0;
  const Estimate a = estimate(m, c, s, with), b = estimate(m, c, s, without);
  EXPECT_NEAR(b.step_time_s, 16.25, 0.05);
  EXPECT_GT(a.step_time_s, 2 * b.step_time_s);
  auto dp = [](const Estimate& e) {
    for (const TimePart& t : e.time)
      if (t.name == std::string("dp_comm")) return t.seconds;
    return -1.0;
  };
  Strategy two = s;
  two.gbs = 3072;
  const Estimate a2 = estimate(m, c, two, with);
  const double pass = p.comm.every_forward.exposed.seconds + p.comm.every_backward.exposed.seconds;
  EXPECT_GT(dp(a2) - dp(a), pass + p.comm.later_forward.seconds - 1e-6);
  // Megatron-core's FSDP gathers a layer at a time into its buffers: none of it.
  EXPECT_FALSE(software_preset("megatron-core").zero3_list_collectives);
  EXPECT_EQ(software_preset("torchtitan").zero3_persistence_params, 0);
}

// Under full recomputation DeepSpeed's coordinator keeps a linear gathered after its
// recomputed forward only where the weights run before its backward add up to fewer than
// stage3_max_reuse_distance (1e9) elements: between the two uses of linear i run every later
// linear's recomputation and backward, 2 x their weights. GPT-3 175B (h = 12,288): fc2 runs
// its backward next (0, kept); fc1 has fc2 twice, 2 x 4h^2 = 1.21e9; the projection and QKV
// more. Three of a layer's four weights, 8h^2 of its 12h^2, are gathered again.
TEST(Zero3, DeepSpeedGathersALinearAgainForItsBackwardPastTheReuseDistance) {
  const Model m = load_model("gpt3-175b");
  const Cluster c = load_cluster("dgx-a100", 1536);
  const Software ds = software_preset("megatron-deepspeed");
  ASSERT_EQ(ds.zero3_reuse_distance_params, 1e9);
  const double h = 12288, layer = 8 * h * h;
  auto shards_of = [&](const char* recompute, const Software& sw) {
    const Strategy s = parse_strategy(
        std::string("tp=1,pp=1,dp=1536,mbs=1,gbs=1536,zero=3,precision=fp16,recompute=") +
            recompute,
        1536);
    Graph g;
    transformer_workload(m)->graph(s, sw.attention, g);
    return stage_shards(g, s, sw, StageLayout(96, 1).span(0));
  };
  const StageShards full = shards_of("full", ds);
  EXPECT_EQ(full.recompute_regathers, 96 * 3);
  EXPECT_NEAR(full.recompute_regather_params, 96 * layer, 1);
  // Nothing is recomputed, or the stack keeps a unit through its backward: none.
  EXPECT_EQ(shards_of("none", ds).recompute_regathers, 0);
  Software keeps = ds;
  keeps.zero3_reuse_distance_params = 0;
  EXPECT_EQ(shards_of("full", keeps).recompute_regathers, 0);
  // A threshold of one element releases all but the last linear; GPT-3 6.7B's layer
  // (h = 4,096: 2 x 9h^2 = 3.0e8 at most) stays under 1e9 whole.
  Graph g;
  const Strategy s = parse_strategy("tp=1,pp=1,dp=8,mbs=1,gbs=8,zero=3,recompute=full", 8);
  transformer_workload(m)->graph(s, ds.attention, g);
  const Block& body = *std::find_if(g.blocks.begin(), g.blocks.end(),
                                    [](const Block& b) { return b.pin == Block::Pin::body; });
  EXPECT_EQ(recompute_regathers(body, 1).tensors, 3);
  EXPECT_EQ(recompute_regathers(body, 2 * 4 * h * h + 1).tensors, 2);  // fc1 kept too
  Model small = load_model("gpt3-6.7b");
  Graph gs;
  transformer_workload(small)->graph(s, ds.attention, gs);
  for (const Block& b : gs.blocks) {
    if (b.pin != Block::Pin::body) continue;
    EXPECT_EQ(recompute_regathers(b, 1e9).tensors, 0);
  }

  // Priced as the backward's other gathers: exposed, each with its views and copies per rank
  // and its zeroed buffer; 288 x 1,536 x 6 us of host work alone, 2.65 s a backward.
  const Strategy st =
      parse_strategy("tp=1,pp=1,dp=1536,mbs=1,gbs=1536,recompute=full,zero=3,precision=fp16", 1536);
  const Priced3 with = zero_comm(m, c, st, ds), without = zero_comm(m, c, st, keeps);
  const double ranks = 1536, bytes = 2 * 96 * layer;
  const double each =
      with.pricer.collective(CollectiveOp::all_gather, bytes / 288, with.place.dp_cp).seconds;
  const double regathers = 288 * ranks * 2e-6 + std::max(288 * each, 288 * ranks * 4e-6) +
                           with.pricer.memory("memset", bytes).seconds;
  EXPECT_NEAR(288 * ranks * 6e-6, 2.654, 0.001);
  EXPECT_NEAR(
      with.comm.every_backward.exposed.seconds - without.comm.every_backward.exposed.seconds,
      regathers, 1e-9);
  EXPECT_DOUBLE_EQ(with.comm.every_forward.exposed.seconds,
                   without.comm.every_forward.exposed.seconds);
}

// Past a hidden size of 25,000 a GPT's fc1 bias (4h) crosses the threshold: its layers'
// vectors are gathered with the weights (the unit's vectors taken together). Llama's RMSNorm
// scales persist at any size it has.
TEST(Zero3, DeepSpeedKeepsAUnitsVectorsWholeOnlyUnderItsThreshold) {
  const Software ds = software_preset("megatron-deepspeed");
  auto shards_of = [&](const Model& m) {
    const Strategy s = parse_strategy("tp=1,pp=1,dp=64,mbs=1,gbs=64,zero=3,precision=fp16", 64);
    Graph g;
    transformer_workload(m)->graph(s, ds.attention, g);
    return stage_shards(g, s, ds, StageLayout(m.layers, 1).span(0));
  };
  Model wide = load_model("gpt3-175b");
  wide.hidden = 25600, wide.ffn_hidden = 4 * 25600, wide.heads = 160, wide.kv_heads = 160;
  const StageShards a = shards_of(wide);
  EXPECT_EQ(a.persistent_tensors, 2);  // the final LayerNorm's
  EXPECT_EQ(a.gather_calls, 96 * 12 + 2);
  const StageShards b = shards_of(load_model("llama3-8b"));
  // 32 layers' two RMSNorm scales and the final norm's; 4 weights a layer gathered, the
  // embedding and the untied head.
  EXPECT_EQ(b.persistent_tensors, 32 * 2 + 1);
  EXPECT_EQ(b.gather_calls, 32 * 4 + 2);
  EXPECT_EQ(b.reduce_calls, 32 * 6 + 3);
}

// FSDP2 with pipelining (torchtitan) gathers once a step and reduce-scatters once after the
// last micro-batch: ZeRO-3 there shards and communicates as ZeRO-1 would.
TEST(Zero3, Fsdp2WithPipeliningGathersOnceAStep) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 32);
  EstimateOptions titan, one;
  titan.software = software_preset("torchtitan");
  one.software = titan.software;
  one.software.zero_stages |= 0b10;  // the same stack, were ZeRO-1 one of its stages
  const Estimate fsdp = estimate(m, c, parse_strategy("tp=4,pp=2,gbs=64,zero=3", 32), titan);
  const Estimate zero1 = estimate(m, c, parse_strategy("tp=4,pp=2,gbs=64,zero=1", 32), one);
  EXPECT_DOUBLE_EQ(fsdp.step_time_s, zero1.step_time_s);
  EXPECT_DOUBLE_EQ(fsdp.memory_per_gpu_bytes, zero1.memory_per_gpu_bytes);
  // Megatron-core refuses the combination, as before.
  EXPECT_THROW((void)estimate(m, c, parse_strategy("tp=4,pp=2,gbs=64,zero=3", 32)), InputError);
}

// What a step does around its kernels (issue 32, item 7). Llama 3 8B over 64 H100s, ZeRO-1,
// one micro-batch: Megatron-core clears its whole fp32 gradient buffer each step (4 B x 8.03B,
// not the 1/64 shard), and the embedding's dense gradient (128256 x 4096, not a fused
// linear) is zeroed (2 B) and added into the fp32 main gradient (read 2, read and write 4)
// every micro-batch.
TEST(StepCosts, TheWholeGradientBufferIsClearedAndTheEmbeddingGradientAccumulated) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 64);
  const Strategy s = parse_strategy("tp=1,dp=64,mbs=1,gbs=64,zero=1,precision=bf16", 64);
  const NodeGroup& group = c.groups.front();
  const Pricer pr(group.device, group.intra_node, c.inter_node, group.gpus_per_node, nullptr);
  const Placement place = placement(s);
  const StageLayout layout(m.layers, 1);
  auto times = [&](const Software& sw, double embedding_params) {
    Graph g;
    transformer_workload(m)->graph(s, sw.attention, g);
    for (Block& b : g.blocks)
      if (b.pin == Block::Pin::first_stage) b.dense_params = embedding_params;
    return step_times({g, s, layout, sw, place, pr, false, nullptr, nullptr});
  };
  const Software core = software_preset("megatron-core");
  const double table = 128256.0 * 4096;
  const Times with = times(core, table);
  const Times without = times(core, 0);
  const double stream = group.device.memory_bandwidth_Bps * group.device.memory_efficiency;
  const double framework = pr.kernel_bandwidth();
  EXPECT_NEAR(with.s[kComputeBackward] - without.s[kComputeBackward],
              2 * table / stream + 2e-6 + 10 * table / framework + 2e-6, 1e-9);
  // The buffer: the whole model's 4-byte gradients against the shard a stack without one
  // clears.
  Software shard = core;
  shard.zero_whole_grad_buffer = false;
  const double all = parameter_count(m);
  EXPECT_NEAR(with.s[kOptimizer] - times(shard, table).s[kOptimizer],
              4 * all / stream - 4 * all / 64 / stream, 1e-9);
  EXPECT_FALSE(software_preset("torchtitan").zero_whole_grad_buffer);
  EXPECT_FALSE(software_preset("megatron-lm-2021").zero_whole_grad_buffer);
}

}  // namespace
}  // namespace shardcost
