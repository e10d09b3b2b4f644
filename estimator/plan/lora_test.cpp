// lora=R (LoRA fine-tuning as Megatron-Bridge runs it): frozen weights, adapters beside the
// linears, each rule with its hand calculation.
#include <gtest/gtest.h>

#include <string>

#include "plan/block_times.h"
#include "plan/estimate_internal.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "test_models.h"
#include "workload/model_math.h"
#include "workload/transformer.h"

namespace shardcost {
namespace {

using test_models::input_error_of;
using test_models::memory_part;
using test_models::part;

const Op& op_named(const Block& b, const std::string& name, int nth = 0) {
  for (const Op& op : b.ops)
    if (name == op.name && nth-- == 0) return op;
  throw std::runtime_error("no op " + name);
}

int count_named(const Block& b, const std::string& name) {
  int n = 0;
  for (const Op& op : b.ops) n += name == op.name ? 1 : 0;
  return n;
}

const Block& layer_of(const Graph& g) {
  for (const Block& b : g.blocks)
    if (b.pin == Block::Pin::body) return b;
  throw std::runtime_error("no layer");
}

TEST(Lora, StrategyTextRoundTripsAndBadValuesAreOneLine) {
  const Strategy s = parse_strategy("tp=2,dp=4,gbs=8,lora=16,lora_targets=attention", 8);
  EXPECT_EQ(s.lora, 16);
  EXPECT_EQ(s.lora_linears(), unsigned{kLoraQkv | kLoraProj});
  EXPECT_NE(to_string(s).find(",lora=16,lora_targets=qkv/proj"), std::string::npos);
  const Strategy again = parse_strategy(to_string(s), 8);
  EXPECT_EQ(again.lora, 16);
  EXPECT_EQ(again.lora_targets, s.lora_targets);
  // Without targets, all four linears (Megatron-Bridge's default), and the text says none.
  const Strategy all = parse_strategy("lora=8", 1);
  EXPECT_EQ(all.lora_linears(), unsigned{kLoraAll});
  EXPECT_EQ(to_string(all).find("lora_targets"), std::string::npos);
  EXPECT_EQ(parse_strategy("dp=1", 1).lora_linears(), 0u);

  const Strategy dropped = parse_strategy("lora=16,lora_dropout=0.1", 1);
  EXPECT_DOUBLE_EQ(dropped.lora_dropout, 0.1);
  EXPECT_NE(to_string(dropped).find(",lora=16,lora_dropout=0.1"), std::string::npos);
  EXPECT_NE(input_error_of([] {
              parse_strategy("lora=16,lora_dropout=1", 1);
            }).find("a probability from 0 up to (not including) 1"),
            std::string::npos);
  EXPECT_NE(input_error_of([] { parse_strategy("lora=0", 1); }).find("a whole number from 1"),
            std::string::npos);
  EXPECT_NE(input_error_of([] {
              parse_strategy("lora=8,lora_targets=qkv/ffn", 1);
            }).find("needs linears from qkv, proj, fc1 and fc2"),
            std::string::npos);
}

TEST(Lora, RefusedWhereItIsNotModelled) {
  const Cluster c = load_cluster("dgx-h100", 8);
  const EstimateOptions opt;
  auto error = [&](const Model& m, const std::string& text) {
    return input_error_of([&] { estimate(m, c, parse_strategy(text, 8), opt); });
  };
  const Model llama = load_model("llama3-8b");
  EXPECT_NE(error(llama, "tp=1,dp=8,gbs=8,lora_targets=qkv")
                .find("lora_targets and lora_dropout need lora=R"),
            std::string::npos);
  // The adapters beside qkv and fc1 split their rank over the tensor-parallel ranks.
  EXPECT_NE(error(llama, "tp=4,dp=2,gbs=8,sp=true,lora=10").find("divisible by tp=4"),
            std::string::npos);
  // ... those beside proj and fc2 do not.
  EXPECT_NO_THROW(estimate(
      llama, c, parse_strategy("tp=4,dp=2,gbs=8,sp=true,lora=10,lora_targets=proj/fc2", 8), opt));
  EXPECT_NE(error(load_model("mixtral-8x7b"), "tp=1,ep=8,dp=8,gbs=8,lora=16")
                .find("dense transformer layers"),
            std::string::npos);
}

// Llama 3 8B (h 4096, 32 heads of 128, 8 KV heads, SwiGLU ffn 14336) at tp 2 with sequence
// parallelism, one 8192-token sequence: T = 8192 tokens a rank computes after the gather.
TEST(Lora, FrozenLinearsComputeNoWeightGradientAndAdaptersSitBeside) {
  const Model m = load_model("llama3-8b");
  const auto w = transformer_workload(m);
  Graph g;
  w->graph(parse_strategy("tp=2,mbs=1,gbs=8,sp=true,lora=16", 8), AttentionKernel::flash, g);
  const Block& layer = layer_of(g);
  for (const char* name : {"qkv", "attention_proj", "mlp_fc1", "mlp_fc2"})
    EXPECT_TRUE(op_named(layer, name).frozen) << name;
  for (const Block& b : g.blocks)
    if (b.pin == Block::Pin::last_stage) {
      EXPECT_TRUE(op_named(b, "lm_head").frozen);
    }
  // Four adapters, each two trained GEMMs.
  EXPECT_EQ(count_named(layer, "lora_a"), 4);
  EXPECT_EQ(count_named(layer, "lora_b"), 4);
  EXPECT_FALSE(op_named(layer, "lora_a").frozen);
  const double T = 8192, h = 4096;
  // Beside qkv (column-parallel, 3072 outputs a rank): A 4096 -> 16 / 2, its T x 16 output
  // gathered (2 B an element), B 16 -> 3072; under sequence parallelism no input-gradient
  // all-reduce (Transformer Engine hands the gathered norm output over).
  const Op& qa = op_named(layer, "lora_a", 0);
  EXPECT_EQ(qa.gemm.m, 8192);
  EXPECT_EQ(qa.gemm.n, 8);
  EXPECT_EQ(qa.gemm.k, 4096);
  EXPECT_EQ(op_named(layer, "lora_b", 0).gemm.n, 3072);
  EXPECT_DOUBLE_EQ(op_named(layer, "lora_a_all_gather").bytes, 2 * T * 16);
  EXPECT_EQ(count_named(layer, "lora_a_input_grad_all_reduce"), 0);
  // Where userbuffers overlap the linear's all-gather, Transformer Engine gives the adapter the
  // norm's output ungathered: the adapter gathers it (T x h) and the gradient goes back through
  // a reduce-scatter and an add into the norm's (6 B an element of the shard); the linear's
  // own gather then runs without userbuffers.
  const Op& own = op_named(layer, "lora_sequence_all_gather");
  EXPECT_TRUE(own.needs_tp_comm_overlap);
  EXPECT_DOUBLE_EQ(own.bytes, 2 * T * h);
  EXPECT_EQ(own.backward_op, CollectiveOp::reduce_scatter);
  EXPECT_TRUE(op_named(layer, "lora_input_grad_add").needs_tp_comm_overlap);
  EXPECT_DOUBLE_EQ(op_named(layer, "lora_input_grad_add").backward_bytes, 6 * T * h / 2);
  EXPECT_FALSE(op_named(layer, "tp_all_gather", 0).userbuffers);
  EXPECT_EQ(count_named(layer, "lora_dropout"), 0);
  // Dropout on the adapters' inputs (lora_dropout): read, write the masked copy and a 1-byte
  // mask (5 B); backward, the gradient through the mask and its add into the input's (11 B).
  Graph dg;
  w->graph(parse_strategy("tp=2,mbs=1,gbs=8,sp=true,lora=16,lora_dropout=0.1", 8),
           AttentionKernel::flash, dg);
  EXPECT_DOUBLE_EQ(op_named(layer_of(dg), "lora_dropout").bytes, 5 * T * h);
  EXPECT_DOUBLE_EQ(op_named(layer_of(dg), "lora_dropout").backward_bytes, 11 * T * h);
  // Beside the projection (row-parallel, 2048 inputs a rank): A 2048 -> 16, its output
  // all-reduced; B 16 -> 2048 outputs of 4096, gathered whole (T x h), split back to the
  // sequence shard (an all-gather of the gradient backward).
  const Op& pa = op_named(layer, "lora_a", 1);
  EXPECT_EQ(pa.gemm.n, 16);
  EXPECT_EQ(pa.gemm.k, 2048);
  EXPECT_EQ(op_named(layer, "lora_b", 1).gemm.n, 2048);
  EXPECT_DOUBLE_EQ(op_named(layer, "lora_a_all_reduce").bytes, 2 * T * 16);
  EXPECT_DOUBLE_EQ(op_named(layer, "lora_b_all_gather").bytes, 2 * T * h);
  EXPECT_DOUBLE_EQ(op_named(layer, "lora_sequence_grad_all_gather").bytes, 2 * T * h);
  // The gather along the last dimension ends in a concatenation: a copy of T x h forward, the
  // split's copy of T x h / 2 backward.
  EXPECT_DOUBLE_EQ(op_named(layer, "lora_gather_concat").bytes, 4 * T * h);
  EXPECT_DOUBLE_EQ(op_named(layer, "lora_gather_concat").backward_bytes, 4 * T * h / 2);
  EXPECT_FALSE(op_named(layer, "lora_sequence_grad_all_gather").op.has_value());
  // The scale and add over the projection's output shard: 10 B forward, 4 B backward.
  EXPECT_DOUBLE_EQ(op_named(layer, "lora_scale_add", 1).bytes, 10 * T * h / 2);
  // No weight gradient, no re-gather of the sequence-parallel input for one.
  EXPECT_FALSE(op_named(layer, "tp_all_gather").backward_regather);
  // The adapters' weights: 16 x (in + out) of each linear, over tp.
  const double adapters = 16.0 * ((h + 6144) + (h + h) + (h + 2 * 14336) + (14336 + h)) / 2;
  EXPECT_DOUBLE_EQ(layer.adapter_params, adapters);
  EXPECT_TRUE(layer.frozen);
}

TEST(Lora, Fp8CastsOfAFrozenLinear) {
  // precision=fp8 on Hopper: TE quantizes a linear's input column-wise only for a weight
  // gradient; its LayerNormLinear (qkv, fc1) casts the output gradient both ways always, its
  // Linear (proj, fc2) only where there is a bias (Llama has none). T = 8192, h = 4096, qkv
  // 3072 outputs a rank, proj 2048 inputs a rank; casts read 2 B and write 1 B a copy.
  const Model m = load_model("llama3-8b");
  const auto w = transformer_workload(m);
  const double T = 8192, h = 4096;
  auto layer_graph = [&](const std::string& extra, Graph& g) {
    w->graph(parse_strategy("tp=2,mbs=1,gbs=8,sp=true,precision=fp8" + extra, 8),
             AttentionKernel::flash, g);
    return layer_of(g);
  };
  Graph trained_g, frozen_g, adapted_g;
  const Block& trained = layer_graph("", trained_g);
  const Block& frozen = layer_graph(",lora=16,lora_targets=proj/fc2", frozen_g);
  const Block& adapted = layer_graph(",lora=16", adapted_g);
  // qkv frozen, its input quantized by the norm: forward nothing, backward the output gradient
  // both ways and no transpose of the input (trained: also 2 B x T x h for that transpose).
  EXPECT_DOUBLE_EQ(op_named(trained, "qkv_fp8_casts").backward_bytes, 4 * T * 3072 + 2 * T * h);
  EXPECT_DOUBLE_EQ(op_named(frozen, "qkv_fp8_casts").bytes, 0);
  EXPECT_DOUBLE_EQ(op_named(frozen, "qkv_fp8_casts").backward_bytes, 4 * T * 3072);
  // qkv adapted: the norm writes 16 bits, gathered so (2 B an element, not 1) and cast whole
  // after the gather, one copy.
  EXPECT_DOUBLE_EQ(op_named(adapted, "qkv_fp8_casts").bytes, 3 * T * h);
  EXPECT_DOUBLE_EQ(op_named(adapted, "tp_all_gather", 0).bytes, 2 * T * h);
  EXPECT_DOUBLE_EQ(op_named(frozen, "tp_all_gather", 0).bytes, 1 * T * h);
  // proj frozen: its input cast once (3 B), its output gradient once (3 B); trained, both twice.
  EXPECT_DOUBLE_EQ(op_named(frozen, "attention_proj_fp8_casts").bytes, 3 * T * 2048);
  EXPECT_DOUBLE_EQ(op_named(frozen, "attention_proj_fp8_casts").backward_bytes, 3 * T * h);
  EXPECT_DOUBLE_EQ(op_named(trained, "attention_proj_fp8_casts").bytes, 4 * T * 2048);
  EXPECT_DOUBLE_EQ(op_named(trained, "attention_proj_fp8_casts").backward_bytes, 4 * T * h);
}

TEST(Lora, AFrozenGemmPricesItsInputGradientAloneAndUserbuffersOnlyOpsNothingWithout) {
  const Cluster c = load_cluster("dgx-h100", 8);
  const NodeGroup& g = c.groups.front();
  const Pricer pr{g.device, g.intra_node, c.inter_node, g.gpus_per_node, nullptr};
  const Placement place = placement(parse_strategy("tp=8,sp=true,gbs=1", 8));
  Op linear;
  linear.name = "linear";
  linear.kind = OpKind::gemm;
  linear.gemm = {8192, 3072, 8192, 1};
  Op frozen = linear;
  frozen.frozen = true;
  Software on = software_preset("megatron-core"), off = on;
  on.tp_comm_overlap = true;
  off.tp_comm_overlap = false;
  const double dgrad = pr.gemm(dgrad_shape(linear.gemm)).seconds;
  const double wgrad = pr.gemm(wgrad_shape(linear.gemm)).seconds;
  EXPECT_DOUBLE_EQ(
      block_times({linear}, pr, place, Recompute::none, off, false).s[kComputeBackward],
      dgrad + wgrad);
  EXPECT_DOUBLE_EQ(
      block_times({frozen}, pr, place, Recompute::none, off, false).s[kComputeBackward], dgrad);
  // An adapter's own gather (T x h, 8192 x 8192 in bf16): priced under userbuffers, absent
  // without them.
  Op gather;
  gather.name = "lora_sequence_all_gather";
  gather.kind = OpKind::collective;
  gather.axis = Axis::tp;
  gather.op = CollectiveOp::all_gather;
  gather.bytes = 2.0 * 8192 * 8192;
  gather.needs_tp_comm_overlap = true;
  EXPECT_DOUBLE_EQ(block_times({gather}, pr, place, Recompute::none, off, false).s[kTpComm], 0);
  EXPECT_DOUBLE_EQ(block_times({gather}, pr, place, Recompute::none, on, false).s[kTpComm],
                   pr.collective(CollectiveOp::all_gather, gather.bytes, place.tp).seconds);
}

TEST(Lora, TheAdaptersOwnGathersRunOnlyUnderUserbuffers) {
  // Under Transformer Engine's userbuffers the adapters beside qkv and fc1 gather the norm's
  // output themselves and the linears' gathers lose their overlap; without them neither: the
  // tensor-parallel time LoRA adds is larger with the overlap than without it.
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 8);
  EstimateOptions on, off;
  on.software.tp_comm_overlap = true;
  off.software.tp_comm_overlap = false;
  const std::string base = "tp=8,dp=1,mbs=1,gbs=8,sp=true";
  auto tp_comm = [&](const EstimateOptions& o, const std::string& extra) {
    return part(estimate(m, c, parse_strategy(base + extra, 8), o), "tp_comm");
  };
  const double added_on = tp_comm(on, ",lora=16") - tp_comm(on, "");
  const double added_off = tp_comm(off, ",lora=16") - tp_comm(off, "");
  EXPECT_GT(added_off, 0);
  EXPECT_GT(added_on, added_off);
}

TEST(Lora, ActivationsKeepWhatTheBackwardReads) {
  // Frozen linears keep no input; an adapter keeps its input (beside qkv and fc1 the gathered
  // norm output) and its T x R low-rank activation; attention keeps what it kept.
  const Model m = load_model("llama3-8b");
  const MicroBatch mb{1, 8192, 8192.0 * 8192};
  const double T = 8192, h = 4096, f = 14336, e = 2, r = 16;
  auto kept = [&](const std::string& text) {
    return layer_activation_bytes(m, parse_strategy(text, 8), AttentionKernel::flash,
                                  Recompute::none, mb, m.layer_kind(0));
  };
  // tp 1: the same tensors, plus four low-rank activations.
  EXPECT_DOUBLE_EQ(kept("tp=1,dp=8,gbs=8,lora=16") - kept("tp=1,dp=8,gbs=8"), 4 * e * T * r);
  // Attention's linears alone: fc1's and fc2's inputs are no longer kept.
  EXPECT_DOUBLE_EQ(kept("tp=1,dp=8,gbs=8,lora=16,lora_targets=attention") - kept("tp=1,dp=8,gbs=8"),
                   2 * e * T * r - e * T * h - e * T * f);
  // Dropout on the adapters' inputs: each keeps the masked copy instead, and the mask (1 B);
  // beside the projection the copy is a tensor of its own (the attention keeps its output).
  const double q = 4096;  // 32 heads of 128
  EXPECT_DOUBLE_EQ(
      kept("tp=1,dp=8,gbs=8,lora=16,lora_dropout=0.1") - kept("tp=1,dp=8,gbs=8,lora=16"),
      T * h + (e + 1) * T * q + T * h + T * f);
  // tp 2 with sequence parallelism: beside qkv and fc1 the whole gathered input, not the shard,
  // and Transformer Engine's own copy of the shard, which it returns to the adapter.
  EXPECT_DOUBLE_EQ(kept("tp=2,dp=4,gbs=8,sp=true,lora=16") - kept("tp=2,dp=4,gbs=8,sp=true"),
                   2 * e * T * h / 2 + 2 * e * T * h / 2 + 4 * e * T * r);
}

TEST(Lora, OnlyTheAdaptersTakeGradientsStateAndReduction) {
  // Llama 3 8B on 8 H100s, dp 8 under the distributed optimizer: 32 layers of adapters,
  // 16 x (10240 + 8192 + 32768 + 18432) = 1,114,112 weights each, 35,651,584 in all.
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 8);
  const EstimateOptions opt;
  const Estimate full = estimate(m, c, parse_strategy("tp=1,dp=8,mbs=1,gbs=8,zero=1", 8), opt);
  const Estimate lora =
      estimate(m, c, parse_strategy("tp=1,dp=8,mbs=1,gbs=8,zero=1,lora=16", 8), opt);
  const double adapters = 32 * 16.0 * (10240 + 8192 + 32768 + 18432);
  EXPECT_DOUBLE_EQ(adapters, 35651584);
  EXPECT_NEAR(memory_part(lora, "gradients"), 4 * adapters, 1);
  EXPECT_NEAR(memory_part(lora, "optimizer_state"), 12 * adapters / 8, 1);
  EXPECT_NEAR(memory_part(lora, "weights"), 2 * (full.parameters + adapters), 1);
  // The reduction moves the adapters' fp32 gradients (143 MB, not 32 GB); the optimizer runs
  // over their shard.
  EXPECT_LT(part(lora, "dp_comm"), part(full, "dp_comm") / 20);
  EXPECT_LT(part(lora, "optimizer"), part(full, "optimizer") / 50);
  // Backward: the linears' input gradients alone (half their GEMMs); attention's backward and
  // the memory-bound passes stay, and the adapters add their own (their scale and add run over
  // every output of the linears they sit beside: fc1's 2 x 14336 a token).
  const double ratio = part(lora, "compute_backward") / part(full, "compute_backward");
  EXPECT_GT(ratio, 0.5);
  EXPECT_LT(ratio, 0.85);
  EXPECT_GT(part(lora, "compute_forward"), part(full, "compute_forward"));
  EXPECT_LT(lora.step_time_s, full.step_time_s);

  // FLOPs a step: the linears and the head count forward and input gradient (4 a weight and
  // token, not 6), the adapters 6. Per token, the layers' linears 32 x (2 x (4096 x 6144 +
  // 4096 x 4096) + 6 x 4096 x 14336) = 13,958,643,712 and the head 2 x 4096 x 128256.
  const double tokens = 8.0 * m.seq_len;
  const double linear = 13958643712.0 + 2.0 * 4096 * 128256;
  EXPECT_NEAR(lora.model_flops, full.model_flops - tokens * linear + 6 * tokens * adapters,
              1e-9 * full.model_flops);
}

}  // namespace
}  // namespace shardcost
