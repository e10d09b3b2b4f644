// An operator graph's estimate and rank (--model FILE.onnx): what its keys say, the options
// of the layer-wise planner, and the planner's plans (docs/operator-graphs.md).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "request_inputs.h"
#include "shardcost/error.h"

namespace shardcost::requests {
namespace {

// What a graph's keys say: "NAME,gbs=N[,precision=T]" (estimate --strategy) or
// "[precision=T]" (rank --fix, the batch given by --gbs).
struct Keys {
  std::string name;
  int gbs = 0;
  std::optional<DType> precision;
};
Keys parse_keys(std::string_view text, bool named) {
  Keys k;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item(text.substr(start, end - start));
    start = end + 1;
    if (item.empty()) continue;
    if (item.rfind("precision=", 0) == 0) {
      k.precision = parse_dtype(item.substr(10));
    } else if (named && item.rfind("gbs=", 0) == 0) {
      const auto [ptr, ec] = std::from_chars(item.data() + 4, item.data() + item.size(), k.gbs);
      if (ec != std::errc() || ptr != item.data() + item.size() || k.gbs < 1)
        throw InputError(fmt::format("--strategy {}: gbs must be a positive whole number", item));
    } else if (named && k.name.empty() && item.find('=') == std::string::npos) {
      k.name = item;
    } else {
      throw InputError(fmt::format(
          "'{}': operator graphs take {}precision=fp32|tf32|fp16|bf16 (tp, pp, dp and the other "
          "keys are transformer strategies)",
          item,
          named ? "a strategy name (data, spatial, filter, channel, pipeline, data+spatial, "
                  "data+filter, data+channel, data+pipeline), gbs= and "
                : ""));
    }
  }
  if (named && k.gbs < 1)
    throw InputError("--strategy: give the global batch, e.g. \"data,gbs=256\"");
  if (named && k.name.empty())
    throw InputError("--strategy: name a uniform strategy, e.g. data or data+filter");
  return k;
}

LayerwiseOptions layerwise_options(const PlanRequest& a, const Cluster& c, int global_batch,
                                   std::optional<DType> precision, const CostSource* costs) {
  const Software sw = software_of(a);
  Strategy st;
  st.precision = precision;
  std::string why;
  const auto type = resolved_precision(st, sw, c.groups.at(0).device, &why);
  if (!type) throw InputError(why);
  if (is_quantized(*type))
    throw InputError(
        fmt::format("precision={} is priced for transformers; use fp32, tf32, fp16 "
                    "or bf16",
                    to_string(*type)));
  LayerwiseOptions o;
  o.precision = *type;
  o.tf32_matmul = sw.tf32_matmul;
  o.tf32_conv = sw.tf32_conv;
  o.conv_winograd = sw.conv_winograd;
  o.host_forward_launch_s = sw.cuda_graphs ? 0 : sw.host_forward_launch_s;
  o.host_backward_launch_s = sw.cuda_graphs ? 0 : sw.host_backward_launch_s;
  o.global_batch = global_batch;
  o.epoch_samples = a.epoch_samples;
  o.loading = loading_of(a);
  o.optimizer = a.optimizer;
  o.costs = costs;
  o.overlap_grad_reduce = sw.overlap_grad_reduce;
  o.memory_fixed_bytes = sw.memory_fixed_bytes;
  o.memory_fragmentation = sw.memory_fragmentation;
  if (sw.grad_bucket_params > 0) o.grad_bucket_bytes = sw.grad_bucket_params * 4;
  return o;
}

}  // namespace

GraphReport estimate_graph(const PlanRequest& a, const Cluster& c, const CostSource* costs) {
  const Keys keys = parse_keys(a.strategy, true);
  GraphReport r{load_onnx(a.model), {}, {}, {}, a.top};
  r.options = layerwise_options(a, c, keys.gbs, keys.precision, costs);
  r.plan = price_uniform(r.graph, c, r.options, keys.name);
  return r;
}

GraphReport rank_graph(const PlanRequest& a, const Cluster& c, const CostSource* costs) {
  GraphReport r{load_onnx(a.model), {}, {}, {}, a.top};
  r.options = layerwise_options(a, c, a.gbs, parse_keys(a.fix, false).precision, costs);
  r.search = plan_layerwise(r.graph, c, r.options);
  return r;
}

}  // namespace shardcost::requests
