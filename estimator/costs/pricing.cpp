#include "pricing.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace shardcost {
namespace {
constexpr int kBf16 = static_cast<int>(DType::bf16);
}  // namespace

double bus_bandwidth_factor(CollectiveOp op, int ranks) {
  const double n = ranks;
  switch (op) {
    case CollectiveOp::all_reduce:
      return 2 * (n - 1) / n;
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all:
      return (n - 1) / n;
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
    case CollectiveOp::send_recv:
      return 1;
  }
  return 1;
}

double NcclLatency::model_s(CollectiveOp op, int ranks, int nodes) {
  const double n = ranks, N = std::max(1, nodes);
  const double intra = N > 1 ? kIntraLL_s * kMultiNodeIntraFactor : kIntraLL_s;
  switch (op) {
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
      return (n - N) * intra + (N - 1) * kRingNetLL_s;
    case CollectiveOp::all_reduce: {
      const double ring = 2 * (n - N) * intra + 2 * (N - 1) * kRingNetLL_s;
      const double tree_intra = N > 1 ? kTreeIntraLL_s * kMultiNodeIntraFactor : kTreeIntraLL_s;
      const double tree = 2 * ((n / N - 1) * tree_intra + std::log2(N) * kTreeNetLL_s);
      return std::min(ring, tree);
    }
    default:
      return 0;  // point-to-point and all-to-all: one exchange with each peer at once
  }
}

double NcclLatency::growth_s(CollectiveOp op, int ranks, int nodes) {
  const double reference = nodes > 1 ? model_s(CollectiveOp::all_reduce, 16, 2)
                                     : model_s(CollectiveOp::all_reduce, 8, 1);
  return std::max(0.0, model_s(op, ranks, nodes) - reference);
}

double NcclLatency::intra_steps(CollectiveOp op, int ranks) {
  const double n = std::max(2, ranks);
  switch (op) {
    case CollectiveOp::all_reduce:
      return 2 * (n - 1);
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
      return n - 1;
    case CollectiveOp::all_to_all:
    case CollectiveOp::send_recv:
      return kAllToAllStepsPerDoubling * std::log2(n);
  }
  return n - 1;
}

double NcclLatency::intra_node_s(CollectiveOp op, int ranks, double reference_s,
                                 int reference_ranks) {
  const int measured = std::min(ranks, kMeasuredRanks);
  const double share = (kBaseSteps + intra_steps(op, measured)) /
                       (kBaseSteps + intra_steps(CollectiveOp::all_reduce, reference_ranks));
  return reference_s * share + intra_beyond_s(op, ranks);
}

double NcclLatency::intra_beyond_s(CollectiveOp op, int ranks) {
  return ranks > kMeasuredRanks ? model_s(op, ranks, 1) - model_s(op, kMeasuredRanks, 1) : 0.0;
}

double NcclProtocols::seconds(double latency_s, double bus_bytes, double bandwidth_Bps) {
  const double ll = latency_s + bus_bytes / (bandwidth_Bps * kLlBandwidth);
  const double ll128 = kLl128Latency * latency_s + bus_bytes / (bandwidth_Bps * kLl128Bandwidth);
  const double simple = kSimpleLatency * latency_s + bus_bytes / bandwidth_Bps;
  return std::min({ll, ll128, simple});
}

double fp8_shape_relative(const Fp8ShapeGrid& g, const GemmShape& s) {
  // Trilinear in log2 of each dimension between the grid's points, flat past its ends. A
  // batched GEMM takes its members' shape (one kernel per member, or one grouped kernel whose
  // tiles are its members').
  const size_t n = g.dims.size();
  if (g.empty() || n < 2 || g.relative.size() != n * n * n) return 1;
  struct Along {
    size_t lo;
    double t;
  };
  auto axis = [&](double x) {
    if (x <= g.dims.front()) return Along{0, 0.0};
    if (x >= g.dims.back()) return Along{n - 2, 1.0};
    size_t i = 1;
    while (g.dims[i] < x) ++i;
    if (g.dims[i] == x) return Along{i - 1, 1.0};
    // One logarithm a dimension on the catalog's octave grids (a search prices many shapes).
    const double ratio = g.dims[i] / g.dims[i - 1];
    return Along{i - 1, std::log2(x / g.dims[i - 1]) / (ratio == 2.0 ? 1.0 : std::log2(ratio))};
  };
  const Along am = axis(static_cast<double>(s.m)), an = axis(static_cast<double>(s.n)),
              ak = axis(static_cast<double>(s.k));
  double v = 0;
  for (size_t i = 0; i < 2; ++i)
    for (size_t j = 0; j < 2; ++j)
      for (size_t k = 0; k < 2; ++k) {
        const double w = (i ? am.t : 1 - am.t) * (j ? an.t : 1 - an.t) * (k ? ak.t : 1 - ak.t);
        if (w > 0) v += w * g.relative[((am.lo + i) * n + an.lo + j) * n + ak.lo + k];
      }
  return v;
}

double gemm_efficiency(const Device& d, const GemmShape& s, DType dtype) {
  // Wave quantization: tiles run in waves of one tile per SM; a partial last wave idles SMs.
  // Tile quantization: dimensions are padded up to whole tiles.
  double best_wave = 0;
  for (const auto& tile : GemmModel::kTiles) {
    const double tm = tile[0], tn = tile[1];
    const double tiles = std::ceil(s.m / tm) * std::ceil(s.n / tn) * static_cast<double>(s.batch);
    const double waves = std::ceil(tiles / d.sms);
    const double useful = static_cast<double>(s.m) * s.n * s.batch;
    best_wave = std::max(best_wave, useful / (waves * d.sms * tm * tn));
  }
  // The prologue and epilogue take a fixed time; a type computed slower than the 16-bit
  // tensor-core rate (fp32 on CUDA cores, tf32) spends fewer K steps in it.
  const double peak = d.peak_flops[static_cast<int>(dtype)];
  const double rate = d.peak16() > 0 && peak > 0 ? std::min(1.0, peak / d.peak16()) : 1.0;
  const double k_eff = s.k / (s.k + GemmModel::kKOverhead * rate);
  double large = d.gemm_efficiency;
  if (dtype == DType::fp32 && d.gemm_fp32_efficiency > 0) large = d.gemm_fp32_efficiency;
  // Quantized GEMMs: FP8's measured fraction of its peak (block-scaled MXFP8 and NVFP4 MMAs
  // are assumed to reach the same fraction of theirs until the store measures them). Where the
  // die's FP8 GEMMs were measured by shape, FP8 keeps the grid's share of bf16's efficiency at
  // this shape (its large-GEMM figure, where it has one, stands for the grid's large cubes).
  if (is_quantized(dtype)) {
    if (!d.gemm_fp8_shape.empty()) {
      const double relative = fp8_shape_relative(d.gemm_fp8_shape, s);
      const double at_large = d.gemm_fp8_shape.large();
      large = d.gemm_fp8_efficiency > 0 && at_large > 0
                  ? d.gemm_fp8_efficiency * relative / at_large
                  : d.gemm_efficiency * relative;
      large = std::min(large, 1.0);  // no shape runs past the peak
    } else {
      large = d.gemm_fp8_efficiency > 0 ? d.gemm_fp8_efficiency
                                        : d.gemm_efficiency * GemmModel::kFp8RelativeEfficiency;
    }
  }
  return large * best_wave * k_eff;
}

Pricer::Pricer(const Device& device, const Fabric& intra, const Fabric& inter, int gpus_per_node,
               const CostSource* costs)
    : device_(device), intra_(intra), inter_(inter), gpus_per_node_(gpus_per_node), costs_(costs) {}

double gemm_bytes(DType t, const GemmShape& s) {
  // Quantized GEMMs write 16-bit outputs; other types read and write their own.
  if (is_quantized(t))
    return (dtype_bytes(t) * (s.m * s.k + s.k * s.n) + 2.0 * s.m * s.n) * s.batch;
  return dtype_bytes(t) * (s.m * s.k + s.k * s.n + s.m * s.n) * s.batch;
}

double Pricer::kernel_bandwidth() const {
  return device_.memory_bandwidth_Bps * device_.memory_efficiency *
         GemmModel::kFrameworkBandwidthFraction;
}

Priced Pricer::gemm(const GemmShape& s, DType dtype) const {
  if (costs_) {
    if (auto p = costs_->gemm(device_, dtype, s)) return *p;
  }
  const double flops = 2.0 * s.m * s.n * s.k * s.batch;
  const double compute =
      flops / (device_.peak_flops[static_cast<int>(dtype)] * gemm_efficiency(device_, s, dtype));
  const double bytes = gemm_bytes(dtype, s);
  const double memory = bytes / kernel_bandwidth();
  return {std::max(compute, memory) + GemmModel::kKernelGap_s, CostOrigin::catalog};
}

std::optional<double> attention_rate(const Device& d, const AttentionShape& a, bool backward) {
  const AttentionKernels& k = d.attention_kernels;
  if (a.kernel == FusedAttention::best || a.seq_len <= 0 || k.seq_len.empty()) return std::nullopt;
  const AttentionCurve* best = nullptr;
  double best_gap = 0;
  // FP8 where the kernel has an FP8 curve, else its 16-bit ones.
  const bool fp8 = a.fp8 && std::any_of(k.curves.begin(), k.curves.end(), [&](const auto& c) {
                     return c.kernel == a.kernel && c.fp8;
                   });
  // The release: the stack's nearest among the kernel's (major x 1000 + minor); without one,
  // the earliest. A curve of unstated release counts as 0.
  const auto target = a.release.empty() ? std::nullopt : library_release_order(a.release);
  std::optional<int> release;
  for (const AttentionCurve& c : k.curves) {
    if (c.kernel != a.kernel || c.fp8 != fp8) continue;
    const int r = c.release_order;
    if (!release) {
      release = r;
    } else if (!target) {
      release = std::min(*release, r);
    } else {
      const int gap = std::abs(r - *target), held = std::abs(*release - *target);
      if (gap < held || (gap == held && r > *release)) release = r;
    }
  }
  for (const AttentionCurve& c : k.curves) {
    if (c.kernel != a.kernel || c.fp8 != fp8 || c.release_order != release) continue;
    const double gap = a.head_dim > 0 ? std::abs(std::log(c.head_dim / a.head_dim)) : 0;
    if (!best || gap < best_gap) best = &c, best_gap = gap;
  }
  if (!best) return std::nullopt;
  // Log-linear in the length between measured points, flat past the ends.
  auto at = [&](const std::vector<double>& rate) {
    const std::vector<double>& x = k.lengths(*best);
    if (a.seq_len <= x.front()) return rate.front();
    if (a.seq_len >= x.back()) return rate.back();
    size_t i = 1;
    while (x[i] < a.seq_len) ++i;
    const double t = std::log(a.seq_len / x[i - 1]) / std::log(x[i] / x[i - 1]);
    return rate[i - 1] + t * (rate[i] - rate[i - 1]);
  };
  if (backward && !best->backward_causal.empty()) return at(best->backward_causal);
  const double forward = at(best->forward_causal);
  if (!backward) return forward;
  return forward * at(best->backward) / at(best->forward);
}

double sustained_over_burst(const Device& d) {
  return d.gemm_efficiency > 0 && d.gemm_burst_efficiency > 0
             ? std::min(1.0, d.gemm_efficiency / d.gemm_burst_efficiency)
             : 1.0;
}

Priced Pricer::fused_attention(double flops, DType dtype, const AttentionShape& shape,
                               bool backward) const {
  // FP8 training keeps attention in 16 bits (Transformer Engine's default); fp32 and tf32
  // attention run at their own peaks (the measured curves are 16-bit kernels').
  const int t = is_quantized(dtype) ? kBf16 : static_cast<int>(dtype);
  const bool sixteen = t == kBf16 || dtype == DType::fp16;
  // The attention figures are benchmarks' (short runs at boost clocks); a training step runs
  // tensor-core kernels at the power limit, so they run at the GEMMs' sustained-over-burst
  // ratio of them (H100: 0.716 / 0.803).
  const double power = sustained_over_burst(device_);
  if (const auto rate = sixteen ? attention_rate(device_, shape, backward) : std::nullopt)
    return {flops / (*rate * power) + GemmModel::kKernelGap_s, CostOrigin::catalog};
  return {flops / (device_.peak_flops[t] * device_.attention_efficiency * power) +
              GemmModel::kKernelGap_s,
          CostOrigin::catalog};
}

// A framework's memory-bound kernel moving `bytes` through HBM (reads and writes together).
// Where a cost source has the device's copies (`bench memory --op copy_d2d`: a copy of n bytes
// reads n and writes n), the pass takes a measured copy of bytes / 2 at the framework kernels'
// fraction of it (GemmModel::kFrameworkBandwidthFraction, a ratio to STREAM-type kernels such
// as a device-to-device copy), so a store measured on the user's GPU prices the elementwise
// passes too; else the catalog's STREAM figure at that fraction.
Priced Pricer::memory_pass(double bytes) const {
  if (bytes <= 0) return {0, CostOrigin::catalog};
  if (costs_) {
    if (auto copy = costs_->memory(device_, "copy_d2d", bytes / 2))
      return {copy->seconds / GemmModel::kFrameworkBandwidthFraction + GemmModel::kKernelGap_s,
              copy->origin};
  }
  return {bytes / kernel_bandwidth() + GemmModel::kKernelGap_s, CostOrigin::catalog};
}

Priced Pricer::memory(std::string_view kind, double bytes) const {
  if (costs_) {
    if (auto p = costs_->memory(device_, kind, bytes)) return *p;
  }
  // Copies count their size once but move it twice through HBM; the link copies run at the
  // PCIe peak the datasheet gives (an upper bound: the catalog has no measured fraction).
  const double stream = device_.memory_bandwidth_Bps * device_.memory_efficiency;
  double seconds = 0;
  if (kind == "copy_d2d")
    seconds = 2 * bytes / stream;
  else if (kind == "memset" || kind == "read" || kind == "write")
    seconds = bytes / stream;
  else if (kind == "copy_h2d" || kind == "copy_d2h")
    seconds = bytes / device_.pcie_bandwidth_Bps;
  else
    return {0, CostOrigin::catalog};
  return {seconds + GemmModel::kKernelGap_s, CostOrigin::catalog};
}

bool catalog_prices_memory(std::string_view kind) {
  for (const char* k : {"copy_d2d", "copy_h2d", "copy_d2h", "memset", "read", "write"})
    if (kind == k) return true;
  return false;
}

int Pricer::ranks_per_node(GroupPlacement g) const {
  // Named nodes: the fewest ranks a node holds, which sets how many NICs carry the traffic.
  if (g.nodes > 0) return std::max(1, g.ranks / g.nodes);
  if (g.stride >= gpus_per_node_) return 1;
  const int per = std::max(1, std::min(g.ranks, gpus_per_node_ / g.stride));
  // A group narrower than a node (an NVLink domain) that does not tile it: copies of it
  // straddle two domains (32 ranks on 72-GPU racks: ranks 64-95 sit in two racks), and the
  // slowest copy sets the pace: price it over two.
  const int64_t span = int64_t{g.ranks} * g.stride;
  if (per == g.ranks && g.ranks > 1 && gpus_per_node_ % span != 0) return (g.ranks + 1) / 2;
  return per;
}

FabricLevel Pricer::level(GroupPlacement g) const {
  if (g.nodes > 0) return g.nodes > 1 ? FabricLevel::inter_node : FabricLevel::intra_node;
  return g.ranks > ranks_per_node(g) ? FabricLevel::inter_node : FabricLevel::intra_node;
}

int Pricer::nodes_spanned(GroupPlacement g) const {
  if (g.nodes > 0) return g.nodes;
  const int per_node = ranks_per_node(g);
  return (g.ranks + per_node - 1) / per_node;
}

Priced Pricer::collective(CollectiveOp op, double bytes, GroupPlacement g) const {
  if (g.ranks <= 1 || bytes <= 0) return {0, CostOrigin::catalog};
  if (costs_) {
    if (auto p = costs_->collective(device_, op, bytes, GroupShape{g.ranks, nodes_spanned(g)}))
      return *p;
  }
  return catalog_collective(op, bytes, g);
}

std::optional<PriceBasis> Pricer::collective_basis(CollectiveOp op, double bytes,
                                                   GroupPlacement g) const {
  if (costs_ && g.ranks > 1 && bytes > 0) {
    const GroupShape shape{g.ranks, nodes_spanned(g)};
    if (costs_->collective(device_, op, bytes, shape))
      return costs_->collective_basis(device_, op, bytes, shape);
  }
  return std::nullopt;
}

const std::vector<BusbwPoint>* busbw_curve(const Fabric& f, CollectiveOp op) {
  auto curve = [&f](CollectiveOp o) -> const std::vector<BusbwPoint>* {
    const auto& c = f.busbw_curves[static_cast<size_t>(o)];
    return c.empty() ? nullptr : &c;
  };
  // Ring reduce-scatter and all-gather move the same chunks, in opposite directions, and an
  // all-reduce is one of each: without a collective's own sweep, a ring sibling's serves.
  switch (op) {
    case CollectiveOp::all_reduce:
      return curve(op);
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter: {
      const CollectiveOp sibling =
          op == CollectiveOp::all_gather ? CollectiveOp::reduce_scatter : CollectiveOp::all_gather;
      if (const auto* c = curve(op)) return c;
      if (const auto* c = curve(sibling)) return c;
      return curve(CollectiveOp::all_reduce);
    }
    default:
      return curve(op);
  }
}

double curve_seconds(const std::vector<BusbwPoint>& c, double bytes, double factor,
                     double latency_s) {
  auto at = [factor](const BusbwPoint& p) { return p.bytes * factor / p.busbw_Bps; };
  if (bytes <= c.front().bytes) {
    // A latency above the first point's time would make small messages slower than it.
    const double first = at(c.front());
    const double alpha = std::min(latency_s, first);
    return alpha + (first - alpha) * bytes / c.front().bytes;
  }
  // Measured sweeps are noisy where latency dominates (a bigger message can time a little
  // faster): each point takes at least the time of every smaller one.
  double slowest = 0;
  auto point = c.begin();
  for (; point != c.end() && point->bytes < bytes; ++point) slowest = std::max(slowest, at(*point));
  if (point == c.end()) return std::max(slowest, bytes * factor / c.back().busbw_Bps);
  const double t_lo = slowest;
  const double t_hi = std::max(slowest, at(*point));
  const auto lo = point - 1;
  // Time, not bandwidth, interpolated in log-log: monotone also in the latency regime,
  // where bandwidth doubles with the size.
  const double t =
      (std::log(bytes) - std::log(lo->bytes)) / (std::log(point->bytes) - std::log(lo->bytes));
  return std::exp(std::log(t_lo) + t * (std::log(t_hi) - std::log(t_lo)));
}

double pcie_ring_share(int ranks) {
  // NCCL's bus bandwidth among n GPUs of a PCIe node, as a share of two GPUs' (one pair under a
  // switch, peer to peer): rings of more GPUs run through host bridges and host memory, which
  // every hop of the ring shares. Public sweep: all-reduce of 128 MiB on 2, 4 and 8 L40S of one
  // node, 19.97, 5.12 and 1.45 GB/s (aiconfigurator's nccl_perf table, in
  // shared/data/measured/collective_l40s.csv; all-gather 19.31, 4.70, 1.18). Between and past
  // the measured counts, log-log in the rank count.
  static constexpr std::array<std::pair<double, double>, 3> kShare = {
      {{2, 1.0}, {4, 5.12 / 19.97}, {8, 1.45 / 19.97}}};
  if (ranks <= 2) return 1.0;
  size_t i = 0;
  while (i + 2 < kShare.size() && ranks > kShare[i + 1].first) ++i;
  const auto [n0, s0] = kShare[i];
  const auto [n1, s1] = kShare[i + 1];
  const double slope = std::log(s1 / s0) / std::log(n1 / n0);
  return s0 * std::pow(ranks / n0, slope);
}

Priced Pricer::catalog_collective(CollectiveOp op, double bytes, GroupPlacement g) const {
  const Fabric& fabric = level(g) == FabricLevel::intra_node ? intra_ : inter_;
  const int local = ranks_per_node(g);
  // Inside a node a group scales the fabric's measured latency by its own steps; across nodes
  // it pays the network's and what NCCL's model adds over the network's reference group.
  const bool intra = level(g) == FabricLevel::intra_node;
  const double latency =
      intra ? NcclLatency::intra_node_s(op, g.ranks, intra_.latency_s, intra_.latency_ranks)
            : inter_.latency_s + NcclLatency::growth_s(op, g.ranks, nodes_spanned(g));
  if (const auto* curve = busbw_curve(fabric, op)) {
    // The curve's first point bounds a small message's time from above (curve_seconds).
    const double base = intra ? latency : inter_.latency_s;
    const double growth = intra ? 0.0 : latency - inter_.latency_s;
    return {curve_seconds(*curve, bytes, bus_bandwidth_factor(op, g.ranks), base) + growth,
            CostOrigin::catalog};
  }
  // A PCIe node's link figure holds for a pair of GPUs; more of them share the host's paths.
  const double share = device_.node_fabric == "pcie" ? pcie_ring_share(local) : 1.0;
  const double intra_bw = intra_.bandwidth_Bps * intra_.efficiency * share;
  const double inter_bw = inter_.bandwidth_Bps * inter_.efficiency;
  if (intra) {
    const double bus_bytes = bytes * bus_bandwidth_factor(op, g.ranks);
    // NVLink: NCCL's protocols (NcclProtocols); a PCIe node's public sweep runs on the
    // latency-bandwidth line already (5.6 % median against 5.3 with the protocols' shape).
    if (!nccl_protocols()) return {latency + bus_bytes / intra_bw, CostOrigin::catalog};
    const double beyond = NcclLatency::intra_beyond_s(op, g.ranks);
    return {NcclProtocols::seconds(latency - beyond, bus_bytes, intra_bw) + beyond,
            CostOrigin::catalog};
  }
  const double n = g.ranks;
  if (op == CollectiveOp::all_to_all) {
    // Each rank keeps 1/n, sends (local-1)/n inside its node and (n-local)/n through its own NIC.
    const double through_nic = bytes * (n - local) / n / inter_bw;
    const double through_nvlink = bytes * (local - 1) / n / intra_bw;
    return {latency + std::max(through_nic, through_nvlink), CostOrigin::catalog};
  }
  // Rings (one per NIC) cross every node boundary: the group's `local` members of a node
  // drive `local` NICs in parallel (one NIC per GPU, as on DGX), capped by NVLink.
  const double bus_bw = std::min(intra_bw, local * inter_bw);
  return {latency + bytes * bus_bandwidth_factor(op, g.ranks) / bus_bw, CostOrigin::catalog};
}

Priced Pricer::send_recv(double bytes, GroupPlacement group) const {
  if (bytes <= 0) return {0, CostOrigin::catalog};
  const FabricLevel hop = level({std::max(2, group.ranks), group.stride, group.nodes});
  if (costs_) {
    if (auto p = costs_->collective(device_, CollectiveOp::send_recv, bytes,
                                    GroupShape{2, hop == FabricLevel::inter_node ? 2 : 1}))
      return *p;
  }
  const Fabric& f = hop == FabricLevel::intra_node ? intra_ : inter_;
  // Inside a node, an exchange with one peer (NcclLatency::intra_node_s); across nodes the
  // network's latency as the catalog gives it.
  const double latency =
      hop == FabricLevel::intra_node
          ? NcclLatency::intra_node_s(CollectiveOp::send_recv, 2, f.latency_s, f.latency_ranks)
          : f.latency_s;
  if (const auto* curve = busbw_curve(f, CollectiveOp::send_recv))
    return {curve_seconds(*curve, bytes, 1, latency), CostOrigin::catalog};
  if (hop == FabricLevel::intra_node && nccl_protocols())
    return {NcclProtocols::seconds(latency, bytes, f.bandwidth_Bps * f.efficiency),
            CostOrigin::catalog};
  return {latency + bytes / (f.bandwidth_Bps * f.efficiency), CostOrigin::catalog};
}

}  // namespace shardcost
