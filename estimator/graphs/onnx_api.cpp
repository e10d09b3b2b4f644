// The one door to ONNX and protobuf (Debian: libonnx-dev, libprotobuf-dev): parse a model,
// infer its shapes at batch 1 and batch 2, and hand the operators to opgraph.cpp as plain
// records. Nothing else includes an onnx/ header.
#include <fmt/format.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <climits>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "graphs/onnx_records.h"
#include "shardcost/error.h"

namespace shardcost {
namespace {

// A tensor's shape from a type, or nullopt where any dimension is not a number (the input's
// batch symbol, in shapes the file gives for tensors inference cannot reach, is `batch`).
std::optional<Dims> dims_of(const onnx::TypeProto& type, const std::string& batch_symbol,
                            int64_t batch) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
  Dims d;
  for (const auto& dim : type.tensor_type().shape().dim()) {
    if (dim.has_dim_param() && !batch_symbol.empty() && dim.dim_param() == batch_symbol)
      d.push_back(batch);
    else if (!dim.has_dim_value() || dim.dim_value() < 0)
      return std::nullopt;
    else
      d.push_back(dim.dim_value());
  }
  return d;
}

// Every tensor's shape after inference with the graph input's batch set to `batch`.
std::map<std::string, Dims> infer(onnx::ModelProto model, int64_t batch, std::string_view origin) {
  auto* input = model.mutable_graph()->mutable_input(0);
  auto* shape = input->mutable_type()->mutable_tensor_type()->mutable_shape();
  const std::string symbol = shape->dim(0).has_dim_param() ? shape->dim(0).dim_param() : "";
  shape->mutable_dim(0)->set_dim_value(batch);
  try {
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
    throw InputError(
        fmt::format("{}: ONNX shape inference failed: {}; check the export "
                    "(onnx.checker.check_model) or export with static shapes",
                    origin, what));
  }
  std::map<std::string, Dims> shapes;
  const auto& g = model.graph();
  for (const auto& t : g.initializer()) shapes[t.name()] = Dims(t.dims().begin(), t.dims().end());
  for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
    for (const auto& v : *list)
      if (auto d = dims_of(v.type(), symbol, batch)) shapes[v.name()] = *d;
  return shapes;
}

}  // namespace

OnnxRecords read_onnx(std::string_view bytes, std::string_view origin) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw InputError(
        fmt::format("{}: not a readable ONNX model (protobuf parse failed: a "
                    "truncated file or another format); export it again with "
                    "torch.onnx.export",
                    origin));
  const auto& g = model.graph();
  if (g.node_size() == 0)
    throw InputError(
        fmt::format("{}: the ONNX graph has no nodes (a truncated file or an "
                    "empty export)",
                    origin));
  std::set<std::string> initializers, floats;
  for (const auto& t : g.initializer()) {
    initializers.insert(t.name());
    const auto type = t.data_type();
    if (type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::FLOAT16 ||
        type == onnx::TensorProto::BFLOAT16 || type == onnx::TensorProto::DOUBLE)
      floats.insert(t.name());
  }
  // The model's input: the first graph input that is not an initializer (old exporters list
  // weights as inputs too). It must come first for infer() to set its batch.
  int first = -1;
  for (int i = 0; i < g.input_size(); ++i)
    if (!initializers.count(g.input(i).name())) {
      first = i;
      break;
    }
  if (first < 0)
    throw InputError(fmt::format("{}: the ONNX graph has no input besides its weights", origin));
  if (first != 0) model.mutable_graph()->mutable_input()->SwapElements(0, first);
  const auto& in = model.graph().input(0);
  if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape() ||
      in.type().tensor_type().shape().dim_size() < 1)
    throw InputError(
        fmt::format("{}: input '{}' has no shape; export with a batch dimension "
                    "first (dynamic_axes={{'{}': {{0: 'N'}}}})",
                    origin, in.name(), in.name()));
  const auto& dims = in.type().tensor_type().shape().dim();
  for (int d = 1; d < dims.size(); ++d)
    if (!dims[d].has_dim_value() || dims[d].dim_value() < 1)
      throw InputError(fmt::format(
          "{}: input '{}' dimension {} is '{}', not a size: only the batch (dimension 0) may "
          "be symbolic; export with a fixed size",
          origin, in.name(), d, dims[d].has_dim_param() ? dims[d].dim_param() : "unset"));

  // Attributes ONNX 1.12's shape inference divides by (convPoolShapeInference): a zero or
  // negative stride, dilation, window or group would stop the process there.
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    static const std::set<std::string> windowed = {"Conv",        "ConvTranspose", "ConvInteger",
                                                   "QLinearConv", "MaxPool",       "AveragePool",
                                                   "LpPool",      "MaxUnpool"};
    if (!windowed.count(n.op_type())) continue;
    for (const auto& a : n.attribute()) {
      const std::string& key = a.name();
      const bool positive = key == "strides" || key == "dilations" || key == "kernel_shape" ||
                            key == "group" || key == "output_padding" || key == "pads";
      if (!positive) continue;
      const int64_t least = key == "output_padding" || key == "pads" ? 0 : 1;
      auto bad = [&](int64_t v) {
        if (v < least || v > (int64_t{1} << 40))
          throw InputError(
              fmt::format("{}: node '{}' ({}) has {}={}; it must be {} or more{}", origin,
                          n.name().empty() ? "#" + std::to_string(i) : n.name(), n.op_type(), key,
                          v, least, v > 0 ? " and at most 2^40" : ""));
      };
      if (a.type() == onnx::AttributeProto::INT) bad(a.i());
      if (a.type() == onnx::AttributeProto::INTS)
        for (int64_t v : a.ints()) bad(v);
    }
  }

  OnnxRecords r;
  r.name = g.name().empty() ? std::string(origin) : g.name();
  r.input = in.name();
  r.initializers = initializers;
  r.float_initializers = floats;
  r.one = infer(model, 1, origin);
  r.two = infer(model, 2, origin);
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    OnnxNode node;
    node.name = !n.name().empty() ? n.name() : n.output_size() > 0 ? n.output(0) : "";
    if (node.name.empty()) node.name = fmt::format("#{}", i);
    node.op_type = n.op_type();
    node.domain = n.domain();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    for (const auto& a : n.attribute()) {
      if (a.type() == onnx::AttributeProto::INT) node.ints[a.name()] = {a.i()};
      if (a.type() == onnx::AttributeProto::INTS)
        node.ints[a.name()] = std::vector<int64_t>(a.ints().begin(), a.ints().end());
    }
    r.nodes.push_back(std::move(node));
  }
  return r;
}

OnnxRecords read_onnx_file(std::string_view path) {
  std::ifstream f{std::string(path), std::ios::binary};
  if (!f) throw InputError(fmt::format("{}: cannot open the ONNX file", path));
  std::ostringstream s;
  s << f.rdbuf();
  return read_onnx(s.str(), path);
}

}  // namespace shardcost
