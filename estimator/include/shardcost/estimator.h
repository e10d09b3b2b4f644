#pragma once
// shardcost estimator: prices a training strategy for a model on a cluster, and ranks
// strategies. Pure functions of (model, cluster, strategy, software) plus a cost source.
// Everything here returns records; printing belongs to cli/.
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardcost {

// ---------------------------------------------------------------- hardware
enum class DType { fp32, tf32, bf16, fp16, fp8 };
inline constexpr int kDTypeCount = 5;
std::string_view to_string(DType);
DType parse_dtype(std::string_view);  // throws InputError

struct Device {
  std::string name;
  std::string architecture;
  int sms = 0;
  double memory_bytes = 0;              // usable HBM, as the driver reports it
  double memory_bandwidth_Bps = 0;      // peak HBM bandwidth
  double nvlink_bandwidth_Bps = 0;      // per GPU, one direction
  double pcie_bandwidth_Bps = 0;        // per GPU, one direction
  std::array<double, kDTypeCount> peak_flops{};  // dense; 0 = unsupported
  double gemm_efficiency = 0;           // large-GEMM fraction of peak (measured, cited)
  double memory_efficiency = 0;         // streaming-kernel fraction of HBM peak
  double attention_efficiency = 0;      // fused (flash) attention fraction of peak
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
  double efficiency = 1;     // fraction of bandwidth NCCL's bus bandwidth reaches
  // Published nccl-tests sweeps by collective (index: CollectiveOp), ascending in size.
  // Where a collective has one, it prices that collective instead of latency + bandwidth.
  std::array<std::vector<BusbwPoint>, 7> busbw_curves;  // 7: CollectiveOp's values
};

struct NodeGroup {
  Device device;
  int nodes = 1;
  int gpus_per_node = 8;
  Fabric intra_node;
};

// One or more node groups joined by one inter-node fabric. Heterogeneous clusters are a
// shape of the data already; the estimator prices homogeneous ones (one group).
struct Cluster {
  std::string name;
  std::vector<NodeGroup> groups;
  Fabric inter_node;
  int total_gpus() const;
};

// ---------------------------------------------------------------- model
enum class Activation { gelu, swiglu };
enum class AttentionKernel { flash, standard };

struct Model {
  std::string name;
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn_hidden = 0, vocab = 0, seq_len = 0;
  Activation activation = Activation::gelu;
  bool bias = true;              // linear layers carry biases (GPT) or not (Llama)
  bool tied_embeddings = true;   // LM head shares the input embedding
  bool learned_positions = true; // learned position embedding (GPT) or rotary (Llama)
  bool rmsnorm = false;
  double dropout = 0;            // hidden and attention dropout probability
  int experts = 0, top_k = 0;    // MoE when experts > 0
  bool is_moe() const { return experts > 0; }
  int head_dim() const { return hidden / heads; }
};

// ---------------------------------------------------------------- strategy
enum class Recompute { none, selective, full };
std::string_view to_string(Recompute);

struct Strategy {
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, mbs = 1, gbs = 0, vpp = 1;
  Recompute recompute = Recompute::none;
  bool sp = false;
  int zero = 0;
  int gpus() const { return tp * pp * dp * cp; }
  int micro_batches() const { return gbs / (mbs * dp); }
};
std::string to_string(const Strategy&);

// The software stack that runs the strategy: what it overlaps and which kernels it has.
struct Software {
  std::string name;
  AttentionKernel attention = AttentionKernel::flash;
  bool overlap_grad_reduce = true;    // DP gradient reduction overlapped with backward
  bool overlap_param_gather = true;   // ZeRO parameter all-gathers overlapped with compute
  // Gradients kept, accumulated and reduced in this many bytes: 4 = fp32 main gradients
  // (Megatron forces them with bf16), 2 = fp16 gradients of fp16 training.
  int grad_bytes = 4;
  // fp16 training: dynamic loss scaling adds an unscale-and-check pass over the gradients.
  bool loss_scaling = false;
  // Weight-gradient GEMMs accumulate straight into the main gradients. Without it every
  // micro-batch's backward ends with a pass grad += new_grad over all local parameters.
  bool fused_grad_accumulation = true;
  // The input-gradient collective of a column-parallel linear runs asynchronously behind
  // that linear's weight-gradient GEMM (Megatron-LM since September 2021).
  bool async_tp_backward = true;
};
Software software_preset(std::string_view name);  // "megatron-core" | "megatron-lm-2021"
std::vector<std::string> software_presets();

// ---------------------------------------------------------------- cost sources
enum class CostOrigin { catalog, interpolated, measured };
std::string_view to_string(CostOrigin);

enum class CollectiveOp { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv };
static_assert(std::tuple_size_v<decltype(Fabric::busbw_curves)> ==
              static_cast<size_t>(CollectiveOp::send_recv) + 1);
std::string_view to_string(CollectiveOp);
std::optional<CollectiveOp> parse_collective_op(std::string_view);  // to_string's names
enum class FabricLevel { intra_node, inter_node };
std::string_view to_string(FabricLevel);

struct GemmShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  auto operator<=>(const GemmShape&) const = default;
};

struct Priced {
  double seconds = 0;
  CostOrigin origin = CostOrigin::catalog;
};

// Measured costs (e.g. the cost store). Returning nullopt leaves pricing to the catalog.
class CostSource {
 public:
  virtual ~CostSource() = default;
  virtual std::optional<Priced> gemm(const Device&, DType, const GemmShape&) const = 0;
  // bytes: the collective's buffer size as nccl-tests counts it (the full buffer for
  // all-reduce, the gathered output for all-gather, the input for reduce-scatter).
  virtual std::optional<Priced> collective(const Device&, CollectiveOp, double bytes, int ranks,
                                           FabricLevel) const = 0;
};

// ---------------------------------------------------------------- results
struct TimePart {
  std::string name;   // compute_forward, tp_comm, pipeline_bubble, ...
  double seconds = 0;
  CostOrigin origin = CostOrigin::catalog;
};
struct MemoryPart {
  std::string name;  // weights, gradients, optimizer_state, activations, buffers
  double bytes = 0;
};

struct Estimate {
  Strategy strategy;
  bool feasible = false;
  std::string reason;              // why infeasible; empty otherwise
  double step_time_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;       // model FLOPs (no recomputation) per GPU per second
  double mfu = 0;                  // against the device's dense bf16 peak
  double memory_per_gpu_bytes = 0; // the most loaded GPU
  double memory_capacity_bytes = 0;
  double model_flops = 0;          // per step, whole cluster
  double parameters = 0;
  std::vector<TimePart> time;
  std::vector<MemoryPart> memory;
};

// ---------------------------------------------------------------- inputs
// A catalog name or a path to a JSON file; throws InputError naming the field and the fix.
Model load_model(std::string_view name_or_path);
Model parse_model_json(std::string_view json_text, std::string_view origin);
// gpus (optional) sets the cluster's size: whole nodes, or part of one node.
Cluster load_cluster(std::string_view name_or_path, std::optional<int> gpus = std::nullopt);
Cluster parse_cluster_json(std::string_view json_text, std::string_view origin,
                           std::optional<int> gpus = std::nullopt);
Device find_device(std::string_view name);
// "tp=8,pp=8,mbs=1,gbs=64,recompute=selective,sp=true"; dp defaults to gpus/(tp*pp*cp).
Strategy parse_strategy(std::string_view text, int gpus);

// The built-in catalog as JSON text (devices, systems, models), exactly as embedded.
std::string catalog_json();
std::vector<std::string> catalog_names(std::string_view kind);  // "devices"|"systems"|"models"

// ---------------------------------------------------------------- pricing
double parameter_count(const Model&);
// Model FLOPs per step for a global batch (forward + backward, no recomputation).
double model_flops_per_step(const Model&, int global_batch);

struct EstimateOptions {
  Software software = software_preset("megatron-core");
  const CostSource* costs = nullptr;  // nullptr: catalog only
  bool breakdown = true;              // false: totals only (fast path for ranking)
};
// Throws InputError when the strategy does not fit the model or cluster (does not divide);
// a strategy that does not fit in memory is an Estimate with feasible=false and a reason.
Estimate estimate(const Model&, const Cluster&, const Strategy&, const EstimateOptions& = {});

// The distinct GEMM shapes (forward, input-gradient and weight-gradient) one GPU runs for the
// strategy: what `bench gemm --shapes-from` measures so that estimates price from the store.
struct NamedGemm {
  std::string name;  // "qkv", "qkv.dgrad", "mlp_fc1.wgrad", ...
  GemmShape shape;
};
std::vector<NamedGemm> gemm_shapes(const Model&, const Strategy&,
                                   AttentionKernel = AttentionKernel::flash);

// Why a strategy cannot run at all (does not divide, ...) or nullopt.
std::optional<std::string> check_strategy(const Model&, const Cluster&, const Strategy&);

// ---------------------------------------------------------------- ranking
enum class Objective { time, memory };

struct RankOptions {
  int global_batch = 0;
  int top = 10;
  Objective objective = Objective::time;
  std::string fixed;  // strategy keys to pin, "tp=8,recompute=full"
  EstimateOptions estimate;
};

struct RankResult {
  int64_t evaluated = 0;   // candidates priced
  int64_t feasible = 0;
  double elapsed_s = 0;
  std::map<std::string, int64_t> rejected;  // reason -> count
  std::vector<Estimate> best;               // top K, best first, with breakdowns
};
RankResult rank(const Model&, const Cluster&, const RankOptions&);

// ---------------------------------------------------------------- validation
struct ValidationRow {
  std::string table;      // "korthikanti2022" | "megatron2021"
  std::string label;      // "175B selective"
  Strategy strategy;      // the strategy priced (for megatron2021: the best found)
  double published_s = 0;
  double predicted_s = 0;
  double error() const { return (predicted_s - published_s) / published_s; }
};
struct ValidationReport {
  std::vector<ValidationRow> rows;
  double mean_abs_error(std::string_view table) const;
  double max_abs_error(std::string_view table) const;
};
ValidationReport validate(const EstimateOptions& base = {});

}  // namespace shardcost
