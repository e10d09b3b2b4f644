#pragma once
// Prices single operations on one device: GEMMs and fused attention by a roofline with
// size-dependent efficiency, memory-bound passes by bandwidth, collectives by per-level bus
// bandwidth and latency with nccl-tests' factors. Measured costs, when given, come first.
#include "shardcost/estimator.h"

namespace shardcost {

// NCCL's bus bandwidth among `ranks` GPUs of a PCIe node as a share of a pair's (1 for two):
// the catalog's prior from a public 2/4/8-GPU sweep (docs/heterogeneous.md, "PCIe nodes").
double pcie_ring_share(int ranks);

// Efficiency model constants, exposed for tests and docs.
struct GemmModel {
  // CTA tile shapes cuBLAS uses for large bf16 GEMMs on Ampere/Hopper; the best one for the
  // shape is taken, as cuBLAS's heuristics do.
  static constexpr int kTiles[3][2] = {{256, 128}, {128, 256}, {128, 128}};
  // Each tile's main loop pays a fixed prologue/epilogue: filling a multistage pipeline
  // (CUTLASS sm80/sm90 kernels: 3-4 stages of 32-wide K slabs) and writing the output tile.
  // Expressed as the K length it costs at the 16-bit tensor-core rate: efficiency falls as
  // K / (K + kKOverhead x rate), rate = the type's peak over the 16-bit peak (1 for 16-bit and
  // faster types; fp32 on V100's CUDA cores: 15.7 / 125, so K = 64 keeps 0.84 of the large-GEMM
  // efficiency, as Baidu DeepBench's V100 FP32 1x1 convolutions (K = 64-256: 60-77 % of peak)
  // keep far more than its FP16 ones (19-36 %); docs/operator-graphs.md).
  static constexpr double kKOverhead = 96;
  // Memory-bound kernels of training frameworks (elementwise, softmax, dropout, norms, and
  // batched GEMMs with a short inner dimension) reach this fraction of the bandwidth a
  // STREAM-type kernel reaches (Device::memory_efficiency). Measured through PyTorch's
  // standard attention on A100: 0.664 (Azure ND A100 v4), 0.665 (FlashAttention paper);
  // derivation in docs/validation.md.
  static constexpr double kFrameworkBandwidthFraction = 0.665;
  // GPU-side gap between dependent kernels on one stream.
  static constexpr double kKernelGap_s = 2e-6;
  // NCCL runs a collective as one thread block per channel; 16 channels is what NCCL sets up
  // for rings on 8-GPU NVSwitch nodes (NCCL_DEBUG=INFO prints "16 coll channels"). While an
  // overlapped collective runs, those SMs do no compute.
  static constexpr double kNcclChannels = 16;
  // Compute slows down while an NCCL collective runs beside it: by 18.9 % on average over GPT
  // and Llama training on A100, H100, MI250 and MI210 (Lee et al., "Characterizing Compute-
  // Communication Overlap in GPU-Accelerated Distributed Deep Learning", arXiv 2507.03114,
  // 2025; SMs, memory bandwidth and power shared; up to 40 %). What a collective hidden behind
  // compute costs, as a share of its own time, where the stack leaves SMs to NCCL: more than
  // the kNcclChannels SMs alone take (16/132 on H100).
  static constexpr double kOverlapSlowdown = 0.189;
  // FP8 GEMMs reach this fraction of the efficiency bf16 GEMMs of the same shape reach (each
  // against its own peak): the median over the 675 shapes with m, n, k >= 4096 of
  // aiconfigurator's measured tables, 0.806 on B200 and 0.806 on L40S (../shared/data/
  // measured/gemm_b200-sxm-180gb.csv, gemm_l40s.csv; docs/estimator.md). FP8 doubles the
  // tensor-core rate but not the operand staging, epilogue or clocks under power.
  static constexpr double kFp8RelativeEfficiency = 0.806;
  // What each GEMM of a grouped GEMM run one kernel per group member (Transformer Engine's
  // multi-stream cuBLASLt path) costs beyond one grouped kernel doing the same work: TE PR
  // #2045 (NVIDIA/TransformerEngine, H100, BF16, TE 2.7, CUDA 12.9) measured the multi-stream
  // path against its CUTLASS grouped GEMM at 553.9 against 636.9 TFLOP/s for 16 GEMMs of
  // 2048x768x2048 (185 against 161 us: 1.5 us a GEMM) and 627.9 against 650.6 for 8 of
  // 4096x768x2048 (0.7 us a GEMM); the larger figure, of the larger group.
  static constexpr double kPerMemberKernel_s = 1.5e-6;
};
// How a collective's small-message latency grows with its group, from NCCL's own tuning model
// (src/graph/tuning.cc, NVIDIA/nccl @01afd20): a ring step costs a per-hop latency, intraLat
// on NVLink (LL protocol 0.47 us, 1.8x that once the group spans nodes) and interLat on the
// network (2.7 us); a ring all-gather or reduce-scatter takes n-1 steps, N-1 of them between
// nodes, an all-reduce twice that; an all-reduce can also run as a tree, 2 ((n/N - 1) intra +
// log2 N inter) with the tree's network hop 5.0 us, and NCCL takes the faster. The catalog's
// latency is measured on a reference group (8 GPUs of a node, or 2 nodes of 8, all-reduce):
// a group pays it plus what the model adds over that reference, never less.
struct NcclLatency {
  static constexpr double kIntraLL_s = 0.47e-6;
  static constexpr double kMultiNodeIntraFactor = 1.8;
  static constexpr double kRingNetLL_s = 2.7e-6;
  static constexpr double kTreeNetLL_s = 5.0e-6;
  static constexpr double kTreeIntraLL_s = 0.52e-6;
  // The model's latency of `op` over `ranks` GPUs on `nodes` nodes (base latency left out).
  static double model_s(CollectiveOp op, int ranks, int nodes);
  // What a group spanning nodes adds over the network's reference group (>= 0).
  static double growth_s(CollectiveOp op, int ranks, int nodes);

  // Inside one node (or NVLink domain), measured: the small-message time of 2, 4 and 8 GPUs
  // is a base plus one hop per ring step, t = h (kBaseSteps + steps), on every node the
  // shared tables measured (../shared/data/measured/collective_*.csv, 512 B-4 KiB, fp16,
  // all-reduce, all-gather and reduce-scatter at 2/4/8 ranks; per device the line fits within
  // 1.6 % on A100-SXM4 (base 8.1 us, hop 0.99), 3.0 % on B200 (7.1, 1.46) and 12 % on L40S
  // (4.8, 1.34)). Base over hop, pooled: 5 steps (ratios to each table's own 8-GPU all-reduce:
  // 9.2 % mean error; the A100, B200 and L40S tables each held out: 17.9, 4.0, 12.5 %). An
  // all-to-all, and a send/recv as one with a single peer, grows 1.5 steps per doubling of the
  // group (the same tables: 13.7 % mean error at 2/4/8 ranks).
  static constexpr double kBaseSteps = 5;
  static constexpr double kAllToAllStepsPerDoubling = 1.5;
  // The largest group the tables measured: beyond it a group adds NCCL's own per-step growth.
  static constexpr int kMeasuredRanks = 8;
  static double intra_steps(CollectiveOp op, int ranks);
  // The small-message time of `op` over `ranks` GPUs of one node, given the fabric's latency
  // measured as an all-reduce over `reference_ranks` of them.
  static double intra_node_s(CollectiveOp op, int ranks, double reference_s, int reference_ranks);
  // The part of it past the measured groups: NCCL's per-step growth from 8 GPUs to `ranks`.
  static double intra_beyond_s(CollectiveOp op, int ranks);
};

// What NCCL's three protocols make of a message inside a node, where the fabric has no measured
// sweep: it takes the fastest of LL (the small-message latency, a fifth of the bandwidth: half
// of each store is a flag, and fewer channels), LL128 (1.25x the latency, 0.6 of the bandwidth)
// and Simple (3x the latency, all of it), as NCCL's tuner picks the protocol of least time.
// The four factors are the pooled fit of that shape on the shared tables
// (../shared/data/measured/collective_*.csv: all-reduce, all-gather, reduce-scatter and
// all-to-all at 2, 4 and 8 GPUs, 8 KiB to 512 MiB, each table's own latency and largest-size
// bus bandwidth): the median miss falls from 13.8 % (latency + bytes / bandwidth) to 6.3 %,
// the mean from 21.1 to 11.0 %; each table held out of the fit: A100 24.6 -> 11.8 %, B200
// 11.5 -> 7.9 %, L40S 5.6 -> 5.3 % (median). Without it a 2 MiB all-reduce over 8 A100s of a
// cluster file without a sweep was priced 1.4x too fast. The NVSwitch tables alone give the
// same four factors (A100 held out 24.6 -> 10.6 %, B200 11.5 -> 8.3 %). A PCIe node's sweep
// runs on the line (L40S: 5.6 % with its own latency and bandwidth; the protocols' shape,
// with the host's shared paths, prices its 8-32 KiB messages 1.3-1.7x too slow): PCIe nodes
// keep the line. The factors apply to the measured groups' latency; what a group past 8 GPUs
// adds (NcclLatency::intra_beyond_s, NCCL's own per-step growth) is added once. "NVLink" here
// is any GPU-to-GPU fabric of a node (NVLink, NVSwitch, Infinity Fabric under RCCL, which
// keeps NCCL's protocols): every node_fabric but pcie.
struct NcclProtocols {
  static constexpr double kLlBandwidth = 0.2;
  static constexpr double kLl128Latency = 1.25, kLl128Bandwidth = 0.6;
  static constexpr double kSimpleLatency = 3;
  // Seconds to move `bus_bytes` (the bytes times nccl-tests' factor) at `bandwidth_Bps` of
  // bus bandwidth with `latency_s` of small-message latency.
  static double seconds(double latency_s, double bus_bytes, double bandwidth_Bps);
};

// Where the members of one parallel group sit: `ranks` GPUs, consecutive members `stride`
// ranks apart in the global rank order (tensor parallel innermost).
struct GroupPlacement {
  int ranks = 1;
  int stride = 1;
  // > 0: the nodes the group spans, as a user names them (predict): its ranks spread over them
  // as evenly as they go, whatever the stride. 0: placed by the stride.
  int nodes = 0;
};

// What a fused attention kernel runs: which kernel, the sequence length a FlashAttention
// benchmark would name for it (keys per query over the whole square: the sequence length of
// causal fixed-length data, the work-weighted mean document length of packed data), and its
// head dimension. A zero length prices at the device's one figure.
struct AttentionShape {
  FusedAttention kernel = FusedAttention::best;
  double seq_len = 0;
  double head_dim = 0;
  // In FP8 (Software::fp8_attention on a block-scaled run): the kernel's MXFP8 curves where the
  // device has them, its 16-bit ones where it has none.
  bool fp8 = false;
  // The stack's cuDNN release (Software::cudnn); empty: the earliest the part has.
  std::string_view release = {};
};
// The kernel's FLOP/s on the device from its measured curve: among the kernel's curves those
// of the release nearest the shape's (major x 1000 + minor apart, a tie to the newer; a curve
// of unstated release counts as 0, the earliest), of them the head dimension nearest (in
// ratio); log-linear between the measured lengths and flat past them; causal forward as
// measured, causal backward as measured where the benchmark gave it, else the causal forward
// times the measured non-causal backward-to-forward ratio at that length.
// nullopt where the device has no curve for the kernel, or the shape gives no length.
std::optional<double> attention_rate(const Device&, const AttentionShape&, bool backward);
// What a tensor-core kernel benchmarked in short runs keeps at the power limit: the GEMMs'
// sustained over burst fraction (1 where either is unknown).
double sustained_over_burst(const Device&);

// The expected number of `units` (the GPUs, or the nodes, of an expert-parallel group over
// which the experts are spread evenly) that one token's top_k routed experts reach.
double expected_units_hit(const Routing& routing, int units);

class Pricer {
 public:
  Pricer(const Device& device, const Fabric& intra, const Fabric& inter, int gpus_per_node,
         const CostSource* costs);

  Priced gemm(const GemmShape& shape, DType dtype = DType::bf16) const;
  // A `bench memory` operation (shardcost/costs.h), the catalog's where no source answers.
  Priced memory(std::string_view kind, double bytes) const;
  // Fused attention of `flops` (forward, or its backward's): at the kernel's measured rate
  // where the device has one, else at the catalog's efficiency.attention.
  Priced fused_attention(double flops, DType dtype = DType::bf16, const AttentionShape& shape = {},
                         bool backward = false) const;
  Priced memory_pass(double bytes) const;
  Priced collective(CollectiveOp op, double bytes, GroupPlacement group) const;
  // What collective() rests on where a cost source answered it; nullopt for the catalog.
  std::optional<PriceBasis> collective_basis(CollectiveOp op, double bytes,
                                             GroupPlacement group) const;
  // An expert-parallel dispatch or combine of `bytes` (top_k copies of each token) through a
  // deduplicating dispatcher (EpDispatcher::flex): each token crosses the network once per
  // remote node its experts sit on, and NVLink once per GPU (costs/routed.cpp).
  Priced routed_all_to_all(double bytes, const Routing& routing, GroupPlacement group) const;
  // One point-to-point transfer between neighbours of `group` (a ring's step, a pipeline's
  // stage boundary; a pair is a group of 2), over the group's slowest hop: where the group
  // spans nodes some hop crosses them, and a ring step, like a pipeline's steady state, waits
  // for its slowest hop.
  Priced send_recv(double bytes, GroupPlacement group) const;

  // Share of the SMs an overlapped collective occupies (one thread block per NCCL channel).
  double nccl_sm_share() const { return GemmModel::kNcclChannels / device_.sms; }
  // What an NCCL collective hidden behind compute costs, as a share of its time: the measured
  // slowdown of the compute beside it, at least the SMs its channels take.
  double overlap_slowdown() const { return std::max(GemmModel::kOverlapSlowdown, nccl_sm_share()); }

  // Whether a message inside a node takes the fastest of NCCL's protocols (NcclProtocols): on
  // every node fabric but PCIe, whose public sweep follows the latency-bandwidth line.
  bool nccl_protocols() const { return device_.node_fabric != "pcie"; }

  FabricLevel level(GroupPlacement group) const;
  // Members of the group that share a node (the fewest a node holds, where nodes are named).
  int ranks_per_node(GroupPlacement group) const;
  // Nodes the group spans.
  int nodes_spanned(GroupPlacement group) const;
  const Device& device() const { return device_; }
  // Bytes per second a framework's memory-bound kernel moves.
  double kernel_bandwidth() const;

 private:
  Priced catalog_collective(CollectiveOp op, double bytes, GroupPlacement group) const;

  const Device& device_;
  const Fabric& intra_;
  const Fabric& inter_;
  int gpus_per_node_;
  const CostSource* costs_;
};

// The published sweep that prices `op` on `fabric` (its own, else a ring sibling's), or null.
const std::vector<BusbwPoint>* busbw_curve(const Fabric& fabric, CollectiveOp op);
// Seconds for `bytes` on a sweep: time interpolated in log-log between its points, the last
// point's bus bandwidth beyond them, and a straight line from `latency_s` (at most the first
// point's time) up to the first point below them.
double curve_seconds(const std::vector<BusbwPoint>& curve, double bytes, double bus_factor,
                     double latency_s);

// nccl-tests' bus-bandwidth factor: busbw = algbw * factor (doc/PERFORMANCE.md).
double bus_bandwidth_factor(CollectiveOp op, int ranks);

double gemm_efficiency(const Device&, const GemmShape&, DType = DType::bf16);
// A die's FP8 efficiency against bf16's at this shape, from its measured grid (1 without one).
double fp8_shape_relative(const Fp8ShapeGrid&, const GemmShape&);
// Bytes a GEMM's operands hold (and its output, 16-bit for quantized types); one element's are
// dtype_bytes (shardcost/hardware.h).
double gemm_bytes(DType, const GemmShape&);
// Whether the catalog has a figure for a memory kind (the GPU's: copy_d2d, copy_h2d, ...).
bool catalog_prices_memory(std::string_view kind);

}  // namespace shardcost
