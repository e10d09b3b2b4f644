// precision=fp32|tf32|fp16|bf16|fp8 (issue 12, item 12), each rule with its hand calculation.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <string_view>

#include "costs/pricing.h"
#include "plan/estimate_internal.h"
#include "plan/memory.h"
#include "shardcost/costs.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "test_models.h"
#include "workload/transformer.h"

namespace shardcost {
namespace {

const Op& op_named(const Graph& g, const std::string& name) {
  for (const Block& b : g.blocks)
    for (const Op& op : b.ops)
      if (name == op.name) return op;
  throw std::runtime_error("no op " + name);
}

bool has_op(const Graph& g, const std::string& name) {
  for (const Block& b : g.blocks)
    for (const Op& op : b.ops)
      if (name == op.name) return true;
  return false;
}

using test_models::part;

TEST(Precision, TheDefaultComesFromThePresetAndFallsBackToFp16WithoutBf16) {
  const Model m = load_model("llama3-8b");
  const Cluster a100 = load_cluster("dgx-a100", 8);
  EstimateOptions core, lm2021;
  lm2021.software = software_preset("megatron-lm-2021");
  const Strategy s = parse_strategy("tp=8,mbs=1,gbs=8", 8);
  EXPECT_EQ(estimate(m, a100, s, core).strategy.precision, DType::bf16);
  EXPECT_EQ(estimate(m, a100, s, lm2021).strategy.precision, DType::fp16);

  // A V100 (no bf16 tensor cores) loads, trains in fp16 by default, and is priced at its fp16
  // peak (125 TFLOP/s), never at a zero bf16 peak.
  Cluster v100 = a100;
  v100.groups.front().device = find_device("v100-sxm2-32gb");
  const Estimate e = estimate(m, v100, s, core);
  EXPECT_EQ(e.strategy.precision, DType::fp16);
  EXPECT_TRUE(std::isfinite(e.step_time_s));
  EXPECT_GT(e.step_time_s, 0);
  // The same step on A100 (312 TFLOP/s) is faster, but by less than the peaks' 2.5x
  // (memory-bound passes run at the two parts' bandwidths, 900 against 2039 GB/s).
  const double a = estimate(m, a100, s, core).step_time_s;
  EXPECT_GT(e.step_time_s / a, 1.5);
  EXPECT_LT(e.step_time_s / a, 2.5 * 1.05);
}

TEST(Precision, APrecisionTheDeviceOrStackLacksIsOneClearError) {
  const Model m = load_model("llama3-8b");
  Cluster v100 = load_cluster("dgx-a100", 8);
  v100.groups.front().device = find_device("v100-sxm2-32gb");
  const std::string why = test_models::input_error_of(
      [&] { (void)estimate(m, v100, parse_strategy("tp=8,gbs=8,precision=bf16", 8)); });
  EXPECT_NE(why.find("v100-sxm2-32gb has no bf16 peak"), std::string::npos) << why;
  EXPECT_NE(why.find("use precision=fp32|fp16"), std::string::npos) << why;
  RankOptions ro;
  ro.global_batch = 8;
  ro.fixed = "precision=bf16";
  EXPECT_THROW(rank(m, v100, ro), InputError);

  const Cluster a100 = load_cluster("dgx-a100", 8);
  EXPECT_NE(test_models::input_error_of([&] {
              (void)estimate(m, a100, parse_strategy("tp=8,gbs=8,precision=fp8", 8));
            }).find("a100-sxm4-80gb has no fp8 peak"),
            std::string::npos);
  // Megatron-LM of 2022 had no Transformer Engine.
  const Cluster h100 = load_cluster("dgx-h100", 8);
  EstimateOptions lm2022;
  lm2022.software = software_preset("megatron-lm-2022");
  EXPECT_NE(test_models::input_error_of([&] {
              (void)estimate(m, h100, parse_strategy("tp=8,gbs=8,precision=fp8", 8), lm2022);
            }).find("no FP8 training"),
            std::string::npos);
  EXPECT_THROW(parse_strategy("precision=fp4", 8), InputError);
}

TEST(Precision, Fp8GemmsRunAtTheFp8PeakWithTheirOwnEfficiency) {
  // A compute-bound 8192^3 GEMM on H100: bf16 at 989.5 TFLOP/s x 0.716, fp8 at 1979 x 0.716 x
  // 0.806 (kFp8RelativeEfficiency). Same tile and K factors: the ratio is 1 / (2 x 0.806).
  const Device d = find_device("h100-sxm5-80gb");
  const Fabric f;
  const Pricer pr(d, f, f, 8, nullptr);
  const GemmShape g{8192, 8192, 8192, 1};
  const double gap = GemmModel::kKernelGap_s;
  const double bf16 = pr.gemm(g, DType::bf16).seconds - gap;
  const double fp8 = pr.gemm(g, DType::fp8).seconds - gap;
  EXPECT_NEAR(fp8 / bf16, 1 / (2 * GemmModel::kFp8RelativeEfficiency), 1e-9);
  EXPECT_NEAR(gemm_efficiency(d, g, DType::fp8) / gemm_efficiency(d, g),
              GemmModel::kFp8RelativeEfficiency, 1e-12);
  // A part with its own measured FP8 efficiency uses it.
  Device measured = d;
  measured.gemm_fp8_efficiency = 0.5;
  EXPECT_NEAR(gemm_efficiency(measured, g, DType::fp8) / gemm_efficiency(d, g), 0.5 / 0.716, 1e-9);
}

TEST(Precision, Fp8LinearsWithBf16AttentionHeadAndTheirCasts) {
  const Model m = load_model("llama3-8b");  // h 4096, 32 heads, 8 kv heads, ffn 14336, swiglu
  const auto w = transformer_workload(m);
  Strategy s = parse_strategy("tp=2,mbs=1,gbs=8,sp=true,precision=fp8", 8);
  Graph g;
  w->graph(s, AttentionKernel::flash, g);
  EXPECT_EQ(op_named(g, "qkv").dtype, DType::fp8);
  EXPECT_EQ(op_named(g, "mlp_fc2").dtype, DType::fp8);
  EXPECT_EQ(op_named(g, "flash_attention").dtype, DType::bf16);
  EXPECT_EQ(op_named(g, "lm_head").dtype, DType::bf16);
  // T = 8192 tokens, h = 4096, qkv out = (16 + 2 x 4) x 128 = 3072 per TP rank. The norm wrote
  // qkv's input in FP8, so forward casts nothing; backward transposes that input (2 B) and
  // casts the output gradient with its transpose (4 B).
  const double T = 8192, h = 4096;
  const Op& qkv = op_named(g, "qkv_fp8_casts");
  EXPECT_DOUBLE_EQ(qkv.bytes, 0);
  EXPECT_DOUBLE_EQ(qkv.backward_bytes, 4 * T * 3072 + 2 * T * h);
  // fc2's input (ffn/tp = 7168) comes from the activation: cast with its transpose (4 B).
  const Op& fc2 = op_named(g, "mlp_fc2_fp8_casts");
  EXPECT_DOUBLE_EQ(fc2.bytes, 4 * T * 7168);
  EXPECT_DOUBLE_EQ(fc2.backward_bytes, 4 * T * h);
  // The norm feeding qkv writes 1 B instead of 2: 3 B per element of its local shard.
  EXPECT_DOUBLE_EQ(op_named(g, "input_norm").bytes, 3 * T * h / 2);
  // Its sequence-parallel all-gather (and the backward's re-gather of the saved input) moves
  // those FP8 bytes; the input gradient's reduce-scatter stays in 16 bits (issue 32, item 4).
  const Op& gather = op_named(g, "tp_all_gather");
  EXPECT_DOUBLE_EQ(gather.bytes, 1 * T * h);
  EXPECT_DOUBLE_EQ(gather.backward_bytes, 2 * T * h);
  // The head's input stays in 16 bits (the head is not an FP8 linear).
  int bf16_gathers = 0;
  for (const Block& b : g.blocks)
    for (const Op& op : b.ops)
      if (std::string_view(op.name) == "tp_all_gather" && op.bytes == 2 * T * h) ++bf16_gathers;
  EXPECT_EQ(bf16_gathers, 1);

  Graph plain;
  s.precision = DType::bf16;
  w->graph(s, AttentionKernel::flash, plain);
  EXPECT_FALSE(has_op(plain, "qkv_fp8_casts"));
  EXPECT_DOUBLE_EQ(op_named(plain, "tp_all_gather").bytes, 2 * T * h);
  EXPECT_DOUBLE_EQ(op_named(plain, "tp_all_gather").backward_bytes, 0);
  EXPECT_EQ(op_named(plain, "qkv").dtype, DType::bf16);
  EXPECT_EQ(plain.blocks[1].fp8_params, 0);
  // Layer linears: (qkv 4096 x 6144 + proj 4096 x 4096 + MLP 3 x 4096 x 14336) / tp 2.
  EXPECT_DOUBLE_EQ(g.blocks[1].fp8_params,
                   (4096.0 * 6144 + 4096.0 * 4096 + 3 * 4096.0 * 14336) / 2);
}

TEST(Precision, Fp8KeepsLinearInputsInOneByteAndWeightCopiesInTwo) {
  const Model m = load_model("llama3-8b");
  Strategy bf16 = parse_strategy("tp=2,mbs=1,gbs=8,sp=true,precision=bf16", 8);
  Strategy fp8 = bf16;
  fp8.precision = DType::fp8;
  // Four linear inputs drop from 2 B to 1 B: qkv's and fc1's (T h / sp each), the projection's
  // (T q = T x 2048) and fc2's (T f = T x 7168).
  const double T = 8192, h = 4096;
  const double saved = T * h / 2 + T * 2048 + T * h / 2 + T * 7168;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, bf16, AttentionKernel::flash, Recompute::none) -
                       layer_activation_bytes(m, fp8, AttentionKernel::flash, Recompute::none),
                   saved);
  const ParameterBytes pb = parameter_bytes(fp8, software_preset("megatron-core"));
  EXPECT_EQ(pb.weight, 2);
  EXPECT_EQ(pb.fp8_copy, 2);
}

TEST(Precision, Fp32TrainsWithFourByteActivationsAndNoMasterCopy) {
  const Model m = load_model("llama3-8b");  // no dropout: every kept byte is an activation
  Strategy bf16 = parse_strategy("tp=1,mbs=1,gbs=8,precision=bf16", 8);
  Strategy fp32 = bf16;
  fp32.precision = DType::fp32;
  // Twice the bytes, but for the attention's softmax statistics, fp32 already (4 B x 32 heads x
  // 8192 tokens), which full recomputation does not keep.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, fp32, AttentionKernel::flash, Recompute::none),
                   2 * layer_activation_bytes(m, bf16, AttentionKernel::flash, Recompute::none) -
                       4.0 * 32 * 8192);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, fp32, AttentionKernel::flash, Recompute::full),
                   2 * layer_activation_bytes(m, bf16, AttentionKernel::flash, Recompute::full));
  const ParameterBytes pb = parameter_bytes(fp32, software_preset("megatron-core"));
  EXPECT_EQ(pb.weight + pb.gradient + pb.optimizer, 16);  // 4 + 4 + Adam's 8
  const auto w = transformer_workload(m);
  Graph g;
  w->graph(fp32, AttentionKernel::flash, g);
  EXPECT_EQ(op_named(g, "qkv").dtype, DType::fp32);
  EXPECT_EQ(op_named(g, "flash_attention").dtype, DType::fp32);
}

TEST(Precision, Fp8IsFasterThanBf16ButNotTwiceAndFp16AddsTheLossScalePass) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 8);
  const Estimate bf16 = estimate(m, c, parse_strategy("tp=1,mbs=1,gbs=64,precision=bf16", 8));
  const Estimate fp8 = estimate(m, c, parse_strategy("tp=1,mbs=1,gbs=64,precision=fp8", 8));
  EXPECT_LT(fp8.step_time_s, 0.85 * bf16.step_time_s);
  EXPECT_GT(fp8.step_time_s, 0.5 * bf16.step_time_s);
  EXPECT_GT(fp8.memory_per_gpu_bytes, 0);
  // fp16 on megatron-core with fp32 gradients: the same GEMMs (same peak), plus the dynamic
  // loss scale's unscale-and-check pass over the local gradients: 8 B per parameter in the
  // optimizer (the DDP's NaN check of the buffer, which fp16 runs skip, left out of both).
  EstimateOptions fp32_grads;
  fp32_grads.software = parse_software("megatron-core:fp16_grads=false,grad_nan_check=false");
  EstimateOptions checked;
  checked.software = parse_software("megatron-core:grad_nan_check=false");
  const Estimate bf16_unchecked =
      estimate(m, c, parse_strategy("tp=1,mbs=1,gbs=64,precision=bf16", 8), checked);
  const Strategy half = parse_strategy("tp=1,mbs=1,gbs=64,precision=fp16", 8);
  const Estimate wide = estimate(m, c, half, fp32_grads);
  const Device& d = c.groups.front().device;
  const double bandwidth =
      d.memory_bandwidth_Bps * d.memory_efficiency * GemmModel::kFrameworkBandwidthFraction;
  const double P = wide.parameters;
  EXPECT_NEAR(part(wide, "optimizer") - part(bf16_unchecked, "optimizer"), 8 * P / bandwidth, 1e-6);
  // Megatron's own fp16 keeps fp16 gradients: their cast to fp32 for the update (6 B more), a
  // zeroing of 2 bytes a parameter instead of 4, and the DDP's 1/dp scaling of the buffer
  // before the reduction reading and writing 2 bytes, not 4 (4 B a parameter less).
  const Estimate fp16 = estimate(m, c, half);
  const NodeGroup& g = c.groups.front();
  const Pricer pr{g.device, g.intra_node, c.inter_node, g.gpus_per_node, nullptr};
  EXPECT_NEAR(part(fp16, "optimizer") - part(wide, "optimizer"),
              (6 - 4) * P / bandwidth + pr.memory("memset", 2 * P).seconds -
                  pr.memory("memset", 4 * P).seconds,
              1e-6);
  // AdamW's moments in bf16 (DeepSeek-V3's): the update reads and writes 2 bytes of each
  // moment, not 4: 8 B a parameter less.
  EstimateOptions lean;
  lean.software = parse_software("megatron-core:bf16_optimizer_moments=true");
  const Estimate slim = estimate(m, c, parse_strategy("tp=1,mbs=1,gbs=64,precision=bf16", 8), lean);
  EXPECT_NEAR(part(bf16, "optimizer") - part(slim, "optimizer"), 8 * P / bandwidth, 1e-6);
}

// A store that measured FP8 GEMMs (bench gemm --dtype fp8): its rows price the FP8 linears,
// and only those; bf16 work goes to the catalog.
class Fp8GemmsMeasured final : public CostSource {
 public:
  std::optional<Priced> gemm(const Device&, DType t, const GemmShape&) const override {
    if (t != DType::fp8) return std::nullopt;
    ++asked;
    return Priced{1e-3, CostOrigin::measured};
  }
  std::optional<Priced> collective(const Device&, CollectiveOp, double, GroupShape) const override {
    return std::nullopt;
  }
  mutable int asked = 0;
};

TEST(Precision, MeasuredFp8GemmsArePricedFromTheStore) {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 8);
  Fp8GemmsMeasured store;
  EstimateOptions opt;
  opt.costs = &store;
  const Estimate e = estimate(m, c, parse_strategy("tp=8,mbs=1,gbs=8,precision=fp8", 8), opt);
  // Four linears a layer, each forward, dgrad and wgrad: 12 GEMMs of 1 ms, 32 layers, forward
  // 4 ms and backward 8 ms a layer.
  EXPECT_GT(store.asked, 0);
  const double layers = 32;
  EXPECT_GT(part(e, "compute_forward"), layers * 4e-3);
  EXPECT_GT(part(e, "compute_backward"), layers * 8e-3);
  bool measured = false;
  for (const auto& p : e.time)
    for (const auto& [origin, seconds] : p.sources)
      if (origin == CostOrigin::measured && seconds > 0) measured = true;
  EXPECT_TRUE(measured);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// Blackwell's block-scaled types (issue 20): MXFP8 at the FP8 rate with an E8M0 scale per 32
// elements, NVFP4 at twice it with an E4M3 scale per 16 four-bit values.
TEST(Precision, BlockScaledTypesCarryTheirScalesInEveryQuantizedByte) {
  EXPECT_DOUBLE_EQ(dtype_bytes(DType::mxfp8), 1 + 1.0 / 32);
  EXPECT_DOUBLE_EQ(dtype_bytes(DType::nvfp4), 0.5 + 1.0 / 16);
  // The store's rows of these types price them (measured tables name them so).
  EXPECT_EQ(parse_store_dtype("mxfp8"), DType::mxfp8);
  EXPECT_EQ(parse_store_dtype("nvfp4"), DType::nvfp4);
  EXPECT_EQ(parse_dtype("nvfp4"), DType::nvfp4);
  const Model m = load_model("llama3-8b");
  Strategy bf16 = parse_strategy("tp=2,mbs=1,gbs=8,sp=true,precision=bf16", 8);
  // The four linear inputs kept for backward drop from 2 B to q B an element.
  const double T = 8192, h = 4096;
  const double inputs = T * h / 2 + T * 2048 + T * h / 2 + T * 7168;
  for (DType t : {DType::mxfp8, DType::nvfp4}) {
    Strategy s = bf16;
    s.precision = t;
    EXPECT_NEAR(layer_activation_bytes(m, bf16, AttentionKernel::flash, Recompute::none) -
                    layer_activation_bytes(m, s, AttentionKernel::flash, Recompute::none),
                (2 - dtype_bytes(t)) * inputs, 1e-3)
        << to_string(t);
    // The weights' quantized copy and its column-wise twin.
    EXPECT_DOUBLE_EQ(parameter_bytes(s, software_preset("megatron-core")).fp8_copy,
                     2 * dtype_bytes(t));
    // A cast writes both copies: read 2 B (NVFP4: 6, three passes), write 2q B per element.
    Graph g;
    transformer_workload(m)->graph(s, AttentionKernel::flash, g);
    const Op& casts = op_named(g, "attention_proj_fp8_casts");
    const double reads = t == DType::nvfp4 ? 6 : 2;
    EXPECT_DOUBLE_EQ(casts.bytes, (reads + 2 * dtype_bytes(t)) * T * 2048);
    EXPECT_EQ(op_named(g, "qkv").dtype, t);
    EXPECT_EQ(op_named(g, "flash_attention").dtype, DType::bf16);
  }
}

// Transformer Engine's NVFP4BlockScaling recipe (issue 32, item 6): an activation or gradient
// is read three times to be cast (nvte_hadamard_transform_amax: its amax and that of its
// random Hadamard transform; the row-wise cast; the column-wise Hadamard cast), a weight twice
// (amax, one 2D-scaled cast); its norms write bf16 (TE's rmsnorm_fwd runs the norm unfused
// for a quantizer with a post-Hadamard amax), quantized on the rank's shard before the gather.
TEST(Precision, Nvfp4CastsReadEachTensorThreeTimesAndItsNormsWriteBf16) {
  const Model m = load_model("llama3-8b");  // h 4096, qkv out 3072 per rank at tp 2
  const auto w = transformer_workload(m);
  const double T = 8192, h = 4096, q = 0.5 + 1.0 / 16;
  Strategy s = parse_strategy("tp=2,mbs=1,gbs=8,sp=true,precision=nvfp4", 8);
  EXPECT_DOUBLE_EQ(numerics(s).cast_reads, 6);
  EXPECT_DOUBLE_EQ(numerics(s).weight_cast_reads, 4);
  Graph g;
  w->graph(s, AttentionKernel::flash, g);
  // Forward: the norm's shard (T h / 2) read 6 B, written twice at q; backward: the output
  // gradient (T x 3072) alike: 7.125 B an element each.
  const Op& qkv = op_named(g, "qkv_fp8_casts");
  EXPECT_DOUBLE_EQ(qkv.bytes, (6 + 2 * q) * T * h / 2);
  EXPECT_DOUBLE_EQ(qkv.backward_bytes, (6 + 2 * q) * T * 3072);
  EXPECT_DOUBLE_EQ(op_named(g, "input_norm").bytes, 4 * T * h / 2);  // read 2, write 2
  EXPECT_DOUBLE_EQ(op_named(g, "mlp_fc1_fp8_casts").bytes, (6 + 2 * q) * T * h / 2);
  // The gather still moves the quantized input.
  EXPECT_DOUBLE_EQ(op_named(g, "tp_all_gather").bytes, q * T * h);

  // MXFP8 keeps one read and the norm's fused cast (cuDNN's norm, as the recipes launch it).
  s.precision = DType::mxfp8;
  EXPECT_DOUBLE_EQ(numerics(s).cast_reads, 2);
  Graph mx;
  w->graph(s, AttentionKernel::flash, mx);
  const double qm = 1 + 1.0 / 32;
  EXPECT_DOUBLE_EQ(op_named(mx, "qkv_fp8_casts").bytes, 0);
  EXPECT_DOUBLE_EQ(op_named(mx, "input_norm").bytes, (2 + qm) * T * h / 2);
}

// Per-tensor FP8 on Blackwell (issue 32, item 6): its GEMMs take either operand layout
// (Transformer Engine's is_non_tn_fp8_gemm_supported: compute capability 10.x and 11.x), so TE
// keeps one FP8 copy of each tensor and makes no transpose; MXFP8 and NVFP4, scaled along one
// dimension, still write a column-wise copy. Hopper keeps both.
TEST(Precision, Fp8OnBlackwellWritesOneCopyAndNoTranspose) {
  const Model m = load_model("llama3-8b");
  const auto w = transformer_workload(m);
  const double T = 8192, h = 4096;
  const Strategy given = parse_strategy("tp=2,mbs=1,gbs=8,sp=true,precision=fp8", 8);
  const Software sw = software_preset("nemo");
  const Strategy blackwell = with_precision(given, sw, load_cluster("dgx-b200", 8));
  const Strategy hopper = with_precision(given, sw, load_cluster("dgx-h100", 8));
  EXPECT_TRUE(blackwell.fp8_any_layout);
  EXPECT_FALSE(hopper.fp8_any_layout);
  EXPECT_DOUBLE_EQ(numerics(blackwell).copies, 1);
  Graph b, hg;
  w->graph(blackwell, AttentionKernel::flash, b);
  w->graph(hopper, AttentionKernel::flash, hg);
  // qkv's input came from the norm in FP8: nothing to transpose; its output gradient cast
  // reads 2 B and writes 1 (Hopper: 4 B of the two copies and 2 B of the input's transpose).
  EXPECT_DOUBLE_EQ(op_named(b, "qkv_fp8_casts").backward_bytes, 3 * T * 3072);
  EXPECT_DOUBLE_EQ(op_named(hg, "qkv_fp8_casts").backward_bytes, 4 * T * 3072 + 2 * T * h);
  EXPECT_DOUBLE_EQ(op_named(b, "mlp_fc2_fp8_casts").bytes, 3 * T * 7168);
  // The weights' FP8 copy: 1 B a parameter (without FP8 primary weights), 2 B on Hopper.
  Software bf16_weights = sw;
  bf16_weights.fp8_params = false;
  EXPECT_DOUBLE_EQ(parameter_bytes(blackwell, bf16_weights).fp8_copy, 1);
  EXPECT_DOUBLE_EQ(parameter_bytes(hopper, bf16_weights).fp8_copy, 2);
  // MXFP8 on the same part keeps its column-wise copy.
  Strategy mx = given;
  mx.precision = DType::mxfp8;
  EXPECT_FALSE(with_precision(mx, sw, load_cluster("dgx-b200", 8)).fp8_any_layout);
}

// FP8 per-tensor current scaling (issue 32, item 6; Transformer Engine's Float8CurrentScaling,
// Megatron-Bridge's fp8_cs): the amax of the tensor being cast is taken in a pass of its own
// before the cast (TE's quantizers: nvte_compute_amax, then the cast), so every cast reads the
// 16-bit tensor twice; the norm before a linear writes 16 bits and the linear casts it
// (rmsnorm_fwd runs unfused for a current-scaling quantizer); and under sequence parallelism
// the column-parallel input's amax and the row-parallel output gradient's are all-reduced
// over the TP group before their casts (with_amax_reduction): 4 bytes each, twice forward and
// twice backward in a dense layer. Delayed scaling (the default) has none of it.
TEST(Precision, Fp8CurrentScalingReadsEachTensorTwiceAndAllReducesItsAmaxOverTp) {
  const Model m = load_model("llama3-8b");  // h 4096, qkv out 3072 and fc1 out 14336 at tp 2
  const auto w = transformer_workload(m);
  const double T = 8192, h = 4096;
  const Strategy given = parse_strategy("tp=2,mbs=1,gbs=8,sp=true,precision=fp8", 8);
  Software sw = software_preset("nemo");
  const Strategy delayed = with_precision(given, sw, load_cluster("dgx-b200", 8));
  sw.fp8_current_scaling = true;
  const Strategy current = with_precision(given, sw, load_cluster("dgx-b200", 8));
  EXPECT_FALSE(delayed.fp8_current_scaling);
  ASSERT_TRUE(current.fp8_current_scaling);
  const Numerics n = numerics(current);
  EXPECT_DOUBLE_EQ(n.cast_reads, 4);
  EXPECT_DOUBLE_EQ(n.weight_cast_reads, 4);
  EXPECT_FALSE(n.norm_fuses_cast);
  EXPECT_TRUE(n.amax_reduction);
  EXPECT_FALSE(numerics(delayed).amax_reduction);

  Graph c, d;
  w->graph(current, AttentionKernel::flash, c);
  w->graph(delayed, AttentionKernel::flash, d);
  // Blackwell: one copy. qkv's input, the norm's shard (T h / 2), read twice and written
  // once: 5 B an element (delayed: nothing, the norm wrote it in FP8); its output gradient
  // 5 B an element (delayed 3).
  EXPECT_DOUBLE_EQ(op_named(c, "qkv_fp8_casts").bytes, 5 * T * h / 2);
  EXPECT_DOUBLE_EQ(op_named(d, "qkv_fp8_casts").bytes, 0);
  EXPECT_DOUBLE_EQ(op_named(c, "qkv_fp8_casts").backward_bytes, 5 * T * 3072);
  EXPECT_DOUBLE_EQ(op_named(d, "qkv_fp8_casts").backward_bytes, 3 * T * 3072);
  // The norm reads 2 B and writes 2 (delayed: writes 1, FP8).
  EXPECT_DOUBLE_EQ(op_named(c, "input_norm").bytes, 4 * T * h / 2);
  EXPECT_DOUBLE_EQ(op_named(d, "input_norm").bytes, 3 * T * h / 2);
  // The SwiGLU output (T x 7168 per rank) cast for fc2: 5 B against 3.
  EXPECT_DOUBLE_EQ(op_named(c, "mlp_fc2_fp8_casts").bytes, 5 * T * 7168);
  // The gather still moves FP8, after the amax all-reduce.
  EXPECT_DOUBLE_EQ(op_named(c, "tp_all_gather").bytes, T * h);
  int forward = 0, backward = 0;
  for (const Block& b : c.blocks)
    for (const Op& op : b.ops) {
      const std::string name = op.name;
      if (name == "tp_input_amax_all_reduce") {
        ++forward;
        EXPECT_EQ(op.op, CollectiveOp::all_reduce);
        EXPECT_FALSE(op.backward_op.has_value());
        EXPECT_DOUBLE_EQ(op.bytes, 4);
      }
      if (name == "tp_grad_amax_all_reduce") {
        ++backward;
        EXPECT_FALSE(op.op.has_value());
        EXPECT_EQ(op.backward_op, CollectiveOp::all_reduce);
      }
    }
  EXPECT_EQ(forward, 2);   // qkv and fc1 (one layer block, counted once)
  EXPECT_EQ(backward, 2);  // proj and fc2
  EXPECT_FALSE(has_op(d, "tp_input_amax_all_reduce"));
  EXPECT_FALSE(has_op(d, "tp_grad_amax_all_reduce"));
  // Without sequence parallelism nothing is gathered quantized: no amax to agree on.
  Strategy no_sp = current;
  no_sp.sp = false;
  Graph ns;
  w->graph(no_sp, AttentionKernel::flash, ns);
  EXPECT_FALSE(has_op(ns, "tp_input_amax_all_reduce"));
  EXPECT_FALSE(has_op(ns, "tp_grad_amax_all_reduce"));
  // MXFP8 scales per block: no current-scaling flag, no amax all-reduce.
  Strategy mx = given;
  mx.precision = DType::mxfp8;
  EXPECT_FALSE(with_precision(mx, sw, load_cluster("dgx-b200", 8)).fp8_current_scaling);

  // A step pays for it: the same plan priced both ways on 8 B200s.
  const Cluster b200 = load_cluster("dgx-b200", 8);
  EstimateOptions o;
  o.software = software_preset("nemo");
  const double t_delayed = estimate(m, b200, given, o).step_time_s;
  o.software.fp8_current_scaling = true;
  const double t_current = estimate(m, b200, given, o).step_time_s;
  EXPECT_GT(t_current, t_delayed);
  EXPECT_LT(t_current, 1.1 * t_delayed);
}

TEST(Precision, BlockScaledTypesNeedAPartWithTheirPeaks) {
  const Model m = load_model("llama3-70b");
  const Cluster b200 = load_cluster("dgx-b200", 64), h100 = load_cluster("dgx-h100", 64);
  auto step = [&](const Cluster& c, const char* p) {
    return estimate(
               m, c,
               parse_strategy(std::string("tp=4,pp=2,mbs=1,gbs=256,sp=true,precision=") + p, 64))
        .step_time_s;
  };
  // MXFP8 runs at FP8's rate; its casts move 1/32 more bytes and write the column-wise copy
  // that FP8 on Blackwell does without: a little slower than FP8.
  EXPECT_GT(step(b200, "mxfp8"), step(b200, "fp8"));
  EXPECT_LT(step(b200, "mxfp8"), 1.03 * step(b200, "fp8"));
  // NVFP4 doubles the GEMM rate again; attention, the head and the passes stay in 16 bits.
  EXPECT_LT(step(b200, "nvfp4"), 0.8 * step(b200, "fp8"));
  EXPECT_GT(step(b200, "nvfp4"), 0.5 * step(b200, "fp8"));
  EXPECT_NE(test_models::input_error_of([&] {
              (void)step(h100, "nvfp4");
            }).find("h100-sxm5-80gb has no nvfp4 peak"),
            std::string::npos);
  EXPECT_NE(test_models::input_error_of([&] {
              (void)parse_strategy("tp=4,gbs=8,precision=fp4", 8);
            }).find("needs fp32, tf32, fp16, bf16, fp8, mxfp8 or nvfp4"),
            std::string::npos);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// fp32 training's matmuls on TF32 tensor cores or not (issue 35): the stack's defaults
// (PyTorch 1.12 on: cuda.matmul.allow_tf32 False, cudnn.allow_tf32 True; NGC's containers and
// PyTorch before 1.12: TF32 matmuls), on parts that have TF32; the elements stay 4 bytes.
TEST(Precision, Fp32MatmulsRunOnTf32WhereTheStackAllowsIt) {
  const Model m = load_model("gpt3-1.3b");
  const Cluster a100 = load_cluster("dgx-a100", 8);
  const Strategy fp32 = parse_strategy("tp=1,dp=8,mbs=1,gbs=64,zero=1,precision=fp32", 8);
  const Strategy tf32 = parse_strategy("tp=1,dp=8,mbs=1,gbs=64,zero=1,precision=tf32", 8);
  EstimateOptions core;  // megatron-core: TF32 matmuls
  ASSERT_TRUE(core.software.tf32_matmul);
  const Estimate on = estimate(m, a100, fp32, core);
  const Estimate as_tf32 = estimate(m, a100, tf32, core);
  EXPECT_EQ(on.strategy.precision, DType::fp32);
  EXPECT_DOUBLE_EQ(part(on, "compute_forward"), part(as_tf32, "compute_forward"));
  EXPECT_DOUBLE_EQ(on.memory_per_gpu_bytes, as_tf32.memory_per_gpu_bytes);

  EstimateOptions ieee = core;
  ieee.software = parse_software("megatron-core:tf32_matmul=false");
  const Estimate off = estimate(m, a100, fp32, ieee);
  // The GEMMs at the fp32 peak instead of TF32's: 19.5 against 156 TFLOP/s on an A100, so the
  // forward's GEMM-bound compute at least four times slower.
  EXPECT_GT(part(off, "compute_forward"), 4 * part(on, "compute_forward"));
  EXPECT_EQ(software_text(ieee.software), "megatron-core:tf32_matmul=false");

  // Upstream PyTorch's DDP: full fp32 matmuls unless told otherwise.
  EstimateOptions ddp;
  ddp.software = software_preset("pytorch-ddp");
  EXPECT_FALSE(ddp.software.tf32_matmul);
  EXPECT_TRUE(ddp.software.tf32_conv);
  const Strategy plain = parse_strategy("dp=8,mbs=1,gbs=64,zero=0,precision=fp32", 8);
  const double ddp_off = part(estimate(m, a100, plain, ddp), "compute_forward");
  ddp.software = parse_software("pytorch-ddp:tf32_matmul=true");
  const double ddp_on = part(estimate(m, a100, plain, ddp), "compute_forward");
  EXPECT_GT(ddp_off, 4 * ddp_on);

  // rank prices its fp32 candidates as estimate does.
  RankOptions ro;
  ro.global_batch = 64;
  ro.top = 1;
  ro.fixed = "precision=fp32";
  const RankResult ranked = rank(m, a100, ro);
  ASSERT_FALSE(ranked.best.empty());
  EXPECT_TRUE(ranked.best.front().strategy.tf32_math);
  EXPECT_NEAR(estimate(m, a100, ranked.best.front().strategy, core).step_time_s,
              ranked.best.front().step_time_s, 1e-9 * ranked.best.front().step_time_s);

  // A V100 has no TF32: the stack's setting changes nothing.
  const Cluster v100 = load_cluster("abci-v100", 8);
  EXPECT_DOUBLE_EQ(part(estimate(m, v100, fp32, core), "compute_forward"),
                   part(estimate(m, v100, fp32, ieee), "compute_forward"));
}

}  // namespace
}  // namespace shardcost
