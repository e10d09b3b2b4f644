// The one door to ONNX and protobuf (Debian: libonnx-dev, libprotobuf-dev): parse a model,
// infer its shapes at batch 1 and batch 2 (a static export: at its batch and twice it), folding
// shape arithmetic at each (shape_fold.cpp, on plain records), and hand the operators to
// opgraph.cpp as plain records. Nothing else includes an onnx/ header.
#include <fmt/format.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <climits>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "graphs/onnx_records.h"
#include "graphs/shape_fold.h"
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

// A small tensor's values (shape arithmetic's constants); nullopt for a weight stored without
// values, a large tensor or a type shape arithmetic does not use.
std::optional<ConstTensor> const_of(const onnx::TensorProto& t) {
  ConstTensor c;
  c.dims.assign(t.dims().begin(), t.dims().end());
  for (int64_t d : c.dims)
    if (d < 0) return std::nullopt;
  const double n = product(c.dims);
  if (n > static_cast<double>(kMaxFoldElements) || t.has_data_location()) return std::nullopt;
  const auto count = static_cast<size_t>(n);
  const std::string& raw = t.raw_data();
  auto from_raw = [&](auto zero) {
    using T = decltype(zero);
    if (raw.size() != count * sizeof(T)) return false;
    for (size_t i = 0; i < count; ++i) {
      T v;
      std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
      c.values.push_back(static_cast<double>(v));
    }
    return true;
  };
  auto from = [&](const auto& field) {
    if (static_cast<size_t>(field.size()) != count) return false;
    for (auto v : field) c.values.push_back(static_cast<double>(v));
    return true;
  };
  bool ok = false;
  switch (t.data_type()) {
    case onnx::TensorProto::INT64:
      ok = t.has_raw_data() ? from_raw(int64_t{}) : from(t.int64_data());
      break;
    case onnx::TensorProto::INT32:
      ok = t.has_raw_data() ? from_raw(int32_t{}) : from(t.int32_data());
      break;
    case onnx::TensorProto::FLOAT:
      c.floating = true;
      ok = t.has_raw_data() ? from_raw(float{}) : from(t.float_data());
      break;
    case onnx::TensorProto::DOUBLE:
      c.floating = true;
      ok = t.has_raw_data() ? from_raw(double{}) : from(t.double_data());
      break;
    default:
      break;
  }
  if (!ok) return std::nullopt;
  return c;
}

onnx::TensorProto tensor_of(const std::string& name, const ConstTensor& c) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(c.floating ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT64);
  for (int64_t d : c.dims) t.add_dims(d);
  for (double v : c.values)
    if (c.floating)
      t.add_float_data(static_cast<float>(v));
    else
      t.add_int64_data(saturated_int(v));
  return t;
}

OnnxNode node_of(const onnx::NodeProto& n, int index) {
  OnnxNode node;
  node.name = !n.name().empty() ? n.name() : n.output_size() > 0 ? n.output(0) : "";
  if (node.name.empty()) node.name = fmt::format("#{}", index);
  node.op_type = n.op_type();
  node.domain = n.domain();
  node.inputs.assign(n.input().begin(), n.input().end());
  node.outputs.assign(n.output().begin(), n.output().end());
  for (const auto& a : n.attribute()) {
    if (a.type() == onnx::AttributeProto::INT) node.ints[a.name()] = {a.i()};
    if (a.type() == onnx::AttributeProto::INTS)
      node.ints[a.name()] = std::vector<int64_t>(a.ints().begin(), a.ints().end());
    if (a.type() == onnx::AttributeProto::TENSOR)
      if (auto c = const_of(a.t())) node.tensors[a.name()] = *c;
  }
  return node;
}

// Every tensor's shape with the graph input's batch set to `batch`. `stored` is the batch a
// static export fixed (0 for a symbolic one): shapes the file gives at it are set to `batch`.
// Shape arithmetic the inference cannot follow is folded at this batch (shape_fold.h) and
// inference run again, until nothing more folds.
std::map<std::string, Dims> infer(onnx::ModelProto model, int64_t batch, int64_t stored,
                                  std::string_view origin) {
  auto* input = model.mutable_graph()->mutable_input(0);
  auto* shape = input->mutable_type()->mutable_tensor_type()->mutable_shape();
  const std::string symbol = shape->dim(0).has_dim_param() ? shape->dim(0).dim_param() : "";
  shape->mutable_dim(0)->set_dim_value(batch);
  if (stored > 0)
    for (auto& v : *model.mutable_graph()->mutable_value_info())
      if (auto* s = v.mutable_type()->mutable_tensor_type()->mutable_shape();
          s->dim_size() > 0 && s->dim(0).has_dim_value() && s->dim(0).dim_value() == stored)
        s->mutable_dim(0)->set_dim_value(batch);
  ConstMap known;
  for (const auto& t : model.graph().initializer())
    if (auto c = const_of(t)) known[t.name()] = *c;
  std::map<std::string, Dims> shapes;
  // Each round folds at least one node, so the rounds end; the bound keeps a pathological
  // chain (one fold a round through thousands of nodes) from running away.
  for (int round = 0; round < 256; ++round) {
    try {
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                         onnx::ShapeInferenceOptions(false, 0, true));
    } catch (const std::exception& e) {
      std::string what = e.what();
      if (auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
      throw InputError(
          fmt::format("{}: ONNX shape inference failed at batch {}: {}; check the export "
                      "(onnx.checker.check_model)",
                      origin, batch, what));
    }
    shapes.clear();
    const auto& g = model.graph();
    for (const auto& t : g.initializer()) shapes[t.name()] = Dims(t.dims().begin(), t.dims().end());
    for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
      for (const auto& v : *list)
        if (auto d = dims_of(v.type(), symbol, batch)) shapes[v.name()] = *d;
    std::vector<OnnxNode> nodes;
    for (int i = 0; i < g.node_size(); ++i) nodes.push_back(node_of(g.node(i), i));
    const std::vector<std::string> folded = fold_shape_arithmetic(nodes, shapes, known);
    if (folded.empty()) break;
    // The folded nodes become initializers holding their values.
    const std::set<std::string> gone(folded.begin(), folded.end());
    auto* graph = model.mutable_graph();
    google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
    for (auto& n : *graph->mutable_node())
      if (!(n.output_size() == 1 && gone.count(n.output(0)))) kept.Add()->Swap(&n);
    graph->mutable_node()->Swap(&kept);
    for (const std::string& name : folded) *graph->add_initializer() = tensor_of(name, known[name]);
  }
  return shapes;
}

// Shapes a static export stores for tensors inference computes (value_info, the outputs) are
// at the file's batch and would contradict inference at another one. Kept: the shapes of
// outputs of operators ONNX does not define, which inference cannot work out.
void drop_stale_shapes(onnx::ModelProto& model) {
  auto* g = model.mutable_graph();
  std::set<std::string> custom;
  for (const auto& n : g->node())
    if (!n.domain().empty() && n.domain() != "ai.onnx")
      custom.insert(n.output().begin(), n.output().end());
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
  for (auto& v : *g->mutable_value_info())
    if (custom.count(v.name())) kept.Add()->Swap(&v);
  g->mutable_value_info()->Swap(&kept);
  for (auto& o : *g->mutable_output())
    if (!custom.count(o.name())) o.mutable_type()->mutable_tensor_type()->clear_shape();
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
  // A static export (torch.onnx.export's default) fixes the batch, and every shape the file
  // stores is at that batch: shapes are read there, per sample divided by it, and the stale
  // stored shapes dropped before inference at twice it (which only says where the batch sits;
  // a constant that holds the batch can stop it, and then the first dimension is the batch).
  const auto& batch_dim = in.type().tensor_type().shape().dim(0);
  const int64_t stored = batch_dim.has_dim_value() ? batch_dim.dim_value() : 0;
  if (stored > (int64_t{1} << 30))
    throw InputError(
        fmt::format("{}: input '{}' has a batch of {}; shardcost reads batches up "
                    "to 2^30",
                    origin, in.name(), stored));
  if (stored > 0) {
    drop_stale_shapes(model);
    r.batch = stored;
    r.static_batch = true;
  }
  r.one = infer(model, stored > 0 ? stored : 1, stored, origin);
  try {
    r.two = infer(model, stored > 0 ? 2 * stored : 2, stored, origin);
  } catch (const InputError&) {
    if (stored == 0) throw;
    r.two.clear();
    r.notes.push_back(fmt::format(
        "the graph does not infer at batch {} (a constant holds the batch {}); the first "
        "dimension of each activation is taken as its batch",
        2 * stored, stored));
  }
  if (stored > 0)
    r.notes.insert(r.notes.begin(),
                   fmt::format("input '{}' has a fixed batch of {} (a static export): shapes are "
                               "read at that batch and priced per sample; export with a dynamic "
                               "batch to be sure (docs/operator-graphs.md)",
                               in.name(), stored));
  for (int i = 0; i < g.node_size(); ++i) r.nodes.push_back(node_of(g.node(i), i));
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
