#pragma once
// Shape arithmetic evaluated at a fixed batch (shape_fold.cpp). Exporters read sizes back from
// tensors (Shape -> Gather -> Unsqueeze -> Concat, integer Div and Mul) to build Reshape and
// Expand targets; ONNX's shape inference follows only part of such chains. At a fixed batch
// every input shape is known, so the chains are constants: folding them lets inference reach
// the rest of the graph. Plain records only; the ONNX door (onnx_api.cpp) converts.
#include <map>
#include <string>
#include <vector>

#include "graphs/onnx_records.h"

namespace shardcost {

using ConstMap = std::map<std::string, ConstTensor>;

// A folded value as an integer: NaN is 0, and past int64 saturates (INT64_MAX, Slice's "to the
// end", is 2^63 as a double, which a plain cast would overflow).
int64_t saturated_int(double v);

// The largest constant folded (elements): shape arithmetic is a few numbers per tensor.
inline constexpr size_t kMaxFoldElements = 4096;

// Walks `nodes` in order and evaluates each one whose inputs are all in `known` (Shape and
// Size need only their input's shape in `shapes`), adding its output to `known`. Returns the
// outputs added, in order. Operators: Shape, Size, Constant, ConstantOfShape, Identity, Cast,
// Gather, Unsqueeze, Squeeze, Concat, Slice, Reshape, Range, Add, Sub, Mul, Div, Mod, Max, Min,
// Neg, Abs, Floor, Ceil, Equal, Less, Greater, Where; anything else, or a result over
// kMaxFoldElements, is left to shape inference.
std::vector<std::string> fold_shape_arithmetic(const std::vector<OnnxNode>& nodes,
                                               const std::map<std::string, Dims>& shapes,
                                               ConstMap& known);

}  // namespace shardcost
