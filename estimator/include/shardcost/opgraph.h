#pragma once
// Operator graphs: any model as the operators it runs, with per-sample shapes (the batch
// dimension left out). Producers: the ONNX importer (load_onnx). Consumers: the layer-wise
// planner (shardcost/layerwise.h), split learning (shardcost/split_learning.h), and
// graph_workload, which lowers a graph to the transformers' engine (data and pipeline
// parallelism through estimate(), for library users). Formulas and limits: docs/operator-graphs.md.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/workload.h"

namespace shardcost {

// How an operator is priced.
//   conv     an implicit GEMM per group, as cuDNN runs it (depthwise ones: by bytes)
//   matmul   a GEMM: against a weight (rows of the activation x weight) or of two activations
//            (batched, as exported attention's scores and context)
//   memory   a memory-bound pass: bytes of its inputs and outputs (norms, pooling,
//            activations, elementwise, softmax, copies, gathers, and operators shardcost does
//            not know, which are listed)
//   view     no data moves (Reshape, Flatten, Squeeze, Identity, ...)
enum class NodeKind { conv, matmul, memory, view };

using Dims = std::vector<int64_t>;  // per sample: the batch dimension left out
// The product of d[from], d[from + 1], ... (1 for none): a shape's elements, a window's taps.
double product(const Dims& d, size_t from = 0);

struct GraphNode {
  std::string name;     // the ONNX node's name (or its first output's)
  std::string op_type;  // "Conv", "MatMul", "BatchNormalization", ...
  NodeKind kind = NodeKind::memory;
  std::vector<int> inputs;   // producers among the nodes (activation inputs only), in order
  bool reads_input = false;  // reads the model's input itself
  Dims out;                  // output shape per sample (the first output)
  Dims in;                   // first activation input's shape per sample
  // conv: channels, groups and geometry (spatial sizes of the output, kernel, stride,
  // dilation); a
  // transposed convolution runs as the data gradient of a convolution (col2im form).
  int64_t cin = 0, cout = 0, groups = 1;
  Dims out_spatial, in_spatial, kernel, stride, dilation;
  bool transposed = false;
  // matmul: per sample, `batch` independent products of [m x k] by [k x n]; `weight`: the
  // right operand is a parameter (m counts the rows of every sample's activation).
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool weight = false;
  double params = 0;        // trainable parameters the node holds
  double in_elements = 0;   // activation elements read per sample (every input)
  double out_elements = 0;  // elements written per sample
  bool unknown = false;     // an operator shardcost does not know: priced as a memory pass
  // What the operator keeps for its backward pass, per sample, as autograd saves it: a
  // convolution's or a weight product's activation input, a norm's input, ReLU's, a sigmoid's
  // or a softmax's output, a max pool's input and output, both operands of a product of
  // activations; an add, a view, a concatenation or an average pool keeps nothing. A tensor
  // two operators keep (a ReLU's output and the next convolution's input) is counted once:
  // by the first that keeps it as its input (which holds it in its own split), else by its
  // producer. Elements at the activations' width, dropout's one-byte masks apart
  // (docs/operator-graphs.md, "Memory").
  double kept_elements = 0;
  double kept_mask_bytes = 0;
  double kept_bytes(double element_bytes) const {
    return kept_elements * element_bytes + kept_mask_bytes;
  }
  double flops() const;  // forward FLOPs per sample
  bool depthwise() const { return kind == NodeKind::conv && cin == groups && groups > 1; }
};

struct OpGraph {
  std::string name;
  std::vector<GraphNode> nodes;  // topological order, as the file lists them
  Dims input;                    // the first graph input's shape per sample
  std::string source;            // the file it came from
  // What the reader noticed that the user should know: a batch fixed by a static export, a
  // weight operand it could not follow to an initializer (printed as notes).
  std::vector<std::string> notes;
  double parameters() const;
  double flops_per_sample() const;  // forward
  // Operator types priced as memory passes because shardcost does not know them, with counts.
  std::vector<std::pair<std::string, int>> unknown_ops() const;
};

// Throws InputError when `samples` samples make some tensor or GEMM operand of the graph larger
// than shardcost prices exactly (1e17 elements in a tensor, 4e18 in an operand product):
// `what` names the batch in the message ("--gbs 4096").
void check_sizes(const OpGraph&, double samples, std::string_view what);

// Reads an ONNX model (weights may be stripped: initializers with shapes and no values),
// infers every tensor's shape with a batch of one, and returns its operators. Throws
// InputError naming the file and the node for a malformed file, a graph without inputs, or an
// operator whose shapes cannot be inferred.
OpGraph load_onnx(std::string_view path);
OpGraph parse_onnx(std::string_view bytes, std::string_view origin);
bool is_onnx_path(std::string_view name_or_path);  // ends in .onnx

// The graph as a workload for estimate and rank's uniform plans: data parallelism, ZeRO and
// pipeline parallelism (each node one body unit a pipeline splits). Layer-wise splits (filter,
// channel, spatial) are the layer-wise planner's; check() refuses tp, cp and ep.
std::unique_ptr<Workload> graph_workload(const OpGraph&);

}  // namespace shardcost
