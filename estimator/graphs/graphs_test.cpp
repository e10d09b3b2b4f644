#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/opgraph.h"

namespace shardcost {
namespace {

std::string path(const char* rel) {
  return std::string(SHARDCOST_SOURCE_DIR) + "/" + rel;
}
std::string bytes(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}
int count(const OpGraph& g, NodeKind kind) {
  int n = 0;
  for (const GraphNode& x : g.nodes) n += x.kind == kind;
  return n;
}

TEST(OnnxImport, ResNet50MatchesTheReleasedModel) {
  const OpGraph g = load_onnx(path("data/onnx/resnet50.onnx"));
  // torchvision's resnet50: 25,557,032 trainable parameters (batch norm's running statistics
  // are buffers); 4.09 GMACs per 224x224 image (ResNet50_Weights' "GFLOPS" figure).
  EXPECT_EQ(g.parameters(), 25557032);
  EXPECT_NEAR(g.flops_per_sample() / 2 / 1e9, 4.09, 0.01);
  EXPECT_EQ(count(g, NodeKind::conv), 53);
  EXPECT_EQ(count(g, NodeKind::matmul), 1);
  EXPECT_EQ(g.input, (Dims{3, 224, 224}));
  EXPECT_TRUE(g.unknown_ops().empty());
  const GraphNode& first = g.nodes.front();
  EXPECT_EQ(first.op_type, "Conv");
  EXPECT_EQ(first.cin, 3);
  EXPECT_EQ(first.cout, 64);
  EXPECT_EQ(first.out_spatial, (Dims{112, 112}));
  EXPECT_EQ(first.kernel, (Dims{7, 7}));
  EXPECT_EQ(first.stride, (Dims{2, 2}));
  EXPECT_EQ(first.dilation, (Dims{1, 1}));
  // The residual add reads both branches: its producers are two nodes.
  int adds = 0;
  for (const GraphNode& n : g.nodes)
    if (n.op_type == "Add") {
      EXPECT_EQ(n.inputs.size(), 2u) << n.name;
      ++adds;
    }
  EXPECT_EQ(adds, 16);
}

// What autograd keeps of ResNet-50 for its backward, per 224x224 image, counted by hand from
// torchvision's layers: every convolution's output (its batch norm's input: 11,113,984
// elements over the 53 convolutions, downsampling ones included), every ReLU's output (the
// next convolution's or the max pool's input, or the last one's own: 9,608,704 over 49), the
// image (150,528), the max pool's output (64 x 56 x 56) and the pooled 2,048 features the
// classifier keeps; the residual adds and the global average pool keep nothing. 84.3 MB in
// fp32, where counting every operator's inputs had 173 MB (NVIDIA's DeepLearningExamples
// train it in fp32 at 112 images on a 16 GB V100 and 128 on a 16 GB T4, configs.yml).
TEST(OnnxImport, ResNet50KeepsWhatAutogradSaves) {
  const OpGraph g = load_onnx(path("data/onnx/resnet50.onnx"));
  double kept = 0, masks = 0;
  for (const GraphNode& n : g.nodes) kept += n.kept_elements, masks += n.kept_mask_bytes;
  EXPECT_EQ(kept, 150528 + 11113984 + 9608704 + 64 * 56 * 56 + 2048);
  EXPECT_EQ(masks, 0);
  for (const GraphNode& n : g.nodes) {
    if (n.op_type == "Add" || n.op_type == "GlobalAveragePool") {
      EXPECT_EQ(n.kept_elements, 0);
    }
    // A batch norm keeps its input (the convolution's output); the convolution keeps its own
    // input, which its producer (a ReLU) leaves to it.
    if (n.op_type == "BatchNormalization") {
      EXPECT_EQ(n.kept_elements, n.in_elements);
    }
  }
  // The ReLU before the global average pool keeps its output itself; the others' outputs are
  // their consumers' inputs.
  int relus_keeping = 0;
  for (const GraphNode& n : g.nodes) relus_keeping += n.op_type == "Relu" && n.kept_elements > 0;
  EXPECT_EQ(relus_keeping, 1);
}

TEST(OnnxImport, Vgg16AndUnetAndGpt) {
  const OpGraph vgg = load_onnx(path("data/onnx/vgg16.onnx"));
  EXPECT_EQ(vgg.parameters(), 138357544);                      // torchvision vgg16
  EXPECT_NEAR(vgg.flops_per_sample() / 2 / 1e9, 15.47, 0.01);  // VGG16_Weights: 15.47 GMACs
  const OpGraph unet = load_onnx(path("data/onnx/unet3d.onnx"));
  EXPECT_EQ(unet.input, (Dims{1, 128, 128, 128}));
  int transposed = 0;
  for (const GraphNode& n : unet.nodes) transposed += n.transposed;
  EXPECT_EQ(transposed, 3);
  // A transposed 2x2x2 convolution of stride 2 doubles every side.
  for (const GraphNode& n : unet.nodes)
    if (n.transposed) {
      for (size_t d = 0; d < 3; ++d) EXPECT_EQ(n.out_spatial[d], 2 * n.in_spatial[d]);
      EXPECT_DOUBLE_EQ(n.flops(), 2.0 * n.cin * n.cout * 8 *
                                      (n.in_spatial[0] * n.in_spatial[1] *
                                       static_cast<double>(n.in_spatial[2])));
    }
  const OpGraph gpt = load_onnx(path("data/onnx/gpt-small.onnx"));
  // Per layer: q, k, v, out projections and two MLP matmuls; scores and context batched over 4
  // heads of 128 x 128; the head's matmul.
  EXPECT_EQ(count(gpt, NodeKind::matmul), 2 * 8 + 1);
  for (const GraphNode& n : gpt.nodes)
    if (n.kind == NodeKind::matmul && !n.weight) {
      EXPECT_EQ(n.batch, 4);
      EXPECT_EQ(n.m, 128);
    } else if (n.kind == NodeKind::matmul) {
      EXPECT_EQ(n.m, 128);  // rows of one sample: its tokens
    }
  // 2 layers of 12 d^2 + 13 d (biases, norms), the tables, the final norm and the head; the
  // attention's scale constants are not trained.
  const double d = 256;
  EXPECT_EQ(gpt.parameters(), 2 * (12 * d * d + 13 * d) + 8192 * d + 128 * d + 2 * d + d * 8192);
}

TEST(OnnxImport, UnknownOperatorsArePricedAndListed) {
  const OpGraph g = load_onnx(path("tests/data/onnx/custom-op.onnx"));
  ASSERT_EQ(g.unknown_ops().size(), 1u);
  EXPECT_EQ(g.unknown_ops()[0].first, "FancyNorm");
  const GraphNode& fancy = g.nodes[1];
  EXPECT_EQ(fancy.kind, NodeKind::memory);
  EXPECT_TRUE(fancy.unknown);
  EXPECT_EQ(fancy.out_elements, 8 * 32 * 32);
}

TEST(OnnxImport, OddShapesReadRight) {
  const OpGraph g = load_onnx(path("tests/data/onnx/odd-shapes.onnx"));
  auto node = [&g](const char* prefix) -> const GraphNode& {
    for (const GraphNode& n : g.nodes)
      if (n.name.rfind(prefix, 0) == 0) return n;
    throw std::runtime_error(prefix);
  };
  // [N,4,32,16] x four weights of 16 x 32: per sample 4 products of 32 x 16 by 16 x 32.
  const GraphNode& batched = node("batched");
  EXPECT_EQ(batched.batch, 4);
  EXPECT_EQ(batched.m, 32);
  EXPECT_DOUBLE_EQ(batched.flops(), 2.0 * 32 * 32 * 16 * 4);
  EXPECT_EQ(batched.params, 4 * 16 * 32);
  // A vector weight: one output column.
  const GraphNode& matvec = node("matvec");
  EXPECT_EQ(matvec.n, 1);
  EXPECT_EQ(matvec.k, 32);
  EXPECT_EQ(matvec.m, 4 * 32);
  // Resize's empty roi and its scales are constants, not weights.
  EXPECT_EQ(node("resize").params, 0);
  EXPECT_EQ(node("conv_5").groups, 4);
  // The two convolutions reading the input directly.
  int readers = 0;
  for (const GraphNode& n : g.nodes) readers += n.reads_input;
  EXPECT_EQ(readers, 2);
}

// torch.onnx.export's default fixes the example input's batch and stores every intermediate
// shape at it; a static file prices as its dynamic twin, per sample, and says it was static.
TEST(OnnxImport, StaticBatchExportsPriceAsTheirDynamicTwin) {
  const OpGraph dynamic = load_onnx(path("tests/data/onnx/cnn-dynamic.onnx"));
  EXPECT_TRUE(dynamic.notes.empty());
  // conv 3->16 (432) + BN (32) + conv 16->32 with bias (4,640) + fc 32->10 (330).
  EXPECT_EQ(dynamic.parameters(), 432 + 32 + 4640 + 330);
  for (const char* file :
       {"tests/data/onnx/cnn-static1.onnx", "tests/data/onnx/cnn-static8.onnx"}) {
    SCOPED_TRACE(file);
    const OpGraph g = load_onnx(path(file));
    EXPECT_EQ(g.parameters(), dynamic.parameters());
    EXPECT_EQ(g.flops_per_sample(), dynamic.flops_per_sample());
    EXPECT_EQ(g.input, (Dims{3, 32, 32}));
    ASSERT_EQ(g.nodes.size(), dynamic.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      EXPECT_EQ(g.nodes[i].out, dynamic.nodes[i].out) << g.nodes[i].name;
      EXPECT_EQ(g.nodes[i].in_elements, dynamic.nodes[i].in_elements) << g.nodes[i].name;
      EXPECT_EQ(g.nodes[i].m, dynamic.nodes[i].m) << g.nodes[i].name;
    }
    ASSERT_FALSE(g.notes.empty());
    EXPECT_NE(g.notes[0].find("fixed batch of"), std::string::npos) << g.notes[0];
  }
}

// A ViT as the TorchScript exporter writes it in training mode: reshape targets built from
// Shape -> Gather -> Unsqueeze -> Concat with an integer Div (folded at the batch), weights
// behind Transpose, Identity and Cast, the class token through Expand into a Concat, scalar
// constants of a written-out GELU.
TEST(OnnxImport, VitShapeChainsAndWeightsBehindTransposeCount) {
  const OpGraph g = load_onnx(path("tests/data/onnx/vit-tiny.onnx"));
  const double patch = 64 * 3 * 8 * 8 + 64, tokens = 64 + 17 * 64, norms = 3 * 128,
               attention = 4 * (64 * 64 + 64), mlp = (64 * 128 + 128) + (128 * 64 + 64),
               scales = 2 * 64, head = 64 * 10 + 10;
  EXPECT_EQ(g.parameters(), patch + tokens + norms + attention + mlp + scales + head);
  const double flops = 2.0 * 64 * 3 * 64 * 16 + 2.0 * 17 * 64 * 64 * 4 +
                       2 * 2.0 * 4 * 17 * 17 * 16 + 2 * 2.0 * 17 * 64 * 128 + 2.0 * 64 * 10;
  EXPECT_EQ(g.flops_per_sample(), flops);
  EXPECT_TRUE(g.notes.empty());
  int weighted = 0;
  for (const GraphNode& n : g.nodes) weighted += n.kind == NodeKind::matmul && n.weight;
  EXPECT_EQ(weighted, 7);  // q, k, v, out, two MLP layers, the head
}

TEST(OnnxImport, AWeightItCannotFollowIsSaid) {
  const OpGraph g = load_onnx(path("tests/data/onnx/computed-weight.onnx"));
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].k, 8);
  EXPECT_EQ(g.nodes[0].n, 4);
  EXPECT_EQ(g.parameters(), 0);
  ASSERT_EQ(g.notes.size(), 1u);
  EXPECT_NE(g.notes[0].find("1 weight operand (first: node 'mm_4') is computed in the graph"),
            std::string::npos)
      << g.notes[0];
}

void expect_error(const std::string& bytes, const char* needle) {
  try {
    parse_onnx(bytes, "x.onnx");
    ADD_FAILURE() << "no error for " << needle;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

TEST(OnnxImport, BadInputNamesTheFileAndTheNode) {
  const std::string resnet = bytes(path("data/onnx/resnet50.onnx"));
  expect_error("", "no nodes");
  expect_error("not an onnx file at all", "not a readable ONNX model");
  // Truncated: either unreadable, or a graph whose nodes read tensors nothing wrote.
  for (size_t cut : {resnet.size() / 3, resnet.size() / 2, resnet.size() - 7}) {
    try {
      parse_onnx(resnet.substr(0, cut), "x.onnx");
      ADD_FAILURE() << "a truncated file parsed, cut at " << cut;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("x.onnx: ", 0), 0u) << e.what();
    }
  }
  expect_error(bytes(path("tests/data/onnx/no-shape.onnx")),
               "node 'fancy_3' (FancyNorm) has a tensor 'fancy_3' whose shape");
  expect_error(bytes(path("tests/data/onnx/symbolic-dim.onnx")),
               "input 'input' dimension 2 is 'H'");
  EXPECT_THROW(load_onnx(path("data/onnx/missing.onnx")), InputError);
}

TEST(GraphWorkload, PricesDataParallelTrainingThroughEstimate) {
  const auto w = graph_workload(load_onnx(path("data/onnx/resnet50.onnx")));
  EXPECT_EQ(w->layers(), 53 + 1 + 53 + 49 + 16 + 1 + 1);  // convs, fc, bns, relus, adds, pools
  const Cluster c = load_cluster("dgx-a100", 8);
  EXPECT_TRUE(check_strategy(*w, c, parse_strategy("tp=2,mbs=32,gbs=256", 8)).has_value());
  const Strategy s = parse_strategy("dp=8,mbs=32,gbs=256,precision=fp16", 8);
  ASSERT_FALSE(check_strategy(*w, c, s).has_value());
  const Estimate e = estimate(*w, c, plan_of(s));
  ASSERT_TRUE(e.feasible) << e.reason;
  EXPECT_DOUBLE_EQ(e.model_flops,
                   3 * 256 * load_onnx(path("data/onnx/resnet50.onnx")).flops_per_sample());
  // Twice the batch per GPU: about twice the compute.
  const Estimate e2 =
      estimate(*w, c, plan_of(parse_strategy("dp=8,mbs=64,gbs=512,precision=fp16", 8)));
  EXPECT_GT(e2.step_time_s, 1.6 * e.step_time_s);
  EXPECT_LT(e2.step_time_s, 2.2 * e.step_time_s);
}

}  // namespace
}  // namespace shardcost
