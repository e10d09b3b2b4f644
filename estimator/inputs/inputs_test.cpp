#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "json_fields.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/units.h"

namespace shardcost {
namespace {

TEST(JsonText, AKeyTwiceInOneObjectIsRefusedAtAnyDepth) {
  auto refused = [](const char* text) {
    try {
      parse_json_text(text, "f.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refused(R"({"a": 1, "a": 2})").find("key 'a' is given twice"), std::string::npos);
  EXPECT_NE(refused(R"({"g": [{"n": 1}, {"n": 2, "m": 3, "n": 4}]})").find("key 'n'"),
            std::string::npos);
  EXPECT_NE(refused(R"({"o": {"x": {"y": 1, "y": 1}}})").find("key 'y'"), std::string::npos);
  // The same key in sibling or nested objects, and after its object closed, is no duplicate.
  EXPECT_EQ(refused(R"({"n": {"n": 1}, "g": [{"n": 1}, {"n": 2}], "m": {"n": 3}})"), "accepted");
}

// The message of the InputError that f throws.
template <typename F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no InputError>";
}

const char* kModel = R"({"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 4,
  "ffn_hidden": 256, "vocab": 1000, "seq_len": 128})";

TEST(Inputs, CatalogNamesLoad) {
  for (const auto& name : catalog_names("models")) EXPECT_NO_THROW(load_model(name)) << name;
  for (const auto& name : catalog_names("systems")) EXPECT_NO_THROW(load_cluster(name)) << name;
  for (const auto& name : catalog_names("devices")) EXPECT_NO_THROW(find_device(name)) << name;
  EXPECT_GE(catalog_names("devices").size(), 6u);
  EXPECT_EQ(load_cluster("dgx-h100", 64).total_gpus(), 64);
  EXPECT_EQ(load_cluster("dgx-h100", 4).groups[0].gpus_per_node, 4);
}

TEST(Inputs, ModelJsonWithDefaults) {
  const Model m = parse_model_json(kModel, "m.json");
  EXPECT_EQ(m.hidden, 64);
  EXPECT_EQ(m.activation, Activation::gelu);
  EXPECT_FALSE(m.is_moe());
}

TEST(Inputs, BadModelsNameTheFieldAndTheFix) {
  EXPECT_NE(input_error([] {
              parse_model_json(R"({"layers": 2})", "m.json");
            }).find("field 'hidden' is missing"),
            std::string::npos);
  EXPECT_NE(input_error([] {
              parse_model_json(R"({"layers": -2, "hidden": 64, "heads": 4, "kv_heads": 4,
                "ffn_hidden": 256, "vocab": 1000, "seq_len": 128})",
                               "m.json");
            }).find("'layers' must be an integer >= 1 (got -2)"),
            std::string::npos);
  EXPECT_NE(input_error([] {
              parse_model_json(R"({"layers": 2, "hidden": 64, "heads": 5, "kv_heads": 5,
                "ffn_hidden": 256, "vocab": 1000, "seq_len": 128})",
                               "m.json");
            }).find("'heads' (5) must divide hidden (64)"),
            std::string::npos);
  EXPECT_NE(input_error([] {
              parse_model_json("{\"layers\": 2,\n  oops}", "m.json");
            }).find("m.json: malformed JSON at line 2"),
            std::string::npos);
  EXPECT_NE(input_error([] { load_model("gpt5-1t"); }).find("unknown model 'gpt5-1t'"),
            std::string::npos);
  EXPECT_NE(
      input_error([] { parse_model_json("[1, 2]", "m.json"); }).find("expected a JSON object"),
      std::string::npos);
  // Sizes past the documented limits are refused with the limit, not priced for minutes.
  EXPECT_NE(input_error([] {
              parse_model_json(R"({"layers": 200000, "hidden": 64, "heads": 4, "kv_heads": 4,
                "ffn_hidden": 256, "vocab": 1000, "seq_len": 128})",
                               "m.json");
            }).find("field 'layers' must be an integer <= 10000 (got 200000)"),
            std::string::npos);
  EXPECT_NE(input_error([] {
              parse_model_json(R"({"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 4,
                "ffn_hidden": 256, "vocab": 1000, "seq_len": 18446744073709551615})",
                               "m.json");
            }).find("field 'seq_len' must be an integer <= 134217728"),
            std::string::npos);
  // A misspelt optional field took its default and priced another model; now it is named.
  EXPECT_NE(input_error([] {
              parse_model_json(R"({"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 4,
                "ffn_hidden": 256, "vocab": 1000, "seq_len": 128, "activaton": "swiglu"})",
                               "m.json");
            }).find("m.json: unknown field 'activaton' (did you mean 'activation'?)"),
            std::string::npos);
  EXPECT_NE(input_error([] {
              parse_model_json(R"({"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 4,
                "ffn_hidden": 256, "vocab": 1000, "seq_len": 128,
                "moe": {"experts": 8, "top_k": 2, "capacity": 1.25}})",
                               "m.json");
            }).find("unknown field 'capacity'; the fields are experts, n_routed_experts"),
            std::string::npos);
}

// A model file with the given fields added to a small valid one.
std::string model_with(const std::string& extra) {
  return R"({"layers": 4, "hidden": 64, "heads": 4, "kv_heads": 4, "ffn_hidden": 256,
    "vocab": 1000, "seq_len": 128)" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

TEST(Inputs, PublishedConfigNamesForMlaMoeAndMtp) {
  const Model m =
      parse_model_json(model_with(R"("q_lora_rank": 16, "kv_lora_rank": 8, "qk_nope_head_dim": 16,
        "qk_rope_head_dim": 8, "v_head_dim": 16, "num_nextn_predict_layers": 1,
        "moe": {"n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                "n_shared_experts": 1, "first_k_dense_replace": 1, "topk_method": "noaux_tc",
                "n_group": 4, "topk_group": 2, "imbalance": 1.5, "capacity_factor": 1.25})"),
                       "m.json");
  EXPECT_TRUE(m.is_mla());
  EXPECT_EQ(m.mla.q_lora_rank, 16);
  EXPECT_EQ(m.kv_heads, 4);  // MLA: every head has its key and value
  EXPECT_EQ(m.moe.experts, 8);
  EXPECT_EQ(m.moe.top_k, 2);
  EXPECT_EQ(m.expert_ffn(), 32);
  EXPECT_EQ(m.moe.shared_experts, 1);
  EXPECT_TRUE(m.moe.expert_bias);
  EXPECT_FALSE(m.moe_layer(0));
  EXPECT_TRUE(m.moe_layer(1));
  EXPECT_DOUBLE_EQ(m.moe.load_factor(), 1.25);  // dropped beyond capacity
  EXPECT_EQ(m.moe.groups, 4);                   // group-limited routing
  EXPECT_EQ(m.moe.group_top_k, 2);
  EXPECT_EQ(m.mtp_layers, 1);
  // And written back as read (the catalog's DeepSeek-V3 has its published 8 and 4).
  const Model v3 = load_model("deepseek-v3");
  EXPECT_EQ(v3.moe.groups, 8);
  EXPECT_EQ(v3.moe.group_top_k, 4);
  const Model again = parse_model_json(model_json(v3), "again.json");
  EXPECT_EQ(again.moe.groups, 8);
  EXPECT_EQ(again.moe.group_top_k, 4);
}

TEST(Inputs, BadFamilyFieldsNameTheField) {
  auto error = [](const std::string& extra) {
    return input_error([&] { parse_model_json(model_with(extra), "m.json"); });
  };
  // A latent wider than the hidden states is read as given (Megatron-core trains such).
  EXPECT_EQ(error(R"("kv_lora_rank": 128, "q_lora_rank": 96, "qk_nope_head_dim": 16,
                     "qk_rope_head_dim": 8, "v_head_dim": 16)"),
            "<no InputError>");
  EXPECT_NE(error(R"("q_lora_rank": 16)").find("field 'kv_lora_rank' is missing"),
            std::string::npos);
  EXPECT_NE(error(R"("moe": {"experts": 8, "n_routed_experts": 8, "top_k": 2})")
                .find("'experts' name the same thing"),
            std::string::npos);
  EXPECT_NE(error(R"("moe": {"experts": 8, "top_k": 2, "first_k_dense_replace": 4})")
                .find("field 'first_k_dense_replace' (4) leaves none of the 4 layers"),
            std::string::npos);
  EXPECT_NE(error(R"("moe": {"experts": 8, "top_k": 2, "n_group": 3, "topk_group": 1})")
                .find("field 'n_group' (3) does not divide the 8 experts"),
            std::string::npos);
  EXPECT_NE(error(R"("moe": {"experts": 8, "top_k": 2, "n_group": 4})")
                .find("field 'topk_group' is missing"),
            std::string::npos);
  EXPECT_NE(error(R"("moe": {"experts": 8, "top_k": 2, "imbalance": 9})")
                .find("field 'imbalance' (9) is above the 8 experts"),
            std::string::npos);
  EXPECT_NE(error(R"("hybrid_override_pattern": "M-*")")
                .find("field 'hybrid_override_pattern' has 3 characters for 4 layers"),
            std::string::npos);
  EXPECT_NE(error(R"("hybrid_override_pattern": "M-*x")").find("has 'x' at layer 3"),
            std::string::npos);
  EXPECT_NE(
      error(R"("hybrid_override_pattern": "M-*-")").find("field 'mamba_num_heads' is missing"),
      std::string::npos);
  EXPECT_NE(error(R"("hybrid_override_pattern": "M-E-", "mamba_num_heads": 4,
                     "mamba_head_dim": 8, "ssm_state_size": 8)")
                .find("field 'moe' is missing"),
            std::string::npos);
  EXPECT_NE(error(R"("ssm_state_size": 8)").find("there is no hybrid_override_pattern"),
            std::string::npos);
  EXPECT_NE(error(R"("hybrid_override_pattern": "----")").find("has no mixer"), std::string::npos);
  EXPECT_NE(error(R"("layer_types": ["full_attention", "sliding_attention", "full_attention",
                     "full_attention"])")
                .find("field 'sliding_window' is missing; layer 1 is sliding_attention"),
            std::string::npos);
  EXPECT_NE(error(R"("sliding_window": 8, "layer_types": ["full_attention"])")
                .find("field 'layer_types' has 1 entries for 4 layers"),
            std::string::npos);
  EXPECT_NE(error(R"("sliding_window": 8, "attention_chunk_size": 16)")
                .find("field 'layer_types' is missing; with both"),
            std::string::npos);
  // Published configs write null where there is no window (Mixtral's sliding_window).
  EXPECT_EQ(parse_model_json(model_with(R"("sliding_window": null)"), "m.json").sliding_window, 0);
  EXPECT_NE(error(R"("moe": {"experts": 8, "top_k": 2, "topk_method": "best"})")
                .find("field 'topk_method' must be greedy, group_limited_greedy or noaux_tc"),
            std::string::npos);
}

TEST(Inputs, ClusterFlatAndGrouped) {
  const Cluster flat = parse_cluster_json(
      R"({"device": "h100-sxm5-80gb", "nodes": 2, "gpus_per_node": 8,
          "intra_node_bandwidth_GBps": 450, "inter_node_bandwidth_GBps": 50})",
      "c.json");
  EXPECT_EQ(flat.total_gpus(), 16);
  EXPECT_DOUBLE_EQ(flat.inter_node.bandwidth_Bps, 50e9);
  const Cluster grouped = parse_cluster_json(
      R"({"inter_node_bandwidth_GBps": 25, "node_groups": [
           {"device": "a100-sxm4-80gb", "nodes": 2, "gpus_per_node": 8, "intra_node_bandwidth_GBps": 300},
           {"device": "h100-sxm5-80gb", "nodes": 1, "gpus_per_node": 8, "intra_node_bandwidth_GBps": 450}]})",
      "c.json");
  EXPECT_EQ(grouped.groups.size(), 2u);
  EXPECT_EQ(grouped.total_gpus(), 24);
  EXPECT_EQ(grouped.groups[1].device.name, "h100-sxm5-80gb");
}

TEST(Inputs, BadClustersNameTheFieldAndTheFix) {
  EXPECT_NE(input_error([] {
              parse_cluster_json(R"({"device": "a100-sxm4-80gb", "gpus_per_node": 8,
                "intra_node_bandwidth_GBps": 300})",
                                 "c.json");
            }).find("field 'inter_node_bandwidth_GBps' is missing"),
            std::string::npos);
  EXPECT_NE(input_error([] {
              parse_cluster_json(R"({"device": "tpu-v5", "gpus_per_node": 8,
                "intra_node_bandwidth_GBps": 300, "inter_node_bandwidth_GBps": 25})",
                                 "c.json");
            }).find("unknown device 'tpu-v5'"),
            std::string::npos);
  EXPECT_NE(
      input_error([] { load_cluster("dgx-a100", 12); }).find("not a whole number of 8-GPU nodes"),
      std::string::npos);
  // A misspelt link field would have taken the default; named instead, at either level.
  EXPECT_NE(input_error([] {
              parse_cluster_json(R"({"device": "h100-sxm5-80gb", "gpus_per_node": 8,
                "intra_node_bandwidth_GBps": 450, "inter_node_bandwith_GBps": 50})",
                                 "c.json");
            })
                .find("unknown field 'inter_node_bandwith_GBps' (did you mean "
                      "'inter_node_bandwidth_GBps'?)"),
            std::string::npos);
  EXPECT_NE(input_error([] {
              parse_cluster_json(R"({"inter_node_bandwidth_GBps": 50, "node_groups": [
                {"device": "h100-sxm5-80gb", "gpus_per_node": 8, "intra_node_bandwidth_GBps": 450,
                 "gpus": 8}]})",
                                 "c.json");
            }).find("c.json node_groups[0]: unknown field 'gpus'"),
            std::string::npos);
}

std::string cluster_with_curve(const std::string& curves) {
  return R"({"device": "a100-sxm4-80gb", "gpus_per_node": 8, "intra_node_bandwidth_GBps": 300,
             "inter_node_bandwidth_GBps": 25, "intra_node_busbw_GBps": )" +
         curves + "}";
}

TEST(Inputs, ClustersCarryPublishedBusBandwidthSweeps) {
  const Cluster c = parse_cluster_json(
      cluster_with_curve(R"({"all_gather": [[1048576, 50.5], [1073741824, 200]]})"), "c.json");
  const auto& ag =
      c.groups[0].intra_node.busbw_curves[static_cast<size_t>(CollectiveOp::all_gather)];
  ASSERT_EQ(ag.size(), 2u);
  EXPECT_DOUBLE_EQ(ag[0].bytes, 1048576);
  EXPECT_DOUBLE_EQ(ag[1].busbw_Bps, 200e9);
  EXPECT_TRUE(c.inter_node.busbw_curves[0].empty());
  // Every catalog DGX with a published NVLink sweep loads it.
  EXPECT_FALSE(load_cluster("dgx-h100").groups[0].intra_node.busbw_curves[0].empty());

  auto error = [](const std::string& curves) {
    return input_error([&] { parse_cluster_json(cluster_with_curve(curves), "c.json"); });
  };
  EXPECT_NE(error(R"({"allgather": [[1, 2], [3, 4]]})").find("unknown collective 'allgather'"),
            std::string::npos);
  EXPECT_NE(error(R"({"all_gather": [[3, 2], [1, 4]]})").find("strictly increasing bytes"),
            std::string::npos);
  EXPECT_NE(error(R"({"all_gather": [[1, 2]]})").find("at least two"), std::string::npos);
  EXPECT_NE(error(R"({"all_gather": [[1, -2], [3, 4]]})").find("positive numbers"),
            std::string::npos);
  EXPECT_NE(error(R"([1, 2])").find("intra_node_busbw_GBps"), std::string::npos);
}

// A device's measured attention curves: the non-causal pair, or the causal backward itself
// (what a benchmark of causal passes alone publishes, as cudnn-frontend's B200 runs).
TEST(Inputs, AttentionCurvesTakeTheCausalBackwardOrTheNonCausalPair) {
  auto cluster = [](const std::string& curve) {
    return fmt::format(R"({{"name": "x", "gpus_per_node": 8, "nodes": 1,
      "intra_node_bandwidth_GBps": 300, "inter_node_bandwidth_GBps": 25,
      "device": {{"name": "d", "sms": 100, "memory_GiB": 80, "memory_bandwidth_GBps": 2000,
        "peak_tflops": {{"bf16": 1000}}, "efficiency": {{"gemm": 0.7, "memory": 0.8,
        "attention": 0.5}}, "attention_kernels": {{"seq_len": [1024, 4096], "curves": [{{
          "kernel": "cudnn", "head_dim": 128, "forward_causal": [300, 400], {}}}]}}}}}})",
                       curve);
  };
  const Cluster c = parse_cluster_json(cluster(R"("backward_causal": [200, 350])"), "c.json");
  const AttentionCurve& causal = c.groups[0].device.attention_kernels.curves.at(0);
  EXPECT_EQ(causal.backward_causal, (std::vector<double>{200e12, 350e12}));
  EXPECT_TRUE(causal.forward.empty() && causal.backward.empty());
  const Cluster pair =
      parse_cluster_json(cluster(R"("forward": [500, 600], "backward": [400, 600])"), "c.json");
  const AttentionCurve& noncausal = pair.groups[0].device.attention_kernels.curves.at(0);
  EXPECT_EQ(noncausal.backward, (std::vector<double>{400e12, 600e12}));
  EXPECT_TRUE(noncausal.backward_causal.empty());
  auto error = [&](const std::string& curve) {
    return input_error([&] { parse_cluster_json(cluster(curve), "c.json"); });
  };
  EXPECT_NE(error(R"("forward": [500, 600])")
                .find("field 'backward' is missing; give the non-causal \"forward\" and "
                      "\"backward\" rates, or the causal backward as \"backward_causal\""),
            std::string::npos);
  EXPECT_NE(error(R"("backward_causal": [200])").find("one rate per seq_len (2 of them)"),
            std::string::npos);
  // An FP8 variant of a kernel says so; another type is refused.
  const Cluster fp8 =
      parse_cluster_json(cluster(R"("backward_causal": [200, 350], "dtype": "mxfp8")"), "c.json");
  EXPECT_TRUE(fp8.groups[0].device.attention_kernels.curves.at(0).fp8);
  EXPECT_FALSE(causal.fp8);
  EXPECT_NE(error(R"("backward_causal": [200, 350], "dtype": "fp16")")
                .find("must be bf16 (the default) or mxfp8"),
            std::string::npos);
  // A curve may name the library release it measured and lengths of its own, which its rate
  // arrays then follow.
  std::string json = cluster(R"("release": "9.19.1", "seq_len": [2048, 4096, 8192],
                                "backward_causal": [1, 2, 3])");
  json.replace(json.find("[300, 400]"), 10, "[1, 2, 3]");
  const Cluster own = parse_cluster_json(json, "c.json");
  const AttentionKernels& k = own.groups[0].device.attention_kernels;
  EXPECT_EQ(k.curves.at(0).release, "9.19.1");
  EXPECT_EQ(k.curves.at(0).release_order, 9019);
  EXPECT_EQ(k.lengths(k.curves.at(0)), (std::vector<double>{2048, 4096, 8192}));
  EXPECT_EQ(k.lengths(causal), (std::vector<double>{1024, 4096}));
  EXPECT_NE(error(R"("seq_len": [2048, 4096, 8192], "backward_causal": [1, 2, 3])")
                .find("one rate per seq_len (3 of them)"),
            std::string::npos);
  EXPECT_NE(error(R"("seq_len": [4096, 2048], "backward_causal": [1, 2])")
                .find("must be strictly increasing"),
            std::string::npos);
  EXPECT_NE(error(R"("release": "nine", "backward_causal": [200, 350])")
                .find("must be a release such as \"9.19.1\""),
            std::string::npos);
}

// A device's FP8 efficiency by shape (scripts/fp8-shape-grid.py writes it): dims, and a cube
// of fractions m-major, and its value at the large cubes.
TEST(Inputs, Fp8ShapeGridsAreCubesOfFractionsOverIncreasingDimensions) {
  auto cluster = [](const std::string& grid) {
    return fmt::format(R"({{"name": "x", "gpus_per_node": 8, "nodes": 1,
      "intra_node_bandwidth_GBps": 300, "inter_node_bandwidth_GBps": 25,
      "device": {{"name": "d", "sms": 100, "memory_GiB": 80, "memory_bandwidth_GBps": 2000,
        "peak_tflops": {{"bf16": 1000, "fp8": 2000}}, "efficiency": {{"gemm": 0.7,
        "memory": 0.8, "attention": 0.5}}, "gemm_fp8_shape": {}}}}})",
                       grid);
  };
  const Cluster c =
      parse_cluster_json(cluster(R"({"dims": [1024, 8192], "relative": [[[0.3, 0.4], [0.5, 0.6]],
                                                        [[0.7, 0.8], [0.9, 1.0]]]})"),
                         "c.json");
  const Fp8ShapeGrid& g = c.groups[0].device.gemm_fp8_shape;
  EXPECT_EQ(g.dims, (std::vector<double>{1024, 8192}));
  EXPECT_EQ(g.relative, (std::vector<double>{0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0}));
  EXPECT_DOUBLE_EQ(g.large(), (0.3 + 1.0) / 2);  // its two largest cubes, 1024^3 and 8192^3
  auto error = [&](const std::string& grid) {
    return input_error([&] { parse_cluster_json(cluster(grid), "c.json"); });
  };
  EXPECT_NE(error(R"({"dims": [8192, 1024], "relative": []})").find("strictly increasing"),
            std::string::npos);
  EXPECT_NE(error(R"({"dims": [1024, 8192], "relative": [[[0.3, 0.4], [0.5, 0.6]]]})")
                .find("must hold 2 x 2 x 2 fractions in (0, 1.5] (m, then n, then k)"),
            std::string::npos);
  const std::string cube = "must hold 2 x 2 x 2 fractions in (0, 1.5] (m, then n, then k)";
  EXPECT_NE(error(R"({"dims": [1024, 8192], "relative": [[[0.3, 0.4], [0.5, 0.6]],
                                                           [[0.7, 0.8], [0.9, 0]]]})")
                .find(cube),
            std::string::npos);
  EXPECT_NE(error(R"({"dims": [1024, 8192], "relative": [[[0.3, 0.4], [0.5, 0.6]],
                                                           [[0.7, 0.8], [0.9, 1.6]]]})")
                .find(cube),
            std::string::npos);
  EXPECT_NE(error(R"({"dims": [1024, 8192], "relative": [[[0.3, 0.4], [0.5, 0.6]],
                                                           [[0.7, 0.8], [0.9, "x"]]]})")
                .find(cube),
            std::string::npos);
  EXPECT_NE(error(R"({"dims": [1024], "relative": [[[0.3]]]})").find("at least two"),
            std::string::npos);
  EXPECT_NE(error(R"({"dims": [1024, 8192], "relative": [], "relativ": []})").find("relativ"),
            std::string::npos);
}

// A part without a table of its own may name a catalog device whose measured grid it shares:
// the catalog's GB200, B300 and GB300 take B200's, point by point. A name that is no device,
// or a device without a grid of its own, is one line naming the field and the fix.
TEST(Inputs, AnFp8ShapeGridMayBeACatalogDevicesByName) {
  const Fp8ShapeGrid& b200 = find_device("b200-sxm-180gb").gemm_fp8_shape;
  ASSERT_FALSE(b200.empty());
  for (const char* part : {"gb200", "b300", "gb300"}) {
    const Fp8ShapeGrid& g = find_device(part).gemm_fp8_shape;
    EXPECT_EQ(g.dims, b200.dims) << part;
    EXPECT_EQ(g.relative, b200.relative) << part;
  }
  EXPECT_TRUE(find_device("h100-sxm5-80gb").gemm_fp8_shape.empty());
  auto cluster = [](const std::string& from) {
    return fmt::format(R"({{"name": "x", "gpus_per_node": 8, "nodes": 1,
      "intra_node_bandwidth_GBps": 300, "inter_node_bandwidth_GBps": 25,
      "device": {{"name": "d", "sms": 100, "memory_GiB": 80, "memory_bandwidth_GBps": 2000,
        "peak_tflops": {{"bf16": 1000, "fp8": 2000}}, "efficiency": {{"gemm": 0.7,
        "memory": 0.8, "attention": 0.5}}, "gemm_fp8_shape": "{}"}}}})",
                       from);
  };
  EXPECT_EQ(parse_cluster_json(cluster("b200-sxm-180gb"), "c.json")
                .groups[0]
                .device.gemm_fp8_shape.relative,
            b200.relative);
  for (const char* from : {"h100-sxm5-80gb", "no-such-gpu"}) {
    const std::string e = input_error([&] { parse_cluster_json(cluster(from), "c.json"); });
    EXPECT_NE(e.find(fmt::format("'gemm_fp8_shape' names '{}', which is no catalog device with a "
                                 "measured grid of its own",
                                 from)),
              std::string::npos)
        << e;
  }
}

TEST(Inputs, StrategyTextDefaultsAndErrors) {
  const Strategy s = parse_strategy("tp=8,pp=2,mbs=2,gbs=64,recompute=full,sp=true", 64);
  EXPECT_EQ(s.dp, 4);
  EXPECT_EQ(s.gbs, 64);
  // Without a pipeline gbs defaults to one micro-batch per data-parallel rank; with one, no
  // default is a plan anyone runs (one micro-batch: (pp-1)/1 bubbles), so it is asked for.
  EXPECT_EQ(parse_strategy("tp=8,mbs=2", 64).gbs, 16);
  EXPECT_NE(input_error([] {
              parse_strategy("tp=8,pp=2,mbs=2", 64);
            }).find("gbs= is required with pipeline parallelism (pp=2)"),
            std::string::npos);
  EXPECT_EQ(s.recompute, Recompute::full);
  EXPECT_TRUE(s.sp);
  EXPECT_NE(input_error([] { parse_strategy("tp=3", 64); }).find("does not divide the 64 GPUs"),
            std::string::npos);
  EXPECT_NE(input_error([] { parse_strategy("tq=3", 64); }).find("unknown strategy key 'tq'"),
            std::string::npos);
  EXPECT_NE(input_error([] { parse_strategy("tp=0", 64); }).find("must be at least 1"),
            std::string::npos);
  EXPECT_NE(
      input_error([] { parse_strategy("recompute=some", 64); }).find("none, selective or full"),
      std::string::npos);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

TEST(Inputs, NvlinkDomainsJoinWholeNodes) {
  const Cluster rack = load_cluster("gb200-nvl72", 288);
  EXPECT_EQ(rack.groups.front().gpus_per_node, 4);
  EXPECT_EQ(rack.groups.front().nodes, 72);
  EXPECT_EQ(rack.groups.front().domain_gpus(), 72);
  EXPECT_EQ(load_cluster("dgx-h100", 16).groups.front().domain_gpus(), 8);
  // Part of one tray: the tray is the domain; part of one rack: all of it is one domain.
  EXPECT_EQ(load_cluster("gb200-nvl72", 2).groups.front().domain_gpus(), 2);
  EXPECT_EQ(load_cluster("gb200-nvl72", 16).groups.front().domain_gpus(), 16);
  const std::string bad = input_error([] {
    parse_cluster_json(R"({"name": "x", "device": "gb200", "gpus_per_node": 4, "nodes": 2,
      "nvlink_domain_gpus": 6, "intra_node_bandwidth_GBps": 900, "inter_node_bandwidth_GBps": 50})",
                       "c.json");
  });
  EXPECT_NE(
      bad.find("c.json: field 'nvlink_domain_gpus' (6) must be a whole number of 4-GPU nodes"),
      std::string::npos)
      << bad;
}

// The group an intra-node latency was measured on: the catalog's 4-GPU NVL72 figure says so,
// a file may, and a group of one GPU is refused.
TEST(Inputs, IntraNodeLatencyNamesTheGroupItWasMeasuredOn) {
  EXPECT_EQ(load_cluster("gb200-nvl72", 72).groups.front().intra_node.latency_ranks, 4);
  EXPECT_EQ(load_cluster("dgx-h100", 16).groups.front().intra_node.latency_ranks, 8);
  const Cluster two = parse_cluster_json(
      R"({"name": "x", "device": "h100-sxm5-80gb", "gpus_per_node": 8, "intra_node_latency_us": 9,
      "intra_node_latency_ranks": 2, "intra_node_bandwidth_GBps": 450, "inter_node_bandwidth_GBps": 50})",
      "c.json");
  EXPECT_EQ(two.groups.front().intra_node.latency_ranks, 2);
  const std::string bad = input_error([] {
    parse_cluster_json(R"({"name": "x", "device": "h100-sxm5-80gb", "gpus_per_node": 8,
      "intra_node_latency_ranks": 1, "intra_node_bandwidth_GBps": 450, "inter_node_bandwidth_GBps": 50})",
                       "c.json");
  });
  EXPECT_NE(bad.find("c.json: field 'intra_node_latency_ranks'"), std::string::npos) << bad;
  // The top level's measured group goes with its own latency only: a group that gives its own
  // latency keeps the default group of 8 unless it names one.
  const Cluster mixed = parse_cluster_json(
      R"({"name": "x", "intra_node_latency_us": 16, "intra_node_latency_ranks": 4,
      "inter_node_bandwidth_GBps": 50, "intra_node_bandwidth_GBps": 900, "node_groups": [
      {"name": "a", "device": "gb200", "gpus_per_node": 4},
      {"name": "b", "device": "b200-sxm-180gb", "gpus_per_node": 8, "intra_node_latency_us": 27}]})",
      "c.json");
  EXPECT_EQ(mixed.groups[0].intra_node.latency_ranks, 4);
  EXPECT_EQ(mixed.groups[1].intra_node.latency_ranks, 8);
  // Past the 8 GPUs the scaling was measured on, a reference would not scale back to itself.
  const std::string wide = input_error([] {
    parse_cluster_json(R"({"name": "x", "device": "gb200", "gpus_per_node": 4, "nodes": 18,
      "nvlink_domain_gpus": 72, "intra_node_latency_ranks": 72, "intra_node_bandwidth_GBps": 900,
      "inter_node_bandwidth_GBps": 50})",
                       "c.json");
  });
  EXPECT_NE(wide.find("c.json: field 'intra_node_latency_ranks'"), std::string::npos) << wide;
  EXPECT_NE(wide.find("8"), std::string::npos) << wide;
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

// A model written as JSON reads back as the same model: every catalog model (dense, GQA, MLA,
// MoE, MTP, hybrid Mamba, sliding and chunked windows), with the fields a run changes.
TEST(Inputs, ModelJsonRoundTrips) {
  for (const auto& name : catalog_names("models")) {
    Model m = load_model(name);
    m.seq_len = 2 * m.seq_len;
    const std::string text = model_json(m);
    const Model back = parse_model_json(text, "round trip");
    EXPECT_EQ(model_json(back), text) << name;
    EXPECT_EQ(back.name, m.name) << name;
    EXPECT_EQ(back.seq_len, m.seq_len) << name;
    EXPECT_EQ(back.pattern.size(), m.pattern.size()) << name;
    EXPECT_EQ(back.windows.size(), m.windows.size()) << name;
    EXPECT_EQ(back.moe.load_factor(), m.moe.load_factor()) << name;
    EXPECT_DOUBLE_EQ(parameter_count(back), parameter_count(m)) << name;
    EXPECT_DOUBLE_EQ(active_parameter_count(back), active_parameter_count(m)) << name;
    EXPECT_DOUBLE_EQ(mtp_parameter_count(back), mtp_parameter_count(m)) << name;
    EXPECT_DOUBLE_EQ(model_flops_per_step(back, 8), model_flops_per_step(m, 8)) << name;
  }
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

using units::kGiB;

// A stack as text reads back as the same stack; a bad key or value is one line naming it.
TEST(Inputs, SoftwareTextRoundTrips) {
  for (const auto& name : software_presets()) {
    EXPECT_EQ(software_text(software_preset(name)), name);
    EXPECT_EQ(parse_software(name).name, name);
  }
  Software s = software_preset("nemo");
  s.tp_comm_overlap = false;
  s.overlap_param_gather = false;
  s.fused_attention = FusedAttention::fa3;
  s.ep_dispatcher = EpDispatcher::alltoall;
  s.memory_fixed_bytes = 3 * kGiB;
  s.memory_fragmentation = 0;
  const std::string text = software_text(s);
  EXPECT_EQ(text,
            "nemo:overlap_param_gather=false,tp_comm_overlap=false,attention=fa3,"
            "ep_dispatcher=alltoall,memory_headroom_gib=3");
  const Software back = parse_software(text);
  EXPECT_FALSE(back.tp_comm_overlap);
  EXPECT_FALSE(back.overlap_param_gather);
  EXPECT_TRUE(back.overlap_grad_reduce);
  EXPECT_EQ(back.fused_attention, FusedAttention::fa3);
  EXPECT_EQ(back.ep_dispatcher, EpDispatcher::alltoall);
  EXPECT_EQ(software_preset("nemo").ep_dispatcher, EpDispatcher::flex);
  EXPECT_EQ(software_preset("megatron-core").ep_dispatcher, EpDispatcher::alltoall);
  // The FP8 recipe and the gradient accumulation read back too (issue 32, items 6 and 8).
  const Software titan = parse_software("torchtitan:fused_grad_accumulation=true");
  EXPECT_TRUE(titan.fused_grad_accumulation);
  EXPECT_FALSE(software_preset("torchtitan").fused_grad_accumulation);
  EXPECT_EQ(software_text(titan), "torchtitan:fused_grad_accumulation=true");
  EXPECT_TRUE(parse_software("nemo:fp8_current_scaling=true").fp8_current_scaling);
  EXPECT_FALSE(software_preset("nemo").fp8_current_scaling);
  // DeepSeek-V3's memory savings: its preset's, and keys of every other stack.
  EXPECT_TRUE(software_preset("deepseek-v3").bf16_optimizer_moments);
  EXPECT_TRUE(software_preset("deepseek-v3").quantized_moe_act_input);
  const Software lean = parse_software("nemo:bf16_optimizer_moments=true");
  EXPECT_TRUE(lean.bf16_optimizer_moments);
  EXPECT_EQ(software_text(lean), "nemo:bf16_optimizer_moments=true");
  EXPECT_EQ(software_text(parse_software("deepseek-v3:quantized_moe_act_input=false")),
            "deepseek-v3:quantized_moe_act_input=false");
  EXPECT_NE(input_error([] { parse_software("nemo:ep_dispatcher=deepep2"); }).find("use alltoall"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(back.memory_fixed_bytes, 3 * kGiB);
  EXPECT_EQ(software_text(back), text);
  EXPECT_NE(
      input_error([] { parse_software("nemo:tp_comm_overlap=maybe"); }).find("give true or false"),
      std::string::npos);
  EXPECT_NE(input_error([] { parse_software("nemo:warp_speed=true"); }).find("unknown key"),
            std::string::npos);
  EXPECT_NE(input_error([] { parse_software("nemo:tp_comm_overlap"); }).find("key=value"),
            std::string::npos);
  EXPECT_NE(input_error([] { parse_software("nemo:memory_headroom_gib=-1"); }).find("0 to 1024"),
            std::string::npos);
  EXPECT_THROW(parse_software("no-such-stack"), InputError);
}

}  // namespace
}  // namespace shardcost

namespace shardcost {
namespace {

std::string hf_fixture(const std::string& name) {
  return SHARDCOST_SOURCE_DIR "/tests/fixtures/hf/" + name;
}
bool is_file(const std::string& path) {
  return std::ifstream(path).good();
}

// Published Hugging Face config.json files load as they are (issue 34, item 1): their
// parameter counts are the released checkpoints' (the model cards' and the safetensors index's
// totals), every field either read or known not to change the cost.
TEST(HfConfig, PublishedConfigsCountTheirCheckpointsParameters) {
  const std::pair<const char*, double> published[] = {
      {"llama-3.1-8b.json", 8030261248.0},  {"mistral-7b.json", 7241732096.0},
      {"mixtral-8x7b.json", 46702792704.0}, {"qwen2.5-7b.json", 7615616512.0},
      {"qwen3-8b.json", 8190735360.0},      {"gemma-2-2b.json", 2614341888.0},
      {"phi-3-mini.json", 3821079552.0}};
  for (const auto& [file, params] : published) {
    if (!is_file(hf_fixture(file))) {
      ADD_FAILURE() << file << " missing";
      continue;
    }
    const Model m = load_model(hf_fixture(file));
    EXPECT_DOUBLE_EQ(parameter_count(m), params) << file;
  }
}

// What each model_type brings that a llama does not: Qwen2's biases on q, k and v only, Qwen3's
// per-head norms, Gemma-2's four norms a layer, alternating windows, tied embeddings, GeGLU and
// capped logits, Mixtral's experts, Mistral's window on every layer.
TEST(HfConfig, EachModelTypesOwnFeaturesAreRead) {
  const Model llama = load_model(hf_fixture("llama-3.1-8b.json"));
  EXPECT_EQ(llama.seq_len, 131072);  // max_position_embeddings: --seq-len says what a run uses
  EXPECT_EQ(llama.kv_heads, 8);
  EXPECT_EQ(llama.activation, Activation::swiglu);
  EXPECT_TRUE(llama.rmsnorm);
  EXPECT_FALSE(llama.learned_positions);
  EXPECT_FALSE(llama.bias);
  EXPECT_FALSE(llama.tied_embeddings);
  const Model qwen2 = load_model(hf_fixture("qwen2.5-7b.json"));
  EXPECT_TRUE(qwen2.qkv_bias);
  EXPECT_FALSE(qwen2.bias);
  EXPECT_TRUE(qwen2.windows.empty());  // use_sliding_window false
  EXPECT_TRUE(load_model(hf_fixture("qwen3-8b.json")).qk_norm);
  const Model gemma = load_model(hf_fixture("gemma-2-2b.json"));
  EXPECT_TRUE(gemma.post_norms);
  EXPECT_TRUE(gemma.tied_embeddings);
  EXPECT_EQ(gemma.head_dim(), 256);
  EXPECT_EQ(gemma.sliding_window, 4096);
  ASSERT_EQ(gemma.windows.size(), 26u);
  EXPECT_EQ(gemma.windows[0], Window::sliding);
  EXPECT_EQ(gemma.windows[1], Window::full);
  EXPECT_DOUBLE_EQ(gemma.logit_softcap, 30.0);
  const Model mixtral = load_model(hf_fixture("mixtral-8x7b.json"));
  EXPECT_EQ(mixtral.moe.experts, 8);
  EXPECT_EQ(mixtral.moe.top_k, 2);
  EXPECT_EQ(load_model(hf_fixture("mistral-7b.json")).sliding_window, 4096);
}

// DeepSeek-V3's config reads as the catalog's model, which was written from it by hand.
TEST(HfConfig, DeepSeekV3ReadsAsTheCatalogsModel) {
  const Model hf = load_model(hf_fixture("deepseek-v3.json"));
  const Model catalog = load_model("deepseek-v3");
  EXPECT_DOUBLE_EQ(parameter_count(hf), parameter_count(catalog));
  EXPECT_DOUBLE_EQ(mtp_parameter_count(hf), mtp_parameter_count(catalog));
  EXPECT_EQ(hf.moe.groups, 8);
  EXPECT_EQ(hf.moe.group_top_k, 4);
  EXPECT_EQ(hf.moe.first_dense_layers, 3);
  EXPECT_TRUE(hf.moe.expert_bias);
  EXPECT_EQ(hf.mla.kv_lora_rank, 512);
}

// What would change the cost and is not modelled is refused by name; so is a field nobody has
// judged, and a model_type not read.
TEST(HfConfig, WhatIsNotModelledIsRefusedByName) {
  const auto llama = nlohmann::json::parse(read_text_file(hf_fixture("llama-3.1-8b.json"), "t"));
  auto error = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json j = llama;
    change(j);
    return input_error([&] { parse_model_json(j.dump(), "config.json"); });
  };
  EXPECT_NE(error([](auto& j) {
              j["attention_bias"] = true;
            }).find("field 'attention_bias' is set without the other"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) {
              j["frobnication"] = 3;
            }).find("field 'frobnication' of a llama config.json is not read"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j["model_type"] = "gpt2"; }).find("model_type 'gpt2' is not read"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j.erase("hidden_size"); }).find("field 'hidden_size' is missing"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j["hidden_act"] = "relu"; }).find("field 'hidden_act' is \"relu\""),
            std::string::npos);
  nlohmann::json qwen =
      nlohmann::json::parse(read_text_file(hf_fixture("qwen3-30b-a3b.json"), "t"));
  qwen["decoder_sparse_step"] = 2;
  EXPECT_NE(input_error([&] {
              parse_model_json(qwen.dump(), "config.json");
            }).find("field 'decoder_sparse_step' is not 1"),
            std::string::npos);
}

}  // namespace
}  // namespace shardcost
