#include "layerwise/split_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "shardcost/error.h"

namespace shardcost {
namespace {

int64_t up(double a, double b) {
  return static_cast<int64_t>(std::ceil(a / b));
}

// Where an operator's channels and first spatial dimension (its rows, for a matmul) sit.
struct Layout {
  double channels_in = 1, channels_out = 1, extent_in = 1, extent_out = 1;
};
// A memory-bound operator's tensor: C x spatial... (rank 3 and up), rows x features (rank 2).
void tensor_layout(const Dims& d, double& channels, double& extent) {
  if (d.size() >= 3) {
    channels = static_cast<double>(d[0]);
    extent = static_cast<double>(d[1]);
  } else if (d.size() == 2) {
    extent = static_cast<double>(d[0]);
    channels = static_cast<double>(d[1]);
  } else {
    channels = d.empty() ? 1 : static_cast<double>(d[0]);
    extent = 1;
  }
}
Layout layout(const GraphNode& n) {
  Layout l;
  if (n.kind == NodeKind::conv) {
    l.channels_in = static_cast<double>(n.cin);
    l.channels_out = static_cast<double>(n.cout);
    l.extent_in = static_cast<double>(n.in_spatial.at(0));
    l.extent_out = static_cast<double>(n.out_spatial.at(0));
  } else if (n.kind == NodeKind::matmul) {
    l.channels_in = static_cast<double>(n.k);
    l.channels_out = static_cast<double>(n.n);
    l.extent_in = l.extent_out = static_cast<double>(n.m);
  } else {
    tensor_layout(n.in, l.channels_in, l.extent_in);
    tensor_layout(n.out, l.channels_out, l.extent_out);
  }
  return l;
}
bool is_elementwise(const GraphNode& n) {
  static const char* const kinds[] = {
      "Relu", "LeakyRelu", "PRelu", "Elu",   "Selu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
      "Gelu", "Erf",       "Clip",  "Add",   "Sub",  "Mul",     "Div",         "Pow",       "Sqrt",
      "Exp",  "Neg",       "Abs",   "Where", "Cast", "Dropout", "Mish",        "Softplus"};
  return !n.unknown && std::find(std::begin(kinds), std::end(kinds), n.op_type) != std::end(kinds);
}
bool is_norm(const GraphNode& n) {
  return n.op_type.find("Normalization") != std::string::npos;
}
bool splits_weights(const GraphNode& n) {
  return (n.kind == NodeKind::conv && !n.depthwise()) || (n.kind == NodeKind::matmul && n.weight);
}

}  // namespace

std::string to_string(const LayerSplit& s) {
  std::string out;
  auto add = [&out](char key, int v) {
    if (v > 1) out += fmt::format("{}{}{}", out.empty() ? "" : " ", key, v);
  };
  add('s', s.sample);
  add('h', s.spatial);
  add('f', s.filter);
  add('c', s.channel);
  add('r', s.replicas);
  return out.empty() ? "-" : out;
}

SplitModel::SplitModel(const OpGraph& g, const NodeGroup& group, const Fabric& network,
                       const LayerwiseOptions& o, int devices, int batch)
    : g_(g),
      group_(group),
      pricer_(group.device, group.intra_node, network, group.domain_gpus(), o.costs),
      dtype_(o.precision),
      devices_(devices),
      batch_(batch) {
  e_ = dtype_ == DType::fp32 || dtype_ == DType::tf32 ? 4 : 2;
  const bool tf32 = group.device.peak_flops[static_cast<int>(DType::tf32)] > 0;
  conv_dtype_ = dtype_ == DType::fp32 && o.tf32_conv && tf32 ? DType::tf32 : dtype_;
  matmul_dtype_ = dtype_ == DType::fp32 && o.tf32_matmul && tf32 ? DType::tf32 : dtype_;
  winograd_ = o.conv_winograd;
  if (o.optimizer != "sgd" && o.optimizer != "adam")
    throw InputError(fmt::format("unknown optimizer '{}'; use sgd or adam", o.optimizer));
  // fp32 weights and gradients and the optimizer's state; mixed precision also keeps a
  // 16-bit copy of the weights (autocast's cache).
  state_bytes_ = 8 + (o.optimizer == "adam" ? 8 : 4) + (e_ == 2 ? 2 : 0);
  producers_.resize(g.nodes.size());
  std::function<void(int, std::vector<int>&)> resolve = [&](int i, std::vector<int>& out) {
    if (g.nodes[static_cast<size_t>(i)].kind != NodeKind::view) {
      out.push_back(i);
      return;
    }
    for (int p : g.nodes[static_cast<size_t>(i)].inputs) resolve(p, out);
  };
  std::function<bool(int)> touches_input = [&](int i) {
    const GraphNode& n = g.nodes[static_cast<size_t>(i)];
    if (n.reads_input) return true;
    for (int p : n.inputs)
      if (g.nodes[static_cast<size_t>(p)].kind == NodeKind::view && touches_input(p)) return true;
    return false;
  };
  reads_input_.assign(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].kind == NodeKind::view) continue;
    priced_.push_back(static_cast<int>(i));
    for (int p : g.nodes[i].inputs) resolve(p, producers_[i]);
    reads_input_[i] = touches_input(static_cast<int>(i));
  }
  std::vector<size_t> position(g.nodes.size(), 0);
  for (size_t i = 0; i < priced_.size(); ++i) position[static_cast<size_t>(priced_[i])] = i;
  positions_.resize(priced_.size());
  for (size_t i = 0; i < priced_.size(); ++i)
    for (int p : producers_[static_cast<size_t>(priced_[i])]) {
      const size_t u = position[static_cast<size_t>(p)];
      if (std::find(positions_[i].begin(), positions_[i].end(), u) == positions_[i].end())
        positions_[i].push_back(u);
    }
}

bool SplitModel::admits(int index, const LayerSplit& s) const {
  const GraphNode& n = g_.nodes[static_cast<size_t>(index)];
  if (s.devices() != devices_ || batch_ % s.sample != 0) return false;
  const Layout l = layout(n);
  const bool batched = n.kind == NodeKind::matmul && !n.weight;
  if (s.spatial > 1) {
    if (batched) return false;
    if (n.kind == NodeKind::conv && (l.extent_out < s.spatial || l.extent_in < s.spatial))
      return false;
    if (l.extent_in < s.spatial) return false;
  }
  if (s.filter > 1) {
    if (batched) return false;
    const double ways = n.kind == NodeKind::conv && n.groups > 1 ? n.groups : l.channels_out;
    if (ways < s.filter) return false;
  }
  if (s.channel > 1) {
    if (!splits_weights(n) || (n.kind == NodeKind::conv && n.groups > 1)) return false;
    if (l.channels_in < s.channel) return false;
  }
  return true;
}

std::vector<LayerSplit> SplitModel::search_splits(int index) const {
  std::vector<LayerSplit> out;
  const int n = devices_;
  for (int s = 1; s <= n; ++s) {
    if (n % s) continue;
    for (int h = 1; h <= n / s; ++h) {
      if ((n / s) % h) continue;
      for (int f = 1; f <= n / s / h; ++f) {
        if ((n / s / h) % f) continue;
        for (int c = 1; c <= n / s / h / f; ++c) {
          if ((n / s / h / f) % c) continue;
          const int r = n / s / h / f / c;
          if (r > 1 && (h > 1 || f > 1 || c > 1)) continue;
          const LayerSplit split{s, h, f, c, r};
          if (admits(index, split)) out.push_back(split);
        }
      }
    }
  }
  return out;
}

LayerSplit SplitModel::fit(int index, LayerSplit want) const {
  auto smallest_factor = [](int v) {
    for (int p = 2; p * p <= v; ++p)
      if (v % p == 0) return p;
    return v;
  };
  // Give up ways one prime factor at a time, the model-parallel ones first, to replicas.
  while (!admits(index, want)) {
    int* axis = want.channel > 1   ? &want.channel
                : want.spatial > 1 ? &want.spatial
                : want.filter > 1  ? &want.filter
                : want.sample > 1  ? &want.sample
                                   : nullptr;
    if (!axis) break;
    const int p = smallest_factor(*axis);
    *axis /= p;
    want.replicas *= p;
  }
  return want;
}

// A GEMM whose output is too small to fill the GPU (a convolution's weight gradient: a few
// thousand outputs reduced over N x H x W) runs its reduction split across thread blocks, as
// cuBLAS's split-K and cuDNN's weight-gradient kernels do: `split` slices of K side by side,
// then their partial outputs summed (read and written once more in fp32).
double SplitModel::split_k(const GemmShape& g, DType dtype) const {
  const double sms = group_.device.sms;
  const double tiles = std::ceil(g.m / 128.0) * std::ceil(g.n / 128.0) * g.batch;
  const int64_t split =
      std::max<int64_t>(1, std::min(static_cast<int64_t>(sms / tiles), g.k / 1024));
  if (split <= 1) return pricer_.gemm(g, dtype).seconds;
  const GemmShape part{g.m, g.n, (g.k + split - 1) / split, g.batch * split};
  return pricer_.gemm(part, dtype).seconds +
         pricer_.memory_pass(static_cast<double>(g.m) * g.n * g.batch * (split + 1) * 4).seconds;
}

NodePrice SplitModel::node(int index, const LayerSplit& s) const {
  const GraphNode& n = g_.nodes[static_cast<size_t>(index)];
  const Layout l = layout(n);
  const double bl = static_cast<double>(batch_) / s.sample;
  const bool first = producers_[static_cast<size_t>(index)].empty();
  const GroupPlacement filter_group{s.filter, s.channel};
  const GroupPlacement spatial_group{s.spatial, s.channel * s.filter};
  NodePrice p;
  const DType math = n.kind == NodeKind::conv ? conv_dtype_ : matmul_dtype_;
  // Winograd F(2x2, 3x3) (Lavin and Gray 2016): each 2x2 output tile of a channel pair takes
  // 16 multiplies instead of 4 x 9, in the forward, the data gradient and the weight gradient
  // alike. cuDNN runs it for fp32 3x3 convolutions of stride 1 on the CUDA cores (not on
  // tensor cores) and chooses it where it is faster. Priced as the implicit GEMM's kernel on
  // the tiles' multiplies (an odd output side pads its last tile), when that is fewer.
  const bool winograd =
      winograd_ && math == DType::fp32 && n.kind == NodeKind::conv && !n.transposed &&
      n.groups == 1 && n.kernel.size() == 2 && n.kernel[0] == 3 && n.kernel[1] == 3 &&
      std::all_of(n.stride.begin(), n.stride.end(), [](int64_t x) { return x == 1; }) &&
      std::all_of(n.dilation.begin(), n.dilation.end(), [](int64_t x) { return x == 1; });
  double winograd_share = 1;  // the tiles' multiplies over the direct convolution's
  if (winograd) {
    const double h = up(l.extent_out, s.spatial), w = product(n.out_spatial, 1);
    winograd_share = std::min(1.0, 16 * std::ceil(h / 2) * std::ceil(w / 2) / (9 * h * w));
  }
  auto gemm_s = [&](const GemmShape& shape) { return split_k(shape, math) * winograd_share; };
  auto gemms = [&](const GemmShape& fwd, bool both_grads) {
    p.forward_s += gemm_s(fwd);
    ++p.kernels_fwd;
    if (!first || both_grads) p.backward_s += gemm_s(dgrad_shape(fwd)), ++p.kernels_bwd;
    p.backward_s += gemm_s(wgrad_shape(fwd));
    ++p.kernels_bwd;
  };
  // Rows of its input a spatial shard reads from each neighbour: the receptive field of one
  // output row, d(k-1)+1, less the stride it advances, split between the two sides.
  auto halo = [&](double row_bytes) {
    if (s.spatial <= 1) return;
    const double field = static_cast<double>(n.dilation[0] * (n.kernel[0] - 1) + 1);
    const double rows = std::ceil(std::max(0.0, field - static_cast<double>(n.stride[0])) / 2);
    if (rows <= 0) return;
    const double bytes = 2 * rows * row_bytes;                        // both neighbours
    p.comm_s += 2 * pricer_.send_recv(bytes, spatial_group).seconds;  // forward, backward
    ++p.kernels_fwd, ++p.kernels_bwd;
  };
  const bool grouped = n.kind == NodeKind::conv && n.groups > 1;
  const double in_split =
      s.spatial * (n.kind == NodeKind::memory || grouped ? s.filter : s.channel);
  if (n.kind == NodeKind::conv && !n.depthwise()) {
    const auto kprod = static_cast<int64_t>(product(n.kernel));
    const double rest_in = product(n.in_spatial, 1), rest_out = product(n.out_spatial, 1);
    const int64_t g = n.groups;
    const int64_t gb = g > 1 ? up(static_cast<double>(g), s.filter) : 1;
    const int64_t cout_l = g > 1 ? n.cout / g : up(static_cast<double>(n.cout), s.filter);
    const int64_t cin_l = g > 1 ? n.cin / g : up(static_cast<double>(n.cin), s.channel);
    const int64_t ext_in = up(l.extent_in, s.spatial), ext_out = up(l.extent_out, s.spatial);
    GemmShape fwd;
    if (n.transposed)
      fwd = {static_cast<int64_t>(bl * ext_in * rest_in), cout_l * kprod, cin_l, gb};
    else
      fwd = {static_cast<int64_t>(bl * ext_out * rest_out), cout_l, cin_l * kprod, gb};
    gemms(fwd, false);
    const double row_bytes = rest_in * static_cast<double>(cin_l * gb) * bl * e_;
    halo(row_bytes);
    if (s.filter > 1 && !first && g == 1) {
      p.comm_s +=
          pricer_.collective(CollectiveOp::all_reduce, row_bytes * ext_in, filter_group).seconds;
      ++p.kernels_bwd;
    }
  } else if (n.kind == NodeKind::matmul && n.weight) {
    const auto rows = static_cast<int64_t>(bl * up(static_cast<double>(n.m), s.spatial));
    const GemmShape fwd{rows, up(static_cast<double>(n.n), s.filter),
                        up(static_cast<double>(n.k), s.channel), n.batch};
    gemms(fwd, false);
    if (s.filter > 1 && !first) {
      p.comm_s += pricer_
                      .collective(CollectiveOp::all_reduce,
                                  static_cast<double>(rows * fwd.k * n.batch) * e_, filter_group)
                      .seconds;
      ++p.kernels_bwd;
    }
  } else if (n.kind == NodeKind::matmul) {
    gemms({n.m, n.n, n.k, static_cast<int64_t>(bl * n.batch)}, true);
  } else {
    const double split = s.spatial * s.filter;
    const double fwd = (n.in_elements + n.out_elements) * bl * e_ / split +
                       (n.depthwise() ? n.params / s.filter * e_ : 0);
    const double bwd = (2 * n.in_elements + n.out_elements) * bl * e_ / split;
    // Elementwise kernels stream at the device's copy rate (PyTorch's fp32 add on V100: 818.5
    // of 900 GB/s); norms, pooling, softmax and the rest at the framework fraction of it.
    if (is_elementwise(n)) {
      p.forward_s += pricer_.memory("read", fwd).seconds;
      p.backward_s += pricer_.memory("read", bwd).seconds;
    } else {
      p.forward_s += pricer_.memory_pass(fwd).seconds;
      p.backward_s += pricer_.memory_pass(bwd).seconds;
    }
    ++p.kernels_fwd, ++p.kernels_bwd;
    if (n.depthwise())
      halo(product(n.in_spatial, 1) * up(static_cast<double>(n.cin), s.filter) * bl * e_);
    else if (!n.kernel.empty() && l.extent_in > 0)  // a pooling window
      halo(n.in_elements / l.extent_in * bl * e_ / s.filter);
    // Statistics of a norm over a split dimension, forward and back: batch, instance and
    // group norms reduce over the image (a spatial split), layer norm over the features (a
    // filter split of its last axis).
    const bool layer_norm = n.op_type == "LayerNormalization";
    const bool norm_over_features = is_norm(n) && layer_norm && s.filter > 1;
    const bool norm_over_image = s.spatial > 1 && is_norm(n) && !layer_norm;
    if (norm_over_features || norm_over_image) ++p.kernels_fwd, ++p.kernels_bwd;
    if (norm_over_features)
      p.comm_s += 2 * pricer_
                          .collective(CollectiveOp::all_reduce,
                                      2 * n.out_elements / l.channels_out * bl / s.spatial * 4,
                                      filter_group)
                          .seconds;
    if (norm_over_image)
      p.comm_s += 2 * pricer_
                          .collective(CollectiveOp::all_reduce, 2 * l.channels_out / s.filter * 4,
                                      spatial_group)
                          .seconds;
    // A reduction over the split dimension (global pooling): its partial results summed.
    if (s.spatial > 1 && l.extent_out < s.spatial) {
      p.comm_s += pricer_
                      .collective(CollectiveOp::all_reduce, n.out_elements * bl * e_ / s.filter,
                                  spatial_group)
                      .seconds;
      ++p.kernels_fwd;
    }
  }
  const double local_params = n.params / (splits_weights(n) ? s.filter * s.channel : s.filter);
  p.grad_bytes = local_params * 4;
  const int replicas = s.sample * s.spatial * s.replicas;
  p.sync_s =
      pricer_.collective(CollectiveOp::all_reduce, p.grad_bytes, {replicas, s.channel * s.filter})
          .seconds;
  p.kept_bytes = n.kept_bytes(e_) * bl / in_split;
  p.memory_bytes = local_params * state_bytes_ + p.kept_bytes;
  // A filter split splits the output's channels; a channel split's output is whole (partial
  // sums) and so is a replica's.
  p.working_bytes = (n.in_elements / in_split + n.out_elements / (s.spatial * s.filter)) * bl * e_;
  return p;
}

double SplitModel::edge(int producer, const LayerSplit& a, int consumer,
                        const LayerSplit& b) const {
  const GraphNode& u = g_.nodes[static_cast<size_t>(producer)];
  const GraphNode& v = g_.nodes[static_cast<size_t>(consumer)];
  const Layout lu = layout(u);
  const double total = u.out_elements * batch_ * e_;
  // What each device holds of the producer's output: its samples, rows and channels, and how
  // many partial sums of it (a channel-split operator's output before the reduction).
  const bool u_batched = u.kind == NodeKind::matmul && !u.weight;
  double ps = a.sample, ph = lu.extent_out >= a.spatial ? a.spatial : 1;
  double pc = u_batched ? 1 : a.filter;
  const int partial = splits_weights(u) ? a.channel : 1;
  // What the consumer reads: its samples, rows and input channels (whole across its filter
  // ways: each filter shard reads every input channel).
  const bool v_batched = v.kind == NodeKind::matmul && !v.weight;
  const double bs = b.sample, bh = v_batched ? 1 : b.spatial;
  // A grouped convolution's filter ways take whole groups: their input channels with them.
  const bool v_grouped = v.kind == NodeKind::conv && v.groups > 1;
  const double bc = v_batched ? 1 : splits_weights(v) && !v_grouped ? b.channel : b.filter;
  double seconds = 0;
  if (partial > 1) {
    const double local = total / (ps * ph * pc);
    const GroupPlacement group{partial, 1};
    if (bc > 1) {
      // Reduce-scattered into channel shards; backward, the output gradient all-gathered.
      seconds += pricer_.collective(CollectiveOp::reduce_scatter, local, group).seconds +
                 pricer_.collective(CollectiveOp::all_gather, local, group).seconds;
      pc *= partial;
    } else {
      seconds += pricer_.collective(CollectiveOp::all_reduce, local, group).seconds;
    }
  }
  // A flattening view between them: rows and channels become one feature dimension.
  const bool flat = u.out.size() != v.in.size();
  const double need = total / (bs * bh * bc);
  double own = total * std::min(1 / ps, 1 / bs);
  if (flat)
    own *= std::min(1 / (ph * pc), 1 / (bh * bc));
  else
    own *= std::min(1 / ph, 1 / bh) * std::min(1 / pc, 1 / bc);
  const double receive = need - own;
  if (receive <= 1e-9 * total) return seconds;
  // Data moves among the devices that share a sample shard (and a row shard, when both split
  // rows alike); an all-to-all among them, forward and backward.
  const double shared = std::min(ps, bs) * (flat ? 1 : std::min(ph, bh));
  const int ranks = std::max(2, static_cast<int>(devices_ / shared));
  const double buffer = receive * ranks / (ranks - 1);
  return seconds + 2 * pricer_.collective(CollectiveOp::all_to_all, buffer, {ranks, 1}).seconds;
}

}  // namespace shardcost
