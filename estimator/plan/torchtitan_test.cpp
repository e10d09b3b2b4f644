// torchtitan's float8 (torchao's Float8Linear) and torch.compile, each rule with its hand
// calculation (docs/estimator.md, "torchtitan's float8 and torch.compile").
#include <gtest/gtest.h>

#include <string>

#include "plan/estimate_internal.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "test_models.h"
#include "workload/transformer.h"

namespace shardcost {
namespace {

using test_models::input_error_of;
using test_models::memory_part;
using test_models::part;

const Op& op_named(const Graph& g, const std::string& name) {
  for (const Block& b : g.blocks)
    for (const Op& op : b.ops)
      if (name == op.name) return op;
  throw std::runtime_error("no op " + name);
}

// The first op of that name in a transformer layer (not the embedding's or the head's).
const Op& layer_op(const Graph& g, const std::string& name) {
  for (const Block& b : g.blocks)
    if (b.pin == Block::Pin::body)
      for (const Op& op : b.ops)
        if (name == op.name) return op;
  throw std::runtime_error("no layer op " + name);
}

// Llama 3 8B (h 4096, f 14336, 32 query and 8 key-value heads of 128) at one sequence of 8192
// tokens, under a torchtitan stack given as text.
struct Llama8b {
  Model m = load_model("llama3-8b");
  double T = 8192, h = 4096, f = 14336;
  Strategy resolved(const std::string& software, const std::string& strategy, int gpus = 8) {
    return with_precision(parse_strategy(strategy, gpus), parse_software(software),
                          load_cluster("dgx-h100", gpus));
  }
  Graph graph(const Strategy& s) {
    Graph g;
    transformer_workload(m)->graph(s, AttentionKernel::flash, g);
    return g;
  }
};

// Tensorwise, compiled: per fc2 (input T x f, output T x h, weight f x h) and micro-batch,
// forward the input's amax and cast (read 2, read 2 and write 1: 5 B) and the weight's
// (5 B); backward the output gradient's cast written in both layouts (6 B), the float8 input
// the compiled graph saved copied transposed (read 1, write 1) and the weight cast transposed
// from its 16-bit copy with the forward's amax (read 2, write 1). Under FSDP2's float8 all-gather
// the gathered weight is already float8: nothing forward, its transposed copy (2 B) backward.
TEST(Torchtitan, TensorwiseFloat8CastsEveryOperandEachMicroBatch) {
  Llama8b l;
  const std::string s = "tp=1,dp=8,mbs=1,gbs=8,zero=3,recompute=none,precision=fp8";
  const Strategy compiled = l.resolved("torchtitan:compile=true", s);
  ASSERT_TRUE(compiled.torchao.active);
  EXPECT_TRUE(compiled.torchao.compiled);
  EXPECT_FALSE(compiled.torchao.weight_gather);
  const double W = l.f * l.h;
  const Graph compiled_graph = l.graph(compiled);
  const Op& fc2 = op_named(compiled_graph, "mlp_fc2_fp8_casts");
  EXPECT_DOUBLE_EQ(fc2.bytes, 5 * l.T * l.f + 5 * W);
  EXPECT_DOUBLE_EQ(fc2.backward_bytes, 2 * l.T * l.f + 6 * l.T * l.h + 3 * W);

  const Strategy gathered = l.resolved("torchtitan:compile=true,float8_all_gather=true", s);
  ASSERT_TRUE(gathered.torchao.weight_gather);
  const Graph gathered_graph = l.graph(gathered);
  const Op& g = op_named(gathered_graph, "mlp_fc2_fp8_casts");
  EXPECT_DOUBLE_EQ(g.bytes, 5 * l.T * l.f);
  EXPECT_DOUBLE_EQ(g.backward_bytes, 2 * l.T * l.f + 6 * l.T * l.h + 2 * W);

  // Eager, each cast is ATen op by op (abs 4, max 2, to fp32 6, scale 8, clamp 8, to float8
  // 5: 33 B), the output gradient cast once for each GEMM, each transpose a copy (2 B), and the
  // 16-bit input its autograd function saved cast again backward.
  const Strategy eager = l.resolved("torchtitan", s);
  EXPECT_FALSE(eager.torchao.compiled);
  const Graph eager_graph = l.graph(eager);
  const Op& e = op_named(eager_graph, "mlp_fc2_fp8_casts");
  EXPECT_DOUBLE_EQ(e.bytes, 33 * l.T * l.f + 33 * W);
  EXPECT_DOUBLE_EQ(e.backward_bytes, 35 * l.T * l.f + 68 * l.T * l.h + 35 * W);
  // torchtitan's wq, wk and wv are linears of their own: eager, each casts the shared input
  // (compiled, Inductor merges the three casts into one).
  const double qkv = (32 + 2 * 8) * 128.0, Wq = l.h * qkv;
  const Op& q = op_named(eager_graph, "qkv_fp8_casts");
  EXPECT_DOUBLE_EQ(q.bytes, 3 * 33 * l.T * l.h + 33 * Wq);
  EXPECT_DOUBLE_EQ(q.backward_bytes, 3 * 35 * l.T * l.h + 68 * l.T * qkv + 35 * Wq);
  EXPECT_DOUBLE_EQ(op_named(compiled_graph, "qkv_fp8_casts").bytes, 5 * l.T * l.h + 5 * Wq);
}

// Rowwise, compiled: a cast along the contiguous dimension is one kernel (read 2, write 1: 3
// B), across it an amax pass first (5 B). fc1 (input T x h, output T x 2f, weight h x 2f):
// forward the input per token and the weight per output feature (3 B each); backward the
// output gradient per token (3) and per feature (5), the weight per input feature (5), the
// input per feature from its 16-bit copy (5). No amax all-reduce, and the sequence-parallel
// gather moves 16 bits (tensorwise: float8, after an amax all-reduce).
TEST(Torchtitan, RowwiseFloat8CastsAlongBothAxesAndGathersIn16Bits) {
  Llama8b l;
  const std::string s = "tp=2,dp=4,mbs=1,gbs=8,sp=true,zero=3,recompute=none,precision=fp8";
  const Strategy row = l.resolved("torchtitan:compile=true,float8_recipe=rowwise", s);
  ASSERT_EQ(row.torchao.recipe, Float8Recipe::rowwise);
  const Graph g = l.graph(row);
  const double out = 2 * l.f / 2, W = l.h * out;
  const Op& fc1 = op_named(g, "mlp_fc1_fp8_casts");
  EXPECT_DOUBLE_EQ(fc1.bytes, 3 * l.T * l.h + 3 * W);
  EXPECT_DOUBLE_EQ(fc1.backward_bytes, 5 * l.T * l.h + 8 * l.T * out + 5 * W);
  EXPECT_DOUBLE_EQ(op_named(g, "tp_all_gather").bytes, 2 * l.T * l.h);
  EXPECT_FALSE(numerics(row).amax_reduction);

  const Strategy tensor = l.resolved("torchtitan:compile=true", s);
  const Graph t = l.graph(tensor);
  EXPECT_DOUBLE_EQ(op_named(t, "tp_all_gather").bytes, 1 * l.T * l.h);
  EXPECT_DOUBLE_EQ(op_named(t, "tp_input_amax_all_reduce").bytes, 4);
  // The tensorwise input is cast on the rank's sequence shard, before the gather, and the
  // output gradient before its all-gather backward (Float8RowwiseParallel), in float8.
  EXPECT_DOUBLE_EQ(op_named(t, "mlp_fc1_fp8_casts").bytes, 5 * l.T * l.h / 2 + 5 * W);
  EXPECT_DOUBLE_EQ(layer_op(t, "tp_reduce_scatter").backward_bytes, 1 * l.T * l.h);
  EXPECT_DOUBLE_EQ(layer_op(g, "tp_reduce_scatter").backward_bytes, 0);  // 16 bits, as forward

  // Eager under torchtitan's float8 TP the input arrives cast once and the gradient is cast
  // once before the linear's backward: the linear saves float8 and transposes it (2 B), the
  // gradient's one cast and transpose 35 B; the 16-bit weight cast as without TP.
  const Strategy eager = l.resolved("torchtitan", s);
  EXPECT_DOUBLE_EQ(numerics(eager).kept_input_bytes(), 1);
  const Graph eager_graph = l.graph(eager);
  const Op& e = op_named(eager_graph, "mlp_fc1_fp8_casts");
  EXPECT_DOUBLE_EQ(e.bytes, 33 * l.T * l.h / 2 + 33 * W);
  EXPECT_DOUBLE_EQ(e.backward_bytes, 2 * l.T * l.h + 35 * l.T * out + 35 * W);
}

// What a layer keeps for its weight gradients: the float8 input under tensorwise compiled (the
// partitioner saves the cast), the 16-bit input in eager and under rowwise. Without
// recomputation four linear inputs per layer (the two norms' outputs, the projection's input,
// fc2's input: 4096 + 4096 + 4096 + 14336 elements a token) differ by a byte each.
TEST(Torchtitan, Float8KeepsTheCastInputOnlyWhereTheCompiledGraphSavesIt) {
  Llama8b l;
  const std::string s = "tp=1,dp=8,mbs=1,gbs=8,zero=3,recompute=none,precision=fp8";
  const Strategy compiled = l.resolved("torchtitan:compile=true", s);
  const Strategy eager = l.resolved("torchtitan", s);
  const Strategy row = l.resolved("torchtitan:compile=true,float8_recipe=rowwise", s);
  EXPECT_DOUBLE_EQ(numerics(compiled).kept_input_bytes(), 1);
  EXPECT_DOUBLE_EQ(numerics(eager).kept_input_bytes(), 2);
  EXPECT_DOUBLE_EQ(numerics(row).kept_input_bytes(), 2);
  auto kept = [&](const Strategy& st) {
    return layer_activation_bytes(l.m, st, AttentionKernel::flash, Recompute::none);
  };
  EXPECT_DOUBLE_EQ(kept(eager) - kept(compiled), l.T * (3 * l.h + l.f));
  EXPECT_DOUBLE_EQ(kept(row), kept(eager));
}

// A step: no float8 weight copies held and no once-a-step cast (torchao casts as it goes), the
// LM head in bf16; FSDP2's float8 all-gather moves the float8 linears' weights in one byte.
TEST(Torchtitan, Float8HoldsNoWeightCopiesAndGathersFloat8WeightsInOneByte) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 64);
  const Strategy s = parse_strategy("tp=1,mbs=1,gbs=64,zero=3,recompute=full,precision=fp8", 64);
  const Strategy bf16 =
      parse_strategy("tp=1,mbs=1,gbs=64,zero=3,recompute=full,precision=bf16", 64);
  EstimateOptions plain, gather;
  plain.software = parse_software("torchtitan:compile=true");
  gather.software = parse_software("torchtitan:compile=true,float8_all_gather=true");
  const Estimate fp8 = estimate(m, c, s, plain), half = estimate(m, c, bf16, plain);
  EXPECT_DOUBLE_EQ(memory_part(fp8, "weights"), memory_part(half, "weights"));
  EXPECT_LT(fp8.step_time_s, half.step_time_s);
  // The float8 linears hold 6.98e9 of Llama 3 8B's 8.03e9 weights: gathered in one byte, the
  // FSDP2 all-gathers move 1 - 0.5 x 6.98 / 8.03 = 0.565 of the bytes.
  const Estimate g = estimate(m, c, s, gather);
  EXPECT_LT(part(g, "dp_comm"), part(fp8, "dp_comm"));
  // The gathered units at their peak (the last layer and the untied LM head after it: 218.1M
  // weights, all but the norms' 8,192 in float8 linears, and 525.3M in bf16) hold the float8
  // linears' weights in one byte.
  const double linears = 218103808 - 8192;
  EXPECT_NEAR(memory_part(fp8, "weights") - memory_part(g, "weights"), linears, 1e-3 * linears);
  // Without FSDP2 (DDP) nothing is gathered, so the key changes nothing.
  const Strategy ddp = parse_strategy("tp=1,mbs=1,gbs=64,zero=0,recompute=full,precision=fp8", 64);
  EXPECT_DOUBLE_EQ(estimate(m, c, ddp, gather).step_time_s, estimate(m, c, ddp, plain).step_time_s);
}

// torchtitan's per-op policy saves aten.mm's outputs alternately, but not torch._scaled_mm's:
// under float8 every linear's GEMM runs again in the recomputation (bf16: wk's third of the
// fused QKV, w3's half of the fused w1/w3, wo; w2 not), and its casts with it but for the
// tensorwise amax the policy saves (torch.max: 2 of a compiled cast's 5 B; rowwise's
// aten.amax is not saved). The layer keeps no linear's output: its input, attention's output
// and statistics.
TEST(Torchtitan, PerOpPolicyRecomputesEveryFloat8Matmul) {
  Llama8b l;
  const std::string s = "tp=1,dp=8,mbs=1,gbs=8,zero=3,recompute=selective,precision=";
  const Graph fp8 = l.graph(l.resolved("torchtitan:compile=true", s + "fp8"));
  const Graph bf16 = l.graph(l.resolved("torchtitan:compile=true", s + "bf16"));
  for (const char* name : {"qkv", "attention_proj", "mlp_fc1", "mlp_fc2"}) {
    EXPECT_TRUE(layer_op(fp8, name).selective) << name;
    EXPECT_DOUBLE_EQ(layer_op(fp8, name).selective_share, 1) << name;
  }
  EXPECT_DOUBLE_EQ(layer_op(bf16, "qkv").selective_share, 1024.0 / 6144);
  EXPECT_DOUBLE_EQ(layer_op(bf16, "mlp_fc1").selective_share, 0.5);
  EXPECT_FALSE(layer_op(bf16, "mlp_fc2").selective);
  EXPECT_DOUBLE_EQ(layer_op(fp8, "mlp_fc2_fp8_casts").selective_share, 3.0 / 5);
  const Graph row = l.graph(l.resolved("torchtitan:compile=true,float8_recipe=rowwise", s + "fp8"));
  EXPECT_DOUBLE_EQ(layer_op(row, "mlp_fc2_fp8_casts").selective_share, 1);

  auto kept = [&](const std::string& software, const char* precision) {
    return layer_activation_bytes(l.m, l.resolved(software, s + precision), AttentionKernel::flash,
                                  Recompute::selective);
  };
  const double T = l.T, h = l.h, q = 4096, kv = 1024;
  EXPECT_DOUBLE_EQ(kept("torchtitan:compile=true", "fp8"), 2 * T * h + 2 * T * q + 4 * 32 * T);
  EXPECT_DOUBLE_EQ(kept("torchtitan:compile=true", "bf16"),
                   2 * T * h + 2 * T * (q + kv) + 2 * T * q + 4 * 32 * T + 2 * T * l.f +
                       2 * T * h);  // torchtitan from 2026-03-23 saves _scaled_mm's outputs
                                    // (sac_saves_scaled_mm):
  // every float8 linear's output saved, outside the alternation (none recomputed), the casts
  // still recomputed (their float8 copies are not saved). The layer keeps, beyond bf16's, wk's
  // output (kv), wo's (h) and w3's (f).
  const std::string saves = "torchtitan:compile=true,sac_saves_scaled_mm=true";
  const Graph later = l.graph(l.resolved(saves, s + "fp8"));
  for (const char* name : {"qkv", "attention_proj", "mlp_fc1", "mlp_fc2"})
    EXPECT_FALSE(layer_op(later, name).selective) << name;
  EXPECT_DOUBLE_EQ(layer_op(later, "mlp_fc2_fp8_casts").selective_share, 3.0 / 5);
  EXPECT_DOUBLE_EQ(kept(saves, "fp8"),
                   kept("torchtitan:compile=true", "bf16") + 2 * T * (kv + h + l.f));
}

// torch.compile (compile=true) against the fused passes of eager_elementwise=false: the same
// but for repeat_kv, whose copy Inductor still writes for SDPA (read K and V, write them at
// the queries' 32 heads: 4 x (8 + 32) x 128 B a token each way), and the final norm, outside
// the compiled layers, eager (36 B an element more); the loss compiled separately
// (cross_entropy=unfused here). One sequence of 8192 tokens a GPU on 64 A100s.
TEST(Torchtitan, CompileFusesTheLayersPassesButKeepsTheRepeatedKeysAndValues) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-a100", 64);
  EstimateOptions compiled, fused;
  compiled.software = parse_software("torchtitan:compile=true,cross_entropy=unfused");
  fused.software = parse_software("torchtitan:eager_elementwise=false");
  const Strategy s = parse_strategy("tp=1,mbs=1,gbs=64,zero=3,recompute=none,precision=bf16", 64);
  auto forward = [&](const EstimateOptions& o) {
    return part(estimate(m, c, s, o), "compute_forward");
  };
  const double t = 8192, h = 4096, bw = 2039e9 * 0.834 * 0.665;
  const double expected = 32 * (4 * t * 5120 / bw + 2e-6) + 36 * t * h / bw;
  EXPECT_NEAR(forward(compiled) - forward(fused), expected, 1e-6);
}

// The loss under torch.compile (cross_entropy=compiled, which compile=true implies): forward
// two reductions over the 16-bit logits (read 2 B twice), backward one kernel reading them and
// writing the 16-bit gradient (4 B): 8 B a logit against the unfused 52; it holds the logits
// and their gradient in 16 bits (4 B a logit, against 8 in fp32).
TEST(Torchtitan, CompiledLossReadsTheLogitsInSixteenBits) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-a100", 64);
  EstimateOptions compiled, unfused;
  compiled.software = parse_software("torchtitan:compile=true");
  unfused.software = parse_software("torchtitan:compile=true,cross_entropy=unfused");
  ASSERT_EQ(compiled.software.cross_entropy, CrossEntropy::compiled);
  const Strategy s = parse_strategy("tp=1,mbs=1,gbs=64,zero=3,recompute=none,precision=bf16", 64);
  const Estimate a = estimate(m, c, s, compiled), b = estimate(m, c, s, unfused);
  const double logits = 8192.0 * 128256, bw = 2039e9 * 0.834 * 0.665;
  EXPECT_NEAR(part(b, "compute_forward") - part(a, "compute_forward"), (38 - 4) * logits / bw,
              1e-6);
  EXPECT_NEAR(part(b, "compute_backward") - part(a, "compute_backward"), (14 - 4) * logits / bw,
              1e-6);
}

TEST(Torchtitan, StackKeysRoundTripAndOtherStacksRefuseThem) {
  for (const char* text :
       {"torchtitan:compile=true", "torchtitan:compile=true,cross_entropy=unfused",
        "torchtitan:compile=true,float8_all_gather=true", "torchtitan:float8_recipe=rowwise",
        "torchtitan:compile=true,sac_saves_scaled_mm=true"})
    EXPECT_EQ(software_text(parse_software(text)), text);
  EXPECT_EQ(parse_software("torchtitan").cross_entropy, CrossEntropy::unfused);
  EXPECT_NE(input_error_of([] {
              parse_software("megatron-core:compile=true");
            }).find("runs fused kernels already; drop compile"),
            std::string::npos);
  EXPECT_NE(input_error_of([] {
              parse_software("nemo:float8_recipe=rowwise");
            }).find("trains FP8 through Transformer Engine"),
            std::string::npos);
  EXPECT_NE(input_error_of([] {
              parse_software("torchtitan:fp8_attention=true");
            }).find("are Transformer Engine's"),
            std::string::npos);
  EXPECT_NE(input_error_of([] {
              parse_software("torchtitan:float8_all_gather=true,float8_recipe=rowwise");
            }).find("only under the tensorwise recipe"),
            std::string::npos);
  EXPECT_NE(input_error_of([] { parse_float8_recipe("blockwise"); }).find("use tensorwise"),
            std::string::npos);
  const Software tt = software_preset("torchtitan");
  EXPECT_NE(unsupported(tt, parse_strategy("dp=8,gbs=8,precision=nvfp4", 8))
                .value_or("")
                .find("priced for precision=fp8 (Float8Linear) and mxfp8 (MXLinear)"),
            std::string::npos);
  EXPECT_NE(unsupported(tt, parse_strategy("dp=8,gbs=8,precision=fp8,lora=16", 8))
                .value_or("")
                .find("LoRA over torchao's fp8 linears"),
            std::string::npos);
  EXPECT_FALSE(unsupported(tt, parse_strategy("dp=8,gbs=8,precision=fp8", 8)));
}

}  // namespace
}  // namespace shardcost
