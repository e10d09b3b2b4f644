// ONNX records to an operator graph: which nodes compute on activations, how each is priced,
// its per-sample shapes and the parameters it holds (docs/operator-graphs.md).
#include "shardcost/opgraph.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "graphs/onnx_records.h"
#include "shardcost/error.h"

namespace shardcost {
namespace {

// What an operator keeps for its backward pass (GraphNode::kept_elements), as PyTorch's
// autograd and Chainer save it: elementwise functions whose derivative is a function of their
// result keep the result; those of their input keep the input; a window's maximum keeps the
// input and the output (cuDNN's pooling backward reads both); sums, moves and averages keep
// nothing but shapes; a product or quotient keeps its operands where a gradient needs them
// (Builder::keeps).
enum class Keeps { nothing, first_input, inputs, output, input_and_output, mask, operands };

// Memory-bound operators shardcost knows, with what each keeps (anything else that touches
// activations is priced the same way, keeps its inputs and is listed as unknown).
const std::map<std::string_view, Keeps> kMemoryOps = {
    {"BatchNormalization", Keeps::first_input},
    {"LayerNormalization", Keeps::first_input},
    {"InstanceNormalization", Keeps::first_input},
    {"GroupNormalization", Keeps::first_input},
    {"LpNormalization", Keeps::first_input},
    {"MaxPool", Keeps::input_and_output},
    {"AveragePool", Keeps::nothing},
    {"GlobalAveragePool", Keeps::nothing},
    {"GlobalMaxPool", Keeps::input_and_output},
    {"LpPool", Keeps::input_and_output},
    {"Relu", Keeps::output},
    {"LeakyRelu", Keeps::inputs},
    {"PRelu", Keeps::inputs},
    {"Elu", Keeps::inputs},
    {"Selu", Keeps::inputs},
    {"Celu", Keeps::inputs},
    {"Sigmoid", Keeps::output},
    {"HardSigmoid", Keeps::inputs},
    {"HardSwish", Keeps::inputs},
    {"Tanh", Keeps::output},
    {"Softplus", Keeps::inputs},
    {"Softsign", Keeps::inputs},
    {"Gelu", Keeps::inputs},
    {"Erf", Keeps::inputs},
    {"Mish", Keeps::inputs},
    {"Clip", Keeps::inputs},
    {"Add", Keeps::nothing},
    {"Sub", Keeps::nothing},
    {"Mul", Keeps::operands},
    {"Div", Keeps::operands},
    {"Pow", Keeps::inputs},
    {"Sqrt", Keeps::output},
    {"Exp", Keeps::output},
    {"Log", Keeps::inputs},
    {"Neg", Keeps::nothing},
    {"Abs", Keeps::inputs},
    {"Reciprocal", Keeps::output},
    {"Where", Keeps::nothing},
    {"Max", Keeps::inputs},
    {"Min", Keeps::inputs},
    {"Sum", Keeps::nothing},
    {"Mean", Keeps::nothing},
    {"Cast", Keeps::nothing},
    {"Dropout", Keeps::mask},
    {"Softmax", Keeps::output},
    {"LogSoftmax", Keeps::output},
    {"Concat", Keeps::nothing},
    {"Split", Keeps::nothing},
    {"Slice", Keeps::nothing},
    {"Transpose", Keeps::nothing},
    {"Pad", Keeps::nothing},
    {"Resize", Keeps::nothing},
    {"Upsample", Keeps::nothing},
    {"Gather", Keeps::nothing},
    {"GatherElements", Keeps::nothing},
    {"Expand", Keeps::nothing},
    {"Tile", Keeps::nothing},
    {"ReduceMean", Keeps::nothing},
    {"ReduceSum", Keeps::nothing},
    {"ReduceMax", Keeps::input_and_output},
    {"ReduceMin", Keeps::input_and_output},
    {"ReduceL2", Keeps::input_and_output},
    {"Equal", Keeps::nothing},
    {"Less", Keeps::nothing},
    {"Greater", Keeps::nothing},
    {"Not", Keeps::nothing},
    {"And", Keeps::nothing},
    {"Or", Keeps::nothing},
    {"Trilu", Keeps::nothing},
    {"CumSum", Keeps::nothing},
    {"Einsum", Keeps::inputs},
    {"SoftmaxCrossEntropyLoss", Keeps::inputs},
    {"NegativeLogLikelihoodLoss", Keeps::inputs},
    {"ArgMax", Keeps::nothing},
    {"TopK", Keeps::nothing},
    {"DepthToSpace", Keeps::nothing},
    {"SpaceToDepth", Keeps::nothing},
};

// Operators that only relabel a tensor's shape.
const std::set<std::string_view> kViewOps = {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                             "Identity"};
// Operators that compute on shapes, never on activations.
const std::set<std::string_view> kMetaOps = {"Shape",           "Size",  "Constant",
                                             "ConstantOfShape", "Range", "EyeLike"};

// Operators a weight passes through on its way to the operator that uses it (a training-mode
// export keeps Linear's weight behind a Transpose; autocast writes a Cast to fp16; a class
// token is expanded to the batch): the parameters are the initializer's.
const std::set<std::string_view> kWeightPaths = {"Transpose", "Identity", "Cast",
                                                 "Expand",    "Reshape",  "Unsqueeze",
                                                 "Squeeze",   "Flatten",  "Tile"};

constexpr double kMaxElements = 1e12;

class Builder {
 public:
  Builder(const OnnxRecords& r, std::string_view origin) : r_(r), origin_(origin) {}

  OpGraph build() {
    OpGraph g;
    g.name = r_.name;
    g.source = std::string(origin_);
    std::set<std::string> known = r_.initializers;
    known.insert(r_.input);
    active_.insert(r_.input);
    producer_[r_.input] = -1;
    g.input = per_sample(r_.input).value_or(Dims{});
    for (const OnnxNode& n : r_.nodes) {
      for (const std::string& in : n.inputs)
        if (!in.empty() && !known.count(in))
          fail(n, fmt::format("reads '{}', which no earlier node writes and which is neither an "
                              "input nor an initializer (a truncated or unsorted graph)",
                              in));
      known.insert(n.outputs.begin(), n.outputs.end());
      std::vector<std::string> acts;
      for (const std::string& in : n.inputs)
        if (active_.count(in)) acts.push_back(in);
      if (acts.empty() || kMetaOps.count(n.op_type)) {  // shape arithmetic, constants, weights
        if (kWeightPaths.count(n.op_type) && !n.inputs.empty() && n.outputs.size() == 1) {
          const std::string root = weight_root(n.inputs[0]);
          if (r_.float_initializers.count(root)) weight_of_[n.outputs[0]] = root;
        }
        continue;
      }
      if (n.outputs.empty() || n.outputs[0].empty()) fail(n, "has no output");
      GraphNode node = make(n, acts);
      keep(n, acts, node, g.nodes.size());
      const int index = static_cast<int>(g.nodes.size());
      for (const std::string& in : acts)
        if (int p = producer_.at(in); p >= 0)
          node.inputs.push_back(p);
        else
          node.reads_input = true;
      for (const std::string& out : n.outputs)
        if (!out.empty()) {
          active_.insert(out);
          producer_[out] = index;
        }
      g.nodes.push_back(std::move(node));
    }
    if (g.nodes.empty())
      throw InputError(fmt::format("{}: no operator of the graph computes on its input '{}'",
                                   origin_, r_.input));
    // Each kept tensor counted once: by the first operator that keeps it as an input (which
    // holds it in its own layout, gathered where a split gathers it), else by its producer.
    std::map<std::string, size_t> owner;
    for (const Kept& k : kept_)
      if (k.input && !owner.count(k.tensor)) owner[k.tensor] = k.node;
    for (const Kept& k : kept_)
      if (!k.input && !owner.count(k.tensor)) owner[k.tensor] = k.node;
    for (const auto& [tensor, node] : owner) g.nodes[node].kept_elements += kept_elements_[tensor];
    g.notes = r_.notes;
    if (!uncounted_.empty())
      g.notes.push_back(fmt::format(
          "{} weight operand{} (first: node '{}') {} computed in the graph and not followed to "
          "an initializer: {} parameters are not counted",
          uncounted_.size(), uncounted_.size() == 1 ? "" : "s", uncounted_.front(),
          uncounted_.size() == 1 ? "is" : "are", uncounted_.size() == 1 ? "its" : "their"));
    return g;
  }

 private:
  [[noreturn]] void fail(const OnnxNode& n, std::string_view what) const {
    throw InputError(fmt::format("{}: node '{}' ({}) {}", origin_, n.name, n.op_type, what));
  }

  // A tensor's shape per sample, from its shape at the records' batch B (1 unless a static
  // export fixed it) and at 2B: the dimension that is B and doubles is left out; in a static
  // export, else a first dimension of B (a constant in the graph may hold the batch, so 2B
  // can double another dimension or not infer at all); else a dimension that doubles is
  // divided by B (the batch folded into it); in a static export, else the first dimension is
  // divided by B. A dynamic file's tensor that none of these finds stays whole. nullopt when
  // unknown.
  std::optional<Dims> per_sample(const std::string& t) const {
    auto a = r_.one.find(t), b = r_.two.find(t);
    if (a == r_.one.end()) return std::nullopt;
    Dims d = a->second;
    const int64_t batch = r_.batch;
    const bool both = b != r_.two.end() && b->second.size() == d.size();
    auto take = [&](size_t i) {
      if (d[i] == batch)
        d.erase(d.begin() + static_cast<long>(i));
      else
        d[i] /= batch;
      return d;
    };
    if (both)
      for (size_t i = 0; i < d.size(); ++i)
        if (d[i] == batch && b->second[i] == 2 * batch) return take(i);
    if (r_.static_batch && !d.empty() && d[0] == batch) return take(0);
    if (both)
      for (size_t i = 0; i < d.size(); ++i)
        if (b->second[i] == 2 * d[i] && d[i] % batch == 0) return take(i);
    if (r_.static_batch && !d.empty() && d[0] % batch == 0) return take(0);
    return d;
  }
  // A tensor's shape per sample, checked as full() checks it (the batch's 1 changes neither
  // the sizes nor the elements).
  Dims shape(const OnnxNode& n, const std::string& t) const {
    full(n, t);
    return *per_sample(t);
  }
  // A tensor's whole shape at batch 1 (the batch included).
  Dims full(const OnnxNode& n, const std::string& t) const {
    auto it = r_.one.find(t);
    if (it == r_.one.end())
      fail(n, fmt::format("has a tensor '{}' whose shape ONNX shape inference could not work "
                          "out (an operator ONNX does not define, or shape arithmetic shardcost "
                          "does not fold); add value_info for it to the file",
                          t));
    sane(n, t, it->second);
    return it->second;
  }
  // Sizes shardcost can price: every dimension at least 1, at most 1e12 elements a tensor.
  void sane(const OnnxNode& n, const std::string& t, const Dims& d) const {
    for (int64_t x : d)
      if (x < 1)
        fail(n, fmt::format("has a tensor '{}' with a dimension of {}; every size must be at "
                            "least 1",
                            t, x));
    if (product(d) > kMaxElements)
      fail(n, fmt::format("has a tensor '{}' of {:.3g} elements per sample; shardcost prices "
                          "tensors up to 1e12",
                          t, product(d)));
  }
  Dims weight_shape(const OnnxNode& n, size_t input) const {
    if (input >= n.inputs.size() || n.inputs[input].empty())
      fail(n, fmt::format("has no input {} (its weight)", input + 1));
    auto it = r_.one.find(n.inputs[input]);
    if (it == r_.one.end())
      fail(n, fmt::format("has a weight '{}' of unknown shape", n.inputs[input]));
    sane(n, n.inputs[input], it->second);
    return it->second;
  }
  int64_t attr(const OnnxNode& n, const char* key, int64_t fallback) const {
    auto it = n.ints.find(key);
    return it == n.ints.end() || it->second.empty() ? fallback : it->second[0];
  }
  // The initializer a tensor is (or reaches through kWeightPaths), else the tensor itself.
  std::string weight_root(const std::string& t) const {
    auto it = weight_of_.find(t);
    return it == weight_of_.end() ? t : it->second;
  }
  // Trainable weights among the node's inputs (the given positions), each initializer counted
  // once in the graph; `least`: the fewest elements a weight has (scalar constants of a
  // written-out GELU or a scale are not trained).
  double take_params(const OnnxNode& n, std::initializer_list<size_t> positions, double least = 1) {
    double p = 0;
    for (size_t i : positions) {
      if (i >= n.inputs.size() || n.inputs[i].empty()) continue;
      const std::string t = weight_root(n.inputs[i]);
      if (!r_.float_initializers.count(t)) continue;
      sane(n, t, r_.one.at(t));
      const double elements = product(r_.one.at(t));
      if (elements < least || !counted_.insert(t).second) continue;
      p += elements;
    }
    return p;
  }
  // Which inputs of a memory-bound operator are trained: a norm's scale and bias, an
  // embedding's table, a learned bias, position table, slope or LayerScale added or multiplied
  // in, a class token concatenated. Constants (a division's scale, Resize's scales, Clip's
  // bounds, the scalars of a written-out GELU) are not.
  double memory_params(const OnnxNode& n) {
    const std::string& op = n.op_type;
    if (op.find("Normalization") != std::string::npos) return take_params(n, {1, 2});
    if (op == "Gather") return take_params(n, {0});
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "PRelu")
      return take_params(n, {0, 1}, 2);
    if (op == "Concat") {
      double p = 0;
      for (size_t i = 0; i < n.inputs.size(); ++i) p += take_params(n, {i}, 2);
      return p;
    }
    return 0;
  }

  GraphNode make(const OnnxNode& n, const std::vector<std::string>& acts) {
    GraphNode node;
    node.name = n.name;
    node.op_type = n.op_type;
    node.in = shape(n, acts[0]);
    node.out = shape(n, n.outputs[0]);
    for (const std::string& a : acts) node.in_elements += product(shape(n, a));
    for (const std::string& o : n.outputs)
      if (!o.empty()) node.out_elements += product(shape(n, o));
    const bool std_domain = n.domain.empty() || n.domain == "ai.onnx";
    if (std_domain && (n.op_type == "Conv" || n.op_type == "ConvTranspose")) {
      conv(n, node);
    } else if (std_domain && (n.op_type == "MatMul" || n.op_type == "Gemm")) {
      matmul(n, node, acts);
    } else if (std_domain && kViewOps.count(n.op_type)) {
      node.kind = NodeKind::view;
    } else {
      node.kind = NodeKind::memory;
      node.unknown = !std_domain || !kMemoryOps.count(n.op_type);
      node.params = std_domain ? memory_params(n) : 0;
      // Pooling windows: their halo under a spatial split.
      if (auto k = n.ints.find("kernel_shape"); k != n.ints.end() && !k->second.empty()) {
        node.kernel = k->second;
        node.stride = Dims(node.kernel.size(), 1);
        node.dilation = Dims(node.kernel.size(), 1);
        if (auto st = n.ints.find("strides");
            st != n.ints.end() && st->second.size() == node.kernel.size())
          node.stride = st->second;
        for (int64_t x : node.kernel)
          if (x < 1) fail(n, "has a window size below 1");
        for (int64_t x : node.stride)
          if (x < 1) fail(n, "has a stride below 1");
      }
    }
    return node;
  }

  Keeps keeps(const OnnxNode& n, const GraphNode& node, size_t activations) const {
    if (node.kind == NodeKind::view) return Keeps::nothing;
    if (node.kind == NodeKind::conv) return Keeps::first_input;  // the weight gradient's
    if (node.kind == NodeKind::matmul || node.unknown) return Keeps::inputs;
    const Keeps k = kMemoryOps.at(n.op_type);
    if (k != Keeps::operands) return k;
    // A product keeps the other operand for each one's gradient: a constant scale keeps no
    // activation, a trained one (LayerScale) the activation its gradient multiplies; a
    // quotient by a constant keeps nothing.
    const bool divisor = n.op_type == "Div" && n.inputs.size() > 1 && active_.count(n.inputs[1]);
    return activations > 1 || node.params > 0 || divisor ? Keeps::inputs : Keeps::nothing;
  }

  // Records what the operator (node `index` of the graph) keeps; build() counts each tensor
  // once.
  void keep(const OnnxNode& n, const std::vector<std::string>& acts, GraphNode& node,
            size_t index) {
    auto add = [&](const std::string& t, bool input = true) {
      kept_.push_back({t, index, input});
      kept_elements_[t] = product(shape(n, t));
    };
    switch (keeps(n, node, acts.size())) {
      case Keeps::nothing:
        break;
      case Keeps::first_input:
        add(acts[0]);
        break;
      case Keeps::inputs:
      case Keeps::operands:  // keeps() resolves it to inputs or nothing
        for (const std::string& t : acts) add(t);
        break;
      case Keeps::output:
        add(n.outputs[0], false);
        break;
      case Keeps::input_and_output:
        add(acts[0]);
        add(n.outputs[0], false);
        break;
      case Keeps::mask:  // one byte an element (PyTorch's bool mask)
        node.kept_mask_bytes = product(node.out);
        break;
    }
  }

  void conv(const OnnxNode& n, GraphNode& node) {
    node.kind = NodeKind::conv;
    node.transposed = n.op_type == "ConvTranspose";
    const Dims w = weight_shape(n, 1);
    if (!active_.count(n.inputs[0]))
      fail(n, "has a weight as its first input; a convolution's first input is the activation");
    const Dims x = full(n, n.inputs[0]), y = full(n, n.outputs[0]);
    if (w.size() < 3 || x.size() != w.size() || y.size() != w.size())
      fail(n, fmt::format("has input, weight and output ranks {}, {}, {}; a convolution needs "
                          "N x C x spatial tensors and a C x C x kernel weight of one rank",
                          x.size(), w.size(), y.size()));
    node.groups = attr(n, "group", 1);
    node.cin = x[1];
    node.cout = y[1];
    if (node.groups < 1 || node.cin % node.groups != 0 || node.cout % node.groups != 0)
      fail(n, fmt::format("has group={} that does not divide its {} input and {} output channels",
                          node.groups, node.cin, node.cout));
    node.kernel.assign(w.begin() + 2, w.end());
    node.in_spatial.assign(x.begin() + 2, x.end());
    node.out_spatial.assign(y.begin() + 2, y.end());
    node.stride = Dims(node.kernel.size(), 1);
    if (auto it = n.ints.find("strides");
        it != n.ints.end() && it->second.size() == node.stride.size())
      node.stride = it->second;
    node.dilation = Dims(node.kernel.size(), 1);
    if (auto it = n.ints.find("dilations");
        it != n.ints.end() && it->second.size() == node.dilation.size())
      node.dilation = it->second;
    for (size_t d = 0; d < node.kernel.size(); ++d)
      if (node.stride[d] < 1 || node.dilation[d] < 1) fail(n, "has a stride or dilation below 1");
    node.params = take_params(n, {1, 2});
    if (!r_.float_initializers.count(weight_root(n.inputs[1]))) uncounted_.push_back(n.name);
  }

  void matmul(const OnnxNode& n, GraphNode& node, const std::vector<std::string>& acts) {
    node.kind = NodeKind::matmul;
    const std::string& a = n.inputs.at(0);
    const std::string& b = n.inputs.size() > 1 ? n.inputs[1] : a;
    const bool a_act = active_.count(a) > 0, b_act = active_.count(b) > 0;
    if (a_act && b_act) {
      // Two activations: batched products, as exported attention's scores and context.
      const Dims y = node.out, x = shape(n, a);
      if (y.size() < 2 || x.empty()) fail(n, "multiplies tensors of rank below 2");
      node.m = y[y.size() - 2];
      node.n = y.back();
      node.k = x.back();
      node.batch = static_cast<int64_t>(product(y) / (static_cast<double>(node.m) * node.n));
      if (node.batch < 1 || static_cast<double>(node.batch) * node.m * node.n != product(y))
        fail(n, "has an output that is not a batch of m x n products");
      return;
    }
    node.weight = true;
    const bool gemm = n.op_type == "Gemm";
    const size_t wi = a_act ? 1 : 0;
    Dims w = weight_shape(n, wi);
    if (w.size() != 2 && gemm) fail(n, "has a weight that is not a matrix");
    if (w.empty()) fail(n, "has a weight of rank 0");
    // A vector weight is a matrix of one column (or row): its dimension drops from the output.
    if (w.size() == 1) w = a_act ? Dims{w[0], 1} : Dims{1, w[0]};
    const bool trans = gemm && attr(n, a_act ? "transB" : "transA", 0) != 0;
    const int64_t rows = w[w.size() - 2], cols = w.back();
    // Normalised so that m counts the activation's rows: X[m x k] W[k x n], `batch` weights.
    node.k = a_act ? (trans ? cols : rows) : (trans ? rows : cols);
    node.n = a_act ? (trans ? rows : cols) : (trans ? cols : rows);
    node.batch = static_cast<int64_t>(product(w) / (static_cast<double>(rows) * cols));
    const double out = product(node.out);
    node.m = static_cast<int64_t>(out / (static_cast<double>(node.n) * node.batch));
    if (node.m < 1 || static_cast<double>(node.m) * node.n * node.batch != out ||
        std::fmod(product(shape(n, acts[0])), static_cast<double>(node.k)) != 0)
      fail(n, fmt::format("has an activation of {:.0f} elements per sample that is not rows of "
                          "its weight's {} inputs",
                          product(shape(n, acts[0])), node.k));
    node.params = gemm ? take_params(n, {wi, 2}) : take_params(n, {wi});
    if (!r_.float_initializers.count(weight_root(n.inputs[wi]))) uncounted_.push_back(n.name);
  }

  const OnnxRecords& r_;
  std::string_view origin_;
  std::set<std::string> active_;         // tensors that carry the batch
  std::map<std::string, int> producer_;  // activation -> its node (-1: the model's input)
  std::set<std::string> counted_;        // initializers counted as parameters
  struct Kept {
    std::string tensor;
    size_t node;
    bool input;  // kept as its input (else as its output)
  };
  std::vector<Kept> kept_;                        // activations kept for a backward pass
  std::map<std::string, double> kept_elements_;   // their elements per sample
  std::map<std::string, std::string> weight_of_;  // a weight's view -> its initializer
  std::vector<std::string> uncounted_;  // weight-operand nodes whose weight is not followed
};

}  // namespace

double product(const Dims& d, size_t from) {
  double p = 1;
  for (size_t i = from; i < d.size(); ++i) p *= static_cast<double>(d[i]);
  return p;
}

double GraphNode::flops() const {
  switch (kind) {
    case NodeKind::conv: {
      const double per_group =
          static_cast<double>(cout / groups) * (cin / groups) * product(kernel);
      return 2.0 * per_group * groups * product(transposed ? in_spatial : out_spatial);
    }
    case NodeKind::matmul:
      return 2.0 * m * n * k * batch;
    default:
      return 0;
  }
}

double OpGraph::parameters() const {
  return std::accumulate(nodes.begin(), nodes.end(), 0.0,
                         [](double s, const GraphNode& n) { return s + n.params; });
}
double OpGraph::flops_per_sample() const {
  return std::accumulate(nodes.begin(), nodes.end(), 0.0,
                         [](double s, const GraphNode& n) { return s + n.flops(); });
}
std::vector<std::pair<std::string, int>> OpGraph::unknown_ops() const {
  std::map<std::string, int> counts;
  for (const GraphNode& n : nodes)
    if (n.unknown) ++counts[n.op_type];
  return {counts.begin(), counts.end()};
}

void check_sizes(const OpGraph& g, double samples, std::string_view what) {
  for (const GraphNode& n : g.nodes) {
    double largest = std::max(n.in_elements, n.out_elements) * samples;
    if (n.kind == NodeKind::conv || n.kind == NodeKind::matmul) {
      // The GEMM's operands and output: m x k, k x n, m x n (m grows with the samples).
      double m = 0, k = 0, cols = 0;
      if (n.kind == NodeKind::matmul) {
        m = static_cast<double>(n.m) * samples * n.batch;
        k = static_cast<double>(n.k);
        cols = static_cast<double>(n.n);
      } else {
        m = product(n.transposed ? n.in_spatial : n.out_spatial) * samples * n.groups;
        k = static_cast<double>(n.cin) * product(n.kernel);
        cols = static_cast<double>(n.cout) * product(n.kernel);
      }
      largest = std::max({largest, m * k / 40, k * cols / 40, m * cols / 40});
    }
    if (largest > 1e17)
      throw InputError(fmt::format(
          "{}: {} samples of {} make operator '{}' work on {:.3g} elements; shardcost prices up "
          "to 1e17, use a smaller batch",
          what, samples, g.name, n.name, largest));
  }
}

bool is_onnx_path(std::string_view s) {
  return s.size() > 5 && s.substr(s.size() - 5) == ".onnx";
}

OpGraph parse_onnx(std::string_view bytes, std::string_view origin) {
  return build_graph(read_onnx(bytes, origin), origin);
}
OpGraph load_onnx(std::string_view path) {
  return build_graph(read_onnx_file(path), path);
}
OpGraph build_graph(const OnnxRecords& r, std::string_view origin) {
  return Builder(r, origin).build();
}

}  // namespace shardcost
