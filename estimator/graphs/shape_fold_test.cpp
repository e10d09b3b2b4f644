#include "graphs/shape_fold.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace shardcost {
namespace {

OnnxNode node(const char* op, std::vector<std::string> in, const char* out,
              std::map<std::string, std::vector<int64_t>> ints = {}) {
  OnnxNode n;
  n.name = out;
  n.op_type = op;
  n.inputs = std::move(in);
  n.outputs = {out};
  n.ints = std::move(ints);
  return n;
}
ConstTensor ints(std::vector<double> v, Dims dims = {}) {
  if (dims.empty() && v.size() != 1) dims = {static_cast<int64_t>(v.size())};
  if (dims.empty()) dims = {1};
  return {dims, std::move(v), false};
}
ConstTensor scalar(double v) {
  return {{}, {v}, false};
}

// What PyTorch's TorchScript exporter writes for x.reshape(x.size(0), x.size(1) // heads, -1):
// the batch and a width read back from the tensor, an integer division, a concatenation.
TEST(ShapeFold, FoldsTheExportersReshapeTargetAtAFixedBatch) {
  std::map<std::string, Dims> shapes = {{"x", {6, 64, 4, 4}}};
  ConstMap known = {{"i0", scalar(0)},
                    {"i1", scalar(1)},
                    {"axes", ints({0})},
                    {"heads", ints({4})},
                    {"rest", ints({-1})}};
  std::vector<OnnxNode> nodes = {
      node("Shape", {"x"}, "s"),
      node("Gather", {"s", "i0"}, "n", {{"axis", {0}}}),
      node("Gather", {"s", "i1"}, "c", {{"axis", {0}}}),
      node("Unsqueeze", {"n", "axes"}, "n1"),
      node("Unsqueeze", {"c", "axes"}, "c1"),
      node("Div", {"c1", "heads"}, "per_head"),
      node("Concat", {"n1", "per_head", "rest"}, "target", {{"axis", {0}}}),
      node("Reshape", {"x", "target"}, "y"),  // an activation: never folded
  };
  const auto added = fold_shape_arithmetic(nodes, shapes, known);
  EXPECT_EQ(added, (std::vector<std::string>{"s", "n", "c", "n1", "c1", "per_head", "target"}));
  EXPECT_EQ(known.at("target").values, (std::vector<double>{6, 16, -1}));
  EXPECT_EQ(known.at("target").dims, (Dims{3}));
  EXPECT_EQ(known.at("n").dims, Dims{});
  EXPECT_FALSE(known.count("y"));
  // Nothing new the second time.
  EXPECT_TRUE(fold_shape_arithmetic(nodes, shapes, known).empty());
}

TEST(ShapeFold, SliceCastWhereAndConstantsFollowOnnxRules) {
  std::map<std::string, Dims> shapes = {{"x", {2, 3, 5}}};
  ConstMap known = {{"start", ints({1})},
                    {"end", ints({9.3e18})},  // INT64_MAX, "to the end", as a double
                    {"back", ints({-1})},
                    {"minus_one", ints({-1, -1, 7})},
                    {"ones", ints({1, 1, 1})}};
  OnnxNode constant = node("Constant", {}, "k");
  constant.ints["value_ints"] = {2, 3};
  OnnxNode fill = node("ConstantOfShape", {"k"}, "filled");
  fill.tensors["value"] = ConstTensor{{1}, {1.0}, true};
  std::vector<OnnxNode> nodes = {
      node("Shape", {"x"}, "s"),
      node("Slice", {"s", "start", "end"}, "tail"),
      node("Slice", {"s", "back", "start", "", "back"}, "reversed"),  // from the end back to 1
      node("Shape", {"x"}, "inner", {{"start", {1}}, {"end", {-1}}}),
      node("Cast", {"tail"}, "tail_f", {{"to", {1}}}),
      node("Div", {"tail_f", "start"}, "half"),
      node("Equal", {"minus_one", "back"}, "is_free"),
      node("Where", {"is_free", "ones", "minus_one"}, "expand_to"),
      constant,
      fill,
      node("Size", {"x"}, "elements"),
      node("Range", {"start", "end", "start"}, "too_long"),  // 2^63 numbers: left alone
      node("Softmax", {"s"}, "unknown"),
  };
  fold_shape_arithmetic(nodes, shapes, known);
  EXPECT_EQ(known.at("tail").values, (std::vector<double>{3, 5}));
  EXPECT_EQ(known.at("reversed").values, (std::vector<double>{5}));
  EXPECT_EQ(known.at("inner").values, (std::vector<double>{3}));
  EXPECT_TRUE(known.at("tail_f").floating);
  EXPECT_EQ(known.at("half").values, (std::vector<double>{3, 5}));
  EXPECT_EQ(known.at("expand_to").values, (std::vector<double>{1, 1, 7}));
  EXPECT_EQ(known.at("k").values, (std::vector<double>{2, 3}));
  EXPECT_EQ(known.at("filled").dims, (Dims{2, 3}));
  EXPECT_EQ(known.at("filled").values, std::vector<double>(6, 1.0));
  EXPECT_EQ(known.at("elements").values, (std::vector<double>{30}));
  EXPECT_FALSE(known.count("too_long"));
  EXPECT_FALSE(known.count("unknown"));
}

TEST(ShapeFold, LeavesWhatItCannotKnowToShapeInference) {
  // A shape with an unknown dimension, a division by zero, another domain's operator.
  std::map<std::string, Dims> shapes = {{"x", {-1, 3}}};
  ConstMap known = {{"a", ints({4})}, {"zero", ints({0})}};
  OnnxNode custom = node("Add", {"a", "a"}, "custom");
  custom.domain = "com.example";
  std::vector<OnnxNode> nodes = {node("Shape", {"x"}, "s"), node("Div", {"a", "zero"}, "q"), custom,
                                 node("Concat", {"a", "missing"}, "c")};
  EXPECT_TRUE(fold_shape_arithmetic(nodes, shapes, known).empty());
}

}  // namespace
}  // namespace shardcost
