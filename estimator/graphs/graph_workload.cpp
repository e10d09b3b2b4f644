// An operator graph as a workload: every operator that moves data is one body block, so
// estimate prices data parallelism, ZeRO and pipelines of any graph exactly as it prices a
// transformer's (docs/operator-graphs.md). Splits inside an operator (filter, channel,
// spatial) are the layer-wise planner's.
#include <fmt/format.h>

#include <algorithm>

#include "shardcost/error.h"
#include "shardcost/opgraph.h"

namespace shardcost {
namespace {

class GraphWorkload final : public Workload {
 public:
  explicit GraphWorkload(OpGraph g) : g_(std::move(g)) {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (g_.nodes[i].kind != NodeKind::view) priced_.push_back(i);
    }
    if (priced_.empty())
      throw InputError(fmt::format("{}: every operator is a view; nothing to price", g_.name));
  }

  const std::string& name() const override { return g_.name; }
  double parameters() const override { return g_.parameters(); }
  // Forward, input-gradient and weight-gradient products: three times the forward FLOPs.
  double model_flops(int global_batch) const override {
    return 3.0 * g_.flops_per_sample() * global_batch;
  }
  double tokens_per_sample() const override { return 1; }
  int layers() const override { return static_cast<int>(priced_.size()); }

  std::optional<std::string> check(const Strategy& s) const override {
    if (s.tp != 1 || !s.stage_tp.empty() || s.etp > 1)
      return "tp>1 on an operator graph: filter, channel and spatial splits are the layer-wise "
             "planner's (rank --model FILE.onnx)";
    if (s.cp != 1 || s.cp_per_sequence()) return "cp>1 needs a transformer's sequence";
    if (s.ep != 1) return "ep>1 needs a mixture-of-experts model";
    if (s.lora > 0) return "lora is modelled for transformers (their attention and MLP linears)";
    if (s.sp) return "sp=true needs a transformer (its norms and residuals split the sequence)";
    if (s.recompute != Recompute::none)
      return "recomputation of operator graphs is not modelled; use recompute=none";
    if (s.schedule != PipeSchedule::one_f_one_b)
      return fmt::format("schedule={} is priced for transformers; use schedule=1f1b",
                         to_string(s.schedule));
    if (s.precision && is_quantized(*s.precision))
      return fmt::format("precision={} is priced for transformers; use fp32, tf32, fp16 or bf16",
                         to_string(*s.precision));
    // Sizes stay exact in 64-bit integers.
    try {
      check_sizes(g_, s.mbs, fmt::format("mbs={}", s.mbs));
    } catch (const InputError& e) {
      return e.what();
    }
    return std::nullopt;
  }

  double model_flops_of(double samples, double) const override {
    return 3.0 * g_.flops_per_sample() * samples;
  }

  void graph_of(const Strategy& s, AttentionKernel, const MicroBatch& mb,
                Graph& out) const override {
    out.reset(priced_.size() + 1);
    const Numerics num = numerics(s);
    const double e = num.element_bytes, b = mb.sequences;
    double boundary = 0;
    for (size_t i = 0; i < priced_.size(); ++i) {
      const GraphNode& n = g_.nodes[priced_[i]];
      Block& blk = out.blocks[i];
      blk.name = n.name.c_str();
      Op op;
      op.name = n.op_type.c_str();
      op.dtype = num.linear;
      if (n.kind == NodeKind::conv && !n.depthwise()) {
        op.kind = OpKind::gemm;
        const int64_t g = n.groups, k = static_cast<int64_t>(product(n.kernel));
        const auto samples = static_cast<int64_t>(b);
        op.gemm = n.transposed ? GemmShape{samples * static_cast<int64_t>(product(n.in_spatial)),
                                           n.cout / g * k, n.cin / g, g}
                               : GemmShape{samples * static_cast<int64_t>(product(n.out_spatial)),
                                           n.cout / g, n.cin / g * k, g};
      } else if (n.kind == NodeKind::matmul) {
        op.kind = OpKind::gemm;
        const auto samples = static_cast<int64_t>(b);
        op.gemm = n.weight ? GemmShape{samples * n.m, n.n, n.k, n.batch}
                           : GemmShape{n.m, n.n, n.k, samples * n.batch};
      } else {
        // Memory passes (depthwise convolutions too): read the inputs and write the output
        // forward; backward reads the output gradient and the saved input, writes the input's.
        op.kind = OpKind::memory;
        op.bytes = (n.in_elements + n.out_elements) * e * b + (n.depthwise() ? n.params * e : 0);
        op.backward_bytes = (2 * n.in_elements + n.out_elements) * e * b;
      }
      blk.ops.push_back(op);
      blk.dense_params = n.params;
      blk.param_tensors = n.params > 0 ? 2 : 0;
      blk.largest_tensor_params = n.params;
      // Kept for backward: what autograd saves of it (GraphNode::kept_elements).
      const double kept = n.kept_bytes(e) * b;
      blk.kept_bytes = {kept, kept, kept};
      boundary = std::max(boundary, n.out_elements * e * b);
    }
    // The loss over the last operator's output (softmax cross-entropy: read, write, and the
    // gradient), on the last stage.
    Block& loss = out.blocks.back();
    loss.name = "loss";
    loss.pin = Block::Pin::last_stage;
    Op ce;
    ce.name = "loss";
    ce.kind = OpKind::memory;
    const double logits = g_.nodes.back().out_elements * b;
    ce.bytes = 2 * logits * e;
    ce.backward_bytes = 2 * logits * e;
    loss.ops.push_back(ce);
    // One figure holds for every stage boundary: the largest activation any operator writes
    // (docs/operator-graphs.md; the layer-wise planner prices each boundary's own).
    out.boundary_bytes = boundary;
  }

  std::vector<int> tp_candidates(int) const override { return {1}; }
  std::vector<int> cp_candidates(int) const override { return {1}; }
  std::vector<int> ep_candidates() const override { return {1}; }
  bool has_selective_recompute(AttentionKernel, unsigned) const override { return false; }

 private:
  OpGraph g_;
  std::vector<size_t> priced_;  // nodes that are blocks (views move nothing)
};

}  // namespace

std::unique_ptr<Workload> graph_workload(const OpGraph& g) {
  if (g.nodes.empty()) throw InputError(fmt::format("{}: the graph has no operators", g.name));
  return std::make_unique<GraphWorkload>(g);
}

}  // namespace shardcost
