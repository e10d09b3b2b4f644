#pragma once
// What the ONNX door (onnx_api.cpp) reads out of a model, as plain records: the nodes in file
// order with their integer attributes, and every tensor's shape inferred at batch 1 and at
// batch 2 (a tensor whose shape differs between the two carries the batch).
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/opgraph.h"

namespace shardcost {

// A small constant tensor: its shape and its values (integers held exactly up to 2^53).
struct ConstTensor {
  Dims dims;
  std::vector<double> values;
  bool floating = false;  // a float type (a float initializer, a Cast to float)
};

struct OnnxNode {
  std::string name, op_type, domain;
  std::vector<std::string> inputs, outputs;          // "" for an optional input left out
  std::map<std::string, std::vector<int64_t>> ints;  // INT and INTS attributes
  std::map<std::string, ConstTensor> tensors;        // small TENSOR attributes with values
};

struct OnnxRecords {
  std::string name;
  // The batch `one` was inferred at: 1, or the batch a static export fixed (shapes are read at
  // that batch, `two` at twice it); `static_batch` when the file fixed it.
  int64_t batch = 1;
  bool static_batch = false;
  std::vector<std::string> notes;  // what the reader noticed, for the user
  std::string input;               // the model's input tensor
  std::set<std::string> initializers;
  std::set<std::string> float_initializers;  // weights (fp32, fp16, bf16, fp64), not shapes
  std::vector<OnnxNode> nodes;
  std::map<std::string, Dims> one, two;  // shapes at `batch` and twice it (full); `two` may miss
};

// Throw InputError naming the file for anything unreadable.
OnnxRecords read_onnx(std::string_view bytes, std::string_view origin);
OnnxRecords read_onnx_file(std::string_view path);

// Builds the operator graph from the records (opgraph.cpp).
OpGraph build_graph(const OnnxRecords&, std::string_view origin);

}  // namespace shardcost
