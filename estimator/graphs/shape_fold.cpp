// Shape arithmetic at a fixed batch, evaluated on small constant tensors (shape_fold.h).
#include "graphs/shape_fold.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <optional>

namespace shardcost {

int64_t saturated_int(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2e18) return INT64_MAX;
  if (v <= -9.2e18) return INT64_MIN;
  return static_cast<int64_t>(v);
}

namespace {

using Result = std::optional<ConstTensor>;

size_t count(const Dims& d) {
  double p = product(d);
  return p > static_cast<double>(kMaxFoldElements) ? kMaxFoldElements + 1 : static_cast<size_t>(p);
}
bool is_float_type(int64_t onnx_type) {  // FLOAT, FLOAT16, DOUBLE, BFLOAT16
  return onnx_type == 1 || onnx_type == 10 || onnx_type == 11 || onnx_type == 16;
}
int64_t attr(const OnnxNode& n, const char* key, int64_t fallback) {
  auto it = n.ints.find(key);
  return it == n.ints.end() || it->second.empty() ? fallback : it->second[0];
}
std::vector<int64_t> ints_of(const ConstTensor& t) {
  std::vector<int64_t> out;
  for (double v : t.values) out.push_back(saturated_int(v));
  return out;
}
// An axis list from the attribute (older opsets) or from input `at` (opset 13 on).
std::optional<std::vector<int64_t>> axes_of(const OnnxNode& n, size_t at, const ConstMap& k) {
  if (auto it = n.ints.find("axes"); it != n.ints.end()) return it->second;
  if (at < n.inputs.size() && !n.inputs[at].empty()) {
    auto c = k.find(n.inputs[at]);
    if (c == k.end()) return std::nullopt;
    return ints_of(c->second);
  }
  return std::vector<int64_t>{};
}
bool wrap(int64_t& axis, int64_t rank) {
  if (axis < 0) axis += rank;
  return axis >= 0 && axis < rank;
}

// Elementwise with numpy broadcasting of equal ranks or a scalar-like operand.
Result binary(const OnnxNode& n, const ConstTensor& a, const ConstTensor& b) {
  const ConstTensor& big = a.values.size() >= b.values.size() ? a : b;
  if (a.values.size() != b.values.size() && a.values.size() != 1 && b.values.size() != 1)
    return std::nullopt;
  ConstTensor out{big.dims, {}, a.floating || b.floating};
  const std::string& op = n.op_type;
  const bool logic = op == "Equal" || op == "Less" || op == "Greater";
  if (logic) out.floating = false;
  for (size_t i = 0; i < big.values.size(); ++i) {
    const double x = a.values[a.values.size() == 1 ? 0 : i];
    const double y = b.values[b.values.size() == 1 ? 0 : i];
    double v = 0;
    if (op == "Add")
      v = x + y;
    else if (op == "Sub")
      v = x - y;
    else if (op == "Mul")
      v = x * y;
    else if (op == "Max")
      v = std::max(x, y);
    else if (op == "Min")
      v = std::min(x, y);
    else if (op == "Equal")
      v = x == y;
    else if (op == "Less")
      v = x < y;
    else if (op == "Greater")
      v = x > y;
    else if (op == "Div" || op == "Mod") {
      if (y == 0) return std::nullopt;
      if (op == "Div")
        v = out.floating ? x / y : std::trunc(x / y);
      else
        v = out.floating ? std::fmod(x, y) : x - y * std::floor(x / y);
    }
    out.values.push_back(v);
  }
  return out;
}

Result unary(const OnnxNode& n, ConstTensor a) {
  for (double& v : a.values) {
    if (n.op_type == "Neg") v = -v;
    if (n.op_type == "Abs") v = std::fabs(v);
    if (n.op_type == "Floor") v = std::floor(v);
    if (n.op_type == "Ceil") v = std::ceil(v);
  }
  if (n.op_type == "Cast") {
    a.floating = is_float_type(attr(n, "to", 7));
    if (!a.floating)
      for (double& v : a.values) v = std::trunc(v);
  }
  return a;
}

Result gather(const OnnxNode& n, const ConstTensor& data, const ConstTensor& idx) {
  if (data.dims.size() != 1 || attr(n, "axis", 0) != 0) return std::nullopt;
  ConstTensor out{idx.dims, {}, data.floating};
  const auto size = static_cast<int64_t>(data.values.size());
  for (double i : idx.values) {
    int64_t at = saturated_int(i);
    if (!wrap(at, size)) return std::nullopt;
    out.values.push_back(data.values[static_cast<size_t>(at)]);
  }
  return out;
}

Result slice(const OnnxNode& n, const ConstTensor& data, const ConstMap& k) {
  if (data.dims.size() != 1) return std::nullopt;
  auto get = [&](size_t at, const char* key) -> std::optional<std::vector<int64_t>> {
    if (auto it = n.ints.find(key); it != n.ints.end()) return it->second;  // opset < 10
    if (at >= n.inputs.size() || n.inputs[at].empty()) return std::vector<int64_t>{};
    auto c = k.find(n.inputs[at]);
    if (c == k.end()) return std::nullopt;
    return ints_of(c->second);
  };
  auto starts = get(1, "starts"), ends = get(2, "ends"), axes = get(3, "axes"),
       steps = get(4, "steps");
  if (!starts || !ends || !axes || !steps || starts->size() != 1 || ends->size() != 1)
    return std::nullopt;
  if (!axes->empty() && (*axes)[0] != 0 && (*axes)[0] != -1) return std::nullopt;
  const int64_t step = steps->empty() ? 1 : (*steps)[0];
  const auto size = static_cast<int64_t>(data.values.size());
  if (step == 0) return std::nullopt;
  // ONNX's rule: negatives count from the end, then clamp to [0, size] going forward, to
  // [0, size - 1] (starts) and [-1, size - 1] (ends) going backward.
  auto clamp = [&](int64_t v, bool end) {
    if (v < 0) v = v <= INT64_MIN + size ? -1 : v + size;
    if (step > 0) return std::clamp<int64_t>(v, 0, size);
    return std::clamp<int64_t>(v, end ? -1 : 0, size - 1);
  };
  const int64_t s = clamp((*starts)[0], false), e = clamp((*ends)[0], true);
  ConstTensor out{{0}, {}, data.floating};
  for (int64_t i = s; step > 0 ? i < e : i > e; i += step)
    out.values.push_back(data.values[static_cast<size_t>(i)]);
  out.dims[0] = static_cast<int64_t>(out.values.size());
  return out;
}

Result reshape(const OnnxNode& n, ConstTensor data, const ConstTensor& target) {
  Dims d;
  int64_t infer_at = -1;
  double known = 1;
  for (size_t i = 0; i < target.values.size(); ++i) {
    int64_t v = saturated_int(target.values[i]);
    if (v == 0 && attr(n, "allowzero", 0) == 0) {
      if (i >= data.dims.size()) return std::nullopt;
      v = data.dims[i];
    }
    if (v == -1) {
      if (infer_at >= 0) return std::nullopt;
      infer_at = static_cast<int64_t>(i);
      v = 1;
    } else if (v < 0) {
      return std::nullopt;
    }
    known *= static_cast<double>(v);
    d.push_back(v);
  }
  const auto total = static_cast<double>(data.values.size());
  if (infer_at >= 0) {
    if (known == 0 || std::fmod(total, known) != 0) return std::nullopt;
    d[static_cast<size_t>(infer_at)] = static_cast<int64_t>(total / known);
  } else if (known != total) {
    return std::nullopt;
  }
  data.dims = d;
  return data;
}

Result evaluate(const OnnxNode& n, const std::map<std::string, Dims>& shapes, const ConstMap& k) {
  const std::string& op = n.op_type;
  if (!n.domain.empty() && n.domain != "ai.onnx") return std::nullopt;
  if (op == "Shape" || op == "Size") {
    if (n.inputs.empty()) return std::nullopt;
    auto s = shapes.find(n.inputs[0]);
    if (s == shapes.end()) return std::nullopt;
    for (int64_t x : s->second)
      if (x < 0) return std::nullopt;
    if (op == "Size") return ConstTensor{{}, {product(s->second)}, false};
    const auto rank = static_cast<int64_t>(s->second.size());
    int64_t start = attr(n, "start", 0), end = attr(n, "end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    ConstTensor out{{end - start}, {}, false};
    for (int64_t i = start; i < end; ++i)
      out.values.push_back(static_cast<double>(s->second[static_cast<size_t>(i)]));
    return out;
  }
  if (op == "Constant") {
    if (auto t = n.tensors.find("value"); t != n.tensors.end()) return t->second;
    if (auto v = n.ints.find("value_int"); v != n.ints.end())
      return ConstTensor{{}, {static_cast<double>(v->second.at(0))}, false};
    if (auto v = n.ints.find("value_ints"); v != n.ints.end())
      return ConstTensor{{static_cast<int64_t>(v->second.size())},
                         std::vector<double>(v->second.begin(), v->second.end()),
                         false};
    return std::nullopt;
  }
  // Everything else needs its (non-empty) inputs known.
  std::vector<const ConstTensor*> in;
  for (const std::string& name : n.inputs) {
    if (name.empty()) {
      in.push_back(nullptr);
      continue;
    }
    auto it = k.find(name);
    if (it == k.end() && op != "Slice" && op != "Unsqueeze" && op != "Squeeze") return std::nullopt;
    in.push_back(it == k.end() ? nullptr : &it->second);
  }
  if (in.empty() || !in[0]) return std::nullopt;
  const ConstTensor& a = *in[0];
  if (op == "Identity" || op == "Cast" || op == "Neg" || op == "Abs" || op == "Floor" ||
      op == "Ceil")
    return unary(n, a);
  if (op == "ConstantOfShape") {
    ConstTensor out{{}, {}, false};
    for (double v : a.values) out.dims.push_back(saturated_int(v));
    for (int64_t x : out.dims)
      if (x < 0) return std::nullopt;
    if (count(out.dims) > kMaxFoldElements) return std::nullopt;
    double fill = 0;
    if (auto t = n.tensors.find("value"); t != n.tensors.end() && !t->second.values.empty()) {
      fill = t->second.values[0];
      out.floating = t->second.floating;
    }
    out.values.assign(count(out.dims), fill);
    return out;
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    auto axes = axes_of(n, 1, k);
    if (!axes) return std::nullopt;
    ConstTensor out = a;
    if (op == "Unsqueeze") {
      const auto rank = static_cast<int64_t>(a.dims.size() + axes->size());
      std::vector<int64_t> at = *axes;
      for (int64_t& x : at)
        if (!wrap(x, rank)) return std::nullopt;
      std::sort(at.begin(), at.end());
      for (int64_t x : at) out.dims.insert(out.dims.begin() + x, 1);
    } else {
      Dims d;
      const auto rank = static_cast<int64_t>(a.dims.size());
      std::vector<int64_t> at = *axes;
      for (int64_t& x : at)
        if (!wrap(x, rank)) return std::nullopt;
      for (int64_t i = 0; i < rank; ++i) {
        const bool drop = at.empty() ? a.dims[static_cast<size_t>(i)] == 1
                                     : std::count(at.begin(), at.end(), i) > 0;
        if (!drop) d.push_back(a.dims[static_cast<size_t>(i)]);
      }
      out.dims = d;
    }
    return out;
  }
  if (op == "Concat") {
    ConstTensor out{{0}, {}, false};
    for (const ConstTensor* t : in) {
      if (!t || t->dims.size() != 1) return std::nullopt;
      out.values.insert(out.values.end(), t->values.begin(), t->values.end());
      out.floating = out.floating || t->floating;
    }
    out.dims[0] = static_cast<int64_t>(out.values.size());
    return out;
  }
  if (op == "Gather" && in.size() == 2 && in[1]) return gather(n, a, *in[1]);
  if (op == "Slice") return slice(n, a, k);
  if (op == "Reshape" && in.size() == 2 && in[1]) return reshape(n, a, *in[1]);
  if (op == "Range" && in.size() == 3 && in[1] && in[2]) {
    const double start = a.values.at(0), limit = in[1]->values.at(0), delta = in[2]->values.at(0);
    if (delta == 0) return std::nullopt;
    const double steps = std::max(0.0, std::ceil((limit - start) / delta));
    if (steps > static_cast<double>(kMaxFoldElements)) return std::nullopt;
    ConstTensor out{{static_cast<int64_t>(steps)}, {}, a.floating};
    for (int64_t i = 0; i < static_cast<int64_t>(steps); ++i)
      out.values.push_back(start + static_cast<double>(i) * delta);
    return out;
  }
  if (op == "Where" && in.size() == 3 && in[1] && in[2]) {
    const size_t size = std::max({a.values.size(), in[1]->values.size(), in[2]->values.size()});
    ConstTensor out{a.values.size() == size        ? a.dims
                    : in[1]->values.size() == size ? in[1]->dims
                                                   : in[2]->dims,
                    {},
                    in[1]->floating || in[2]->floating};
    for (const ConstTensor* t : {&a, in[1], in[2]})
      if (t->values.size() != size && t->values.size() != 1) return std::nullopt;
    auto at = [](const ConstTensor& t, size_t i) { return t.values[t.values.size() == 1 ? 0 : i]; };
    for (size_t i = 0; i < size; ++i)
      out.values.push_back(at(a, i) != 0 ? at(*in[1], i) : at(*in[2], i));
    return out;
  }
  static const char* const kBinary[] = {"Add", "Sub", "Mul",   "Div",  "Mod",
                                        "Max", "Min", "Equal", "Less", "Greater"};
  if (in.size() == 2 && in[1] &&
      std::find(std::begin(kBinary), std::end(kBinary), op) != std::end(kBinary))
    return binary(n, a, *in[1]);
  return std::nullopt;
}

}  // namespace

std::vector<std::string> fold_shape_arithmetic(const std::vector<OnnxNode>& nodes,
                                               const std::map<std::string, Dims>& shapes,
                                               ConstMap& known) {
  std::vector<std::string> added;
  for (const OnnxNode& n : nodes) {
    if (n.outputs.size() != 1 || n.outputs[0].empty() || known.count(n.outputs[0])) continue;
    Result r = evaluate(n, shapes, known);
    if (!r || r->values.size() > kMaxFoldElements || count(r->dims) != r->values.size()) continue;
    known[n.outputs[0]] = std::move(*r);
    added.push_back(n.outputs[0]);
  }
  return added;
}

}  // namespace shardcost
