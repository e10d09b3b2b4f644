// A second model family, to keep the layers honest: a stack of Megatron-style MLP pairs.
// Everything family-specific about it is here; the plan, memory, schedule, pricing and
// search read its graph exactly as they read a transformer's.
#include <fmt/format.h>

#include <numeric>

#include "shardcost/error.h"
#include "shardcost/workload.h"

namespace shardcost {
namespace {

class Mlp final : public Workload {
 public:
  explicit Mlp(MlpSpec spec) : spec_(std::move(spec)) {
    if (spec_.width < 1 || spec_.hidden.empty() || spec_.tokens_per_sample < 1)
      throw InputError(
          fmt::format("MLP '{}' needs a width, at least one hidden size and at "
                      "least one token per sample",
                      spec_.name));
    for (int h : spec_.hidden) {
      if (h < 1)
        throw InputError(fmt::format("MLP '{}': hidden sizes must be positive", spec_.name));
      products_ += static_cast<double>(spec_.width) * h;
    }
  }

  const std::string& name() const override { return spec_.name; }
  // Two weight matrices per pair, no biases.
  double parameters() const override { return 2 * products_; }
  // Forward: two GEMMs of 2*rows*width*hidden FLOPs per pair; backward twice that.
  double model_flops(int global_batch) const override {
    return 3.0 * 4.0 * global_batch * spec_.tokens_per_sample * products_;
  }
  double tokens_per_sample() const override { return spec_.tokens_per_sample; }
  int layers() const override { return static_cast<int>(spec_.hidden.size()); }

  std::optional<std::string> check(const Strategy& s) const override {
    for (int h : spec_.hidden)
      if (h % s.tp != 0) return fmt::format("tp={} does not divide the hidden size {}", s.tp, h);
    if (s.cp != 1) return "cp>1 needs a sequence model with attention";
    if (s.ep != 1) return "ep>1 needs a mixture-of-experts model";
    if (s.lora > 0) return "lora is modelled for transformers (their attention and MLP linears)";
    if (s.sp) return "sp=true needs a transformer (its norms and residuals split the sequence)";
    if (s.precision && is_quantized(*s.precision))
      return fmt::format(
          "precision={} is priced for transformers (Transformer Engine's quantized linears); use "
          "bf16",
          to_string(*s.precision));
    return std::nullopt;
  }

  double model_flops_of(double tokens, double) const override {
    return 3.0 * 4.0 * tokens * products_;
  }

  void graph_of(const Strategy& s, AttentionKernel, const MicroBatch& mb, Graph& g) const override {
    g.reset(spec_.hidden.size() + 1);
    const double rows = mb.tokens;
    const double width = spec_.width;
    const Numerics num = numerics(s);
    const double e = num.element_bytes;  // bytes of one activation element
    for (size_t i = 0; i < spec_.hidden.size(); ++i) {
      const double local = static_cast<double>(spec_.hidden[i]) / s.tp;
      Block& b = g.blocks[i];
      b.name = "mlp_pair";
      if (s.tp > 1) {
        // Megatron's f: identity forward, all-reduce of the input gradient backward.
        Op enter = collective("tp_input_grad_all_reduce", std::nullopt, CollectiveOp::all_reduce,
                              e * rows * width);
        enter.before_column_parallel = true;
        b.ops.push_back(enter);
      }
      b.ops.push_back(gemm("fc_up", rows, local, width, num.linear));
      Op act;
      act.name = "gelu";
      act.kind = OpKind::memory;
      act.bytes = rows * local * 2 * e;           // read x, write y
      act.backward_bytes = rows * local * 3 * e;  // read x and dy, write dx
      b.ops.push_back(act);
      b.ops.push_back(gemm("fc_down", rows, width, local, num.linear));
      if (s.tp > 1)
        b.ops.push_back(
            collective("tp_all_reduce", CollectiveOp::all_reduce, std::nullopt, e * rows * width));
      b.dense_params = 2 * width * local;
      // Kept for backward: the pair's input, the activation's input and output.
      const double kept = e * rows * width + 2 * e * rows * local;
      b.kept_bytes = {kept, kept, e * rows * width};
    }
    Block& loss = g.blocks.back();
    loss.name = "loss";
    loss.pin = Block::Pin::last_stage;
    Op mse;
    mse.name = "mse_loss";
    mse.kind = OpKind::memory;
    mse.bytes = rows * width * 2 * e;  // read prediction and target
    mse.backward_bytes = rows * width * e;
    loss.ops.push_back(mse);
    g.boundary_bytes = e * rows * width;
  }

  std::vector<int> tp_candidates(int max_tp) const override {
    int common = 0;
    for (int h : spec_.hidden) common = std::gcd(common, h);
    std::vector<int> v;
    for (int t = 1; t <= max_tp; ++t)
      if (common % t == 0) v.push_back(t);
    return v;
  }
  std::vector<int> cp_candidates(int) const override { return {1}; }
  std::vector<int> ep_candidates() const override { return {1}; }
  bool has_selective_recompute(AttentionKernel, unsigned) const override { return false; }

 private:
  static Op gemm(const char* name, double m, double n, double k, DType dtype) {
    Op op;
    op.name = name;
    op.kind = OpKind::gemm;
    op.dtype = dtype;
    op.gemm = {static_cast<int64_t>(m), static_cast<int64_t>(n), static_cast<int64_t>(k), 1};
    return op;
  }
  static Op collective(const char* name, std::optional<CollectiveOp> fwd,
                       std::optional<CollectiveOp> bwd, double bytes) {
    Op op;
    op.name = name;
    op.kind = OpKind::collective;
    op.axis = Axis::tp;
    op.op = fwd;
    op.backward_op = bwd;
    op.bytes = bytes;
    return op;
  }

  MlpSpec spec_;
  double products_ = 0;  // sum of width * hidden over the pairs
};

}  // namespace

std::unique_ptr<Workload> mlp_workload(const MlpSpec& spec) {
  return std::make_unique<Mlp>(spec);
}

}  // namespace shardcost
