#pragma once
// Hardware as the estimator sees it: devices, fabrics, named node groups and clusters, and
// the vocabulary of priced work (GEMM shapes, collectives, cost origins).
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardcost {

// fp8: E4M3 with per-tensor scales (Hopper's Transformer Engine recipes); mxfp8: OCP MX FP8,
// an E8M0 scale per 32 elements; nvfp4: 4-bit E2M1 values with an E4M3 scale per 16 (Blackwell).
enum class DType { fp32, tf32, bf16, fp16, fp8, mxfp8, nvfp4 };
inline constexpr int kDTypeCount = 7;
// The types a training stack quantizes its linears' operands to (fp8, mxfp8, nvfp4).
inline bool is_quantized(DType t) {
  return t == DType::fp8 || t == DType::mxfp8 || t == DType::nvfp4;
}
// Bytes of one element with its share of the block scales: 4, 2, 1, 1 + 1/32, 1/2 + 1/16.
inline double dtype_bytes(DType t) {
  switch (t) {
    case DType::fp32:
    case DType::tf32:
      return 4;
    case DType::fp8:
      return 1;
    case DType::mxfp8:
      return 1 + 1.0 / 32;
    case DType::nvfp4:
      return 0.5 + 1.0 / 16;
    default:
      return 2;
  }
}
std::string_view to_string(DType);
DType parse_dtype(std::string_view);  // throws InputError
// A data type as the store holds it (bf16, bfloat16, half, float, e4m3, ...), or nullopt.
std::optional<DType> parse_store_dtype(std::string_view);

// Which fused attention kernel a stack runs (its rates by sequence length and head dimension
// come from the device's measured curves, Device::attention_kernels): FlashAttention-2,
// cuDNN's fused attention (Transformer Engine's FusedAttention, its choice on Hopper and
// later), FlashAttention-3; `best`: the catalog's one figure for the device's best fused
// kernel (efficiency.attention) at every length.
enum class FusedAttention { best, fa2, cudnn, fa3 };
std::string_view to_string(FusedAttention);
FusedAttention parse_fused_attention(std::string_view);  // throws InputError
// A kernel library's release ("9.19.1") as (major, minor), what tells its kernels' rates apart;
// nullopt unless it is numbers joined by dots.
std::optional<std::pair<int, int>> library_release(std::string_view);
// The same as one number that orders releases, major x 1000 + minor (AttentionCurve::
// release_order); nullopt where library_release has none.
std::optional<int> library_release_order(std::string_view);

// One fused attention kernel's measured rates on a device, per head dimension: FLOP/s at each
// of AttentionKernels::seq_len (causal forward, non-causal forward, non-causal backward; causal
// counted as half the square, backward as 2.5x forward, as FlashAttention's benchmarks count).
// A benchmark that measured the causal backward gives it (backward_causal); one that measured
// causal passes only leaves the non-causal pair empty.
struct AttentionCurve {
  FusedAttention kernel = FusedAttention::cudnn;  // never `best`
  double head_dim = 0;
  // The kernel's MXFP8 variant ("dtype": "mxfp8"): what a block-scaled FP8 run's attention
  // takes where its stack computes attention in FP8 (Software::fp8_attention); 16-bit otherwise.
  bool fp8 = false;
  // The kernel library's release the curve was measured with ("9.19.1"); empty where its
  // source does not say, which counts as older than any stated release. A stack picks among a
  // kernel's releases by Software::cudnn (attention_rate).
  std::string release;
  // The release as attention_rate orders it, major x 1000 + minor (0: unstated); set with
  // `release` (parse_attention_kernels), so a search does not parse it per priced op.
  int release_order = 0;
  // Its own lengths where its benchmark measured others than the part's other curves
  // (AttentionKernels::seq_len); ascending. Empty: the part's.
  std::vector<double> seq_len;
  std::vector<double> forward_causal, forward, backward, backward_causal;
};
struct AttentionKernels {
  std::vector<double> seq_len;  // ascending
  std::vector<AttentionCurve> curves;
  // The lengths `c` is measured at: its own, else the part's.
  const std::vector<double>& lengths(const AttentionCurve& c) const {
    return c.seq_len.empty() ? seq_len : c.seq_len;
  }
};

// FP8 GEMMs' efficiency against bf16 GEMMs of the same shape, each against its own peak,
// measured on one die over a grid of shapes (scripts/fp8-shape-grid.py): m, n and k each on
// `dims` (ascending), `relative` m-major, then n, then k. FP8 halves a tile's multiplies but not
// its operand staging, epilogue or launch, so small dimensions keep less of it.
struct Fp8ShapeGrid {
  std::vector<double> dims;
  std::vector<double> relative;  // dims.size()^3 values
  bool empty() const { return relative.empty(); }
  // Its mean at its two largest cubes (8192^3 and 16384^3 on the catalog's grids), the shapes a
  // device's efficiency.gemm_fp8 is measured at; 0 for a grid that is not a whole cube.
  double large() const {
    const size_t n = dims.size();
    if (n < 2 || relative.size() != n * n * n) return 0;
    auto cube = [&](size_t a) { return relative[(a * n + a) * n + a]; };
    return (cube(n - 2) + cube(n - 1)) / 2;
  }
};

struct Device {
  std::string name;
  std::vector<std::string> aliases;  // the names drivers and tools report for it
  std::string architecture;
  int sms = 0;
  double boost_clock_hz = 0;                     // 0: not known
  double l2_bytes = 0;                           // 0: not known
  double memory_bytes = 0;                       // usable HBM, as the driver reports it
  double memory_bandwidth_Bps = 0;               // peak HBM bandwidth
  double nvlink_bandwidth_Bps = 0;               // per GPU, one direction
  double pcie_bandwidth_Bps = 0;                 // per GPU, one direction
  std::array<double, kDTypeCount> peak_flops{};  // dense; 0 = unsupported
  // The dense 16-bit peak: bf16's, or fp16's on a part without bf16 (what MFU is against).
  double peak16() const {
    return std::max(peak_flops[static_cast<int>(DType::bf16)],
                    peak_flops[static_cast<int>(DType::fp16)]);
  }
  double gemm_efficiency = 0;  // large-GEMM fraction of peak (measured, cited)
  // The same over a short burst (MAMF-style: tens of calls, not power-saturated), as `bench
  // gemm` and published tables measure; 0 = not known. The learned GEMM prior prices store
  // measurements with it; training steps keep the sustained figure.
  double gemm_burst_efficiency = 0;
  // FP8 GEMMs' sustained fraction of the FP8 peak; 0 = not measured for this part, then
  // gemm_efficiency times GemmModel::kFp8RelativeEfficiency (measured on other parts).
  double gemm_fp8_efficiency = 0;
  // Where measured, FP8's efficiency by shape: the large-GEMM figure above, or gemm_efficiency,
  // scaled by the grid at each shape (Pricer; docs/estimator.md, "FP8 GEMMs by shape").
  Fp8ShapeGrid gemm_fp8_shape;
  // FP32 GEMMs on the CUDA cores: their large-GEMM fraction of the FP32 peak, measured apart
  // (SIMT kernels reach more of their peak than tensor-core ones); 0 = gemm_efficiency.
  double gemm_fp32_efficiency = 0;
  double memory_efficiency = 0;     // streaming-kernel fraction of HBM peak
  double attention_efficiency = 0;  // fused (flash) attention fraction of peak
  // Measured rates of named fused kernels by sequence length (the catalog's Hopper parts);
  // a kernel with no curve here runs at attention_efficiency.
  AttentionKernels attention_kernels;
  // How the GPUs of the node this part is built into are linked: "switch" (NVSwitch, or every
  // pair linked directly: any n of them see the same links, so collective costs carry from
  // one rank count to another), "mesh" (an NVLink hybrid cube mesh: some pairs share no link,
  // so 5 ranks can be slower than 4), "pcie" (PCIe switches and host bridges); "" not known.
  std::string node_fabric;
  bool uniform_node() const { return node_fabric == "switch"; }
};

enum class CollectiveOp {
  all_reduce,
  all_gather,
  reduce_scatter,
  all_to_all,
  broadcast,
  reduce,
  send_recv
};
inline constexpr size_t kCollectiveOpCount = static_cast<size_t>(CollectiveOp::send_recv) + 1;
std::string_view to_string(CollectiveOp);
// to_string's names, and the store's spellings all_to_all and send_recv.
std::optional<CollectiveOp> parse_collective_op(std::string_view);
enum class FabricLevel { intra_node, inter_node };
std::string_view to_string(FabricLevel);

// How a collective's group sits on the nodes: its ranks, and the nodes they span. A group of
// 16 over 2 nodes (8 a node) and one of 16 over 16 (1 a node) are different curves: they
// drive 8 NICs a node and 1.
struct GroupShape {
  int ranks = 1;
  int nodes = 1;
  FabricLevel level() const {
    return nodes > 1 ? FabricLevel::inter_node : FabricLevel::intra_node;
  }
  int ranks_per_node() const { return nodes > 0 ? ranks / nodes : ranks; }
  // A stored measurement's group: nodes as it names them, at least two between nodes (a row
  // that names none there spanned more than one), one inside a node.
  static GroupShape measured(int ranks, int nodes, FabricLevel level) {
    return {ranks, level == FabricLevel::inter_node ? (nodes > 2 ? nodes : 2) : 1};
  }
};

// One point of an nccl-tests sweep: bus bandwidth at one buffer size (nccl-tests' size
// column: the whole buffer, for all_gather the gathered output).
struct BusbwPoint {
  double bytes = 0;
  double busbw_Bps = 0;
};

struct Fabric {
  double bandwidth_Bps = 0;  // per GPU, one direction
  double latency_s = 0;      // small-message collective latency
  // The group `latency_s` was measured on: an all-reduce over this many GPUs (intra-node
  // fabrics; the network's is 2 nodes of 8). Smaller and larger groups scale from it.
  int latency_ranks = 8;
  double efficiency = 1;  // fraction of bandwidth NCCL's bus bandwidth reaches
  // Published nccl-tests sweeps by collective (index: CollectiveOp), ascending in size.
  // Where a collective has one, it prices that collective instead of latency + bandwidth.
  std::array<std::vector<BusbwPoint>, kCollectiveOpCount> busbw_curves;
};

// Nodes of one kind. Groups are named ("g0", "g1", ... where the file names none) and hold
// consecutive global ranks in the order the cluster lists them.
struct NodeGroup {
  std::string name;
  Device device;
  int nodes = 1;
  int gpus_per_node = 8;
  // GPUs that share one NVLink domain, a whole number of nodes (GB200/GB300 NVL72: 72 over
  // 18 trays of 4); 0: the node. Groups inside a domain run over intra_node.
  int nvlink_domain_gpus = 0;
  int domain_gpus() const { return nvlink_domain_gpus > 0 ? nvlink_domain_gpus : gpus_per_node; }
  Fabric intra_node;
  // The group's own network (its NICs, per GPU), where its file gives one; else the cluster's.
  std::optional<Fabric> inter_node;
  int gpus() const { return nodes * gpus_per_node; }
};

// A link between two node groups, per GPU and one direction (a cluster file's `links`).
// A bandwidth over time: (seconds, bytes per second per GPU, one direction) points in
// increasing time; each bandwidth holds until the next point, and the last point closes the
// trace ([[0, 25], [600, 5], [900, 25], [1800, 25]]: 25 GB/s for 10 minutes, 5 for 5, 25 for 15).
using BandwidthTrace = std::vector<std::pair<double, double>>;

struct GroupLink {
  size_t a = 0, b = 0;  // indices into Cluster::groups
  Fabric fabric;
  BandwidthTrace trace;  // empty: the fabric's bandwidth throughout
};

// One or more node groups joined by an inter-node fabric (the cluster's, a group's own, or a
// link between two groups). Ranks fill the groups in the order the cluster lists them.
struct Cluster {
  std::string name;
  std::vector<NodeGroup> groups;
  Fabric inter_node;
  std::vector<GroupLink> links;
  // The inter-node network's bandwidth over time (every group's own network follows it);
  // empty: constant. Links carry their own traces.
  BandwidthTrace network_trace;
  int total_gpus() const;
  // The group named `name`, or nullptr.
  const NodeGroup* group(std::string_view name) const;
  // The groups' names, "a, b, c" (for messages that name a group it does not have).
  std::string group_names() const;
  // The network of group g's nodes among themselves.
  const Fabric& network_of(size_t g) const;
  // What a message between a member of group a and one of group b travels over: the same
  // group's network, the link the file gives, or else the slower of the two sides' networks
  // (the lower bandwidth, the higher latency, no measured sweep).
  Fabric between(size_t a, size_t b) const;
};

// Where a price came from: the catalog (datasheets times measured efficiencies), the store
// (an exact measurement, or interpolated between measurements), or a model fitted on the
// store (learned inside the domain it was validated on, extrapolated outside it or for a
// device it has no rows of). calibrated: a whole part of a step scaled by a calibration fitted
// on measured training runs (shardcost/calibration.h); never the origin of one kernel's price.
enum class CostOrigin { catalog, interpolated, measured, learned, extrapolated, calibrated };
std::string_view to_string(CostOrigin);

struct GemmShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  auto operator<=>(const GemmShape&) const = default;
};

struct Priced {
  double seconds = 0;
  CostOrigin origin = CostOrigin::catalog;
};

// An embedding table's access skew as a histogram: (share of the rows, share of the lookups)
// per bucket, hottest first, each bucket's rows drawn alike; the shares of each kind add up to
// 1. Empty: the skew is a Zipf exponent (or uniform).
using AccessHistogram = std::vector<std::pair<double, double>>;

// One embedding-bag pass as `bench embedding` runs it: `batch` bags of `pooling` lookups on
// average into a table of `rows` x `dim` (a shard: its rows and columns, the bags it serves),
// uniform or Zipf-skewed; forward the pooled gather, backward the gradient scatter and the
// optimizer's sparse update.
struct EmbeddingPass {
  bool backward = false;
  int dtype_bytes = 4;                        // the weights: 4 fp32, 2 fp16/bf16
  std::string optimizer = "rowwise_adagrad";  // backward: rowwise_adagrad | sgd | adam
  double rows = 0, dim = 0, pooling = 1, batch = 0, zipf = 0;
  AccessHistogram histogram;  // when given, the skew instead of zipf
};
// A pass's price and the part of it that does not grow with the work (launches, the sort's
// set-up): a fused kernel serving several shards pays that part once.
struct EmbeddingPriced {
  Priced priced;
  double fixed_s = 0;
};

}  // namespace shardcost
