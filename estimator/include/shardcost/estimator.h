#pragma once
// shardcost estimator: prices a training plan for a workload on a cluster, and searches plans.
// Pure functions of (workload, cluster, plan, software) plus cost sources. Everything here
// returns records; printing belongs to cli/. The layers behind it (docs/architecture.md):
//   workload/ (graphs)  plan/ (strategy, placement, memory, schedule, estimate)
//   costs/ (sources, catalog)  search/ (rank)  inputs/ (catalog, JSON)  validate/
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/costs.h"
#include "shardcost/data_loading.h"
#include "shardcost/hardware.h"
#include "shardcost/model.h"
#include "shardcost/plan.h"
#include "shardcost/predict.h"
#include "shardcost/strategy.h"
#include "shardcost/workload.h"

namespace shardcost {

// ---------------------------------------------------------------- results
struct TimePart {
  std::string name;  // compute_forward, tp_comm, pipeline_bubble, ...
  double seconds = 0;
  CostOrigin origin = CostOrigin::catalog;  // the origin that priced most of it
  // Seconds per origin that priced any of it (they sum to seconds).
  std::vector<std::pair<CostOrigin, double>> sources;
  bool given = false;  // priced from a figure the user gave (input_wait's loading rate)
};
struct MemoryPart {
  std::string name;  // weights, gradients, optimizer_state, activations, buffers
  double bytes = 0;
};

// On a mixed cluster (or a plan whose replicas differ in TP degree), one pipeline stage: the
// group, device and TP degree of its slowest replica, its seconds per micro-batch there, and
// the memory of its replica with the least headroom against that replica's device.
struct StageReport {
  int stage = 0;
  std::string group, device;
  int tp = 1;
  double seconds = 0;
  double memory_bytes = 0, capacity_bytes = 0;
};

// How far from the capacity a memory verdict is within the model: the state and activation
// model against Megatron's own measured peaks is within 1-2.4 % (issue 32's review of NVIDIA's
// Llama 3.1 405B runs), and the allowance (plan/memory.h's MemoryModel) is an estimate; a need
// within this share of the capacity is reported as near the limit, either way.
inline constexpr double kMemoryVerdictUncertainty = 0.03;

// dp_sync=async or local (Strategy::dp_sync): what the step time rests on, said beside it.
// Neither changes only the time: what is trained changes too, and that is not priced.
struct DataParallelSync {
  DpSync mode = DpSync::sync;
  int bound_steps = 0;      // async: the staleness bound; local: the averaging period
  int staleness = 0;        // async: how many updates late a replica's gradients arrive
  double exchange_s = 0;    // one whole exchange of gradients or parameters
  double per_update_s = 0;  // the step: one update of each replica
  double per_sample_s = 0;  // the step over the samples of all replicas
};

struct Estimate {
  Strategy strategy;
  bool feasible = false;
  std::string reason;  // why infeasible; empty otherwise
  double step_time_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;        // model FLOPs (no recomputation) per GPU per second
  double mfu = 0;                   // against the device's dense bf16 peak
  double memory_per_gpu_bytes = 0;  // the most loaded GPU
  double memory_capacity_bytes = 0;
  // The need is within the memory model's uncertainty of the capacity: the verdict (fits or
  // not) could go either way on a real run.
  bool memory_near_limit = false;
  double model_flops = 0;  // per step, whole cluster
  double parameters = 0;
  std::vector<TimePart> time;
  std::vector<MemoryPart> memory;
  // Mixed clusters only: every stage, and every link between groups the plan's collectives
  // and sends cross ("stage 1 -> 2: h100 <-> a100, 25.0 GB/s, 20 us").
  std::vector<StageReport> stages;
  std::vector<std::string> links;
  // rank on a mixed cluster: the order of the node groups the plan's ranks fill (the stages
  // take them in this order), where it differs from the cluster file's.
  std::vector<std::string> group_order;
  std::optional<DataParallelSync> dp_sync;  // dp_sync=async or local only
  // With EstimateOptions::loading: the input pipeline against the step (step_time_s includes
  // its wait; the breakdown's input_wait part when the step is input-bound).
  std::optional<InputBudget> input;
};

// ---------------------------------------------------------------- inputs
// A catalog name or a path to a JSON file; throws InputError naming the field and the fix.
Model load_model(std::string_view name_or_path);
Model parse_model_json(std::string_view json_text, std::string_view origin);
// The model as a model file's JSON: parse_model_json reads it back into the same model (what
// the store keeps of a measured run's model).
std::string model_json(const Model&);
// gpus (optional) sets the cluster's size: whole nodes, or part of one node.
Cluster load_cluster(std::string_view name_or_path, std::optional<int> gpus = std::nullopt);
Cluster parse_cluster_json(std::string_view json_text, std::string_view origin,
                           std::optional<int> gpus = std::nullopt);
Device find_device(std::string_view name);
// Part of a cluster: `take` lists (group index, GPUs) in the order the ranks fill them, each a
// whole number of the group's nodes or part of one node; the groups not listed are left out,
// and so are the links to them. `why` names what asks for it in the messages ("--gpus 12",
// "plan").
Cluster cluster_part(const Cluster&, const std::vector<std::pair<size_t, int>>& take,
                     std::string_view why);

// Bandwidth traces (docs/seed-planners.md): a `seconds,bandwidth_GBps` CSV for the cluster's
// network (--network-trace), and the segments the cluster's traces (its network's and its
// links') cut time into, each with the cluster at that segment's bandwidths. Throw InputError
// for times that do not increase, bandwidths that are not positive, or traces that share no
// time.
BandwidthTrace checked_trace(const std::vector<std::pair<double, double>>& points_GBps,
                             std::string_view where);
BandwidthTrace parse_network_trace_csv(std::string_view text, std::string_view origin);
BandwidthTrace load_network_trace(std::string_view path);
struct NetworkSegment {
  double start_s = 0, end_s = 0;
  Cluster cluster;
  std::string bandwidths;  // "network 5 GB/s, a100-h100 12.5 GB/s"
};
bool has_bandwidth_traces(const Cluster&);                     // its network's or a link's
std::vector<NetworkSegment> network_segments(const Cluster&);  // empty: no trace
// The catalog system built of this catalog device, if there is one (dgx-a100 for a100-sxm4-80gb).
std::optional<std::string> catalog_system_for(std::string_view device_name);
// "tp=8,pp=8,mbs=1,gbs=64,recompute=selective,sp=true"; dp defaults to gpus/(tp*pp*cp).
Strategy parse_strategy(std::string_view text, int gpus);

// The built-in catalog as JSON text (devices, systems, models), exactly as embedded.
std::string catalog_json();
std::vector<std::string> catalog_names(std::string_view kind);  // "devices"|"systems"|"models"

// ---------------------------------------------------------------- pricing
// The main model's parameters, as papers quote them (without multi-token prediction).
double parameter_count(const Model&);
// Those one token runs through: every layer with its top-k routed and its shared experts only.
double active_parameter_count(const Model&);
// What a released checkpoint stores besides: each multi-token-prediction module's copy of the
// embedding and of the output head (DeepSeek-V3's layer 61 holds embed_tokens and
// shared_head.head).
double mtp_checkpoint_copies(const Model&);
// The multi-token-prediction modules' own weights (they share the embedding and output head).
double mtp_parameter_count(const Model&);
// Model FLOPs per step for a global batch (forward + backward, no recomputation).
double model_flops_per_step(const Model&, int global_batch);

struct EstimateOptions {
  Software software = software_preset("megatron-core");
  const CostSource* costs = nullptr;  // nullptr: catalog only
  bool breakdown = true;              // false: totals only (fast path for ranking)
  // Each rank's data loader: the step waits for loading beyond its compute (empty: input free).
  std::optional<DataLoading> loading;
};
// Throws InputError when the strategy does not fit the model or cluster (does not divide);
// a strategy that does not fit in memory is an Estimate with feasible=false and a reason.
Estimate estimate(const Model&, const Cluster&, const Strategy&, const EstimateOptions& = {});
// Any workload, any plan: the one pricing path every command and search goes through.
Estimate estimate(const Workload&, const Cluster&, const Plan&, const EstimateOptions& = {});

// The distinct GEMM shapes (forward, input-gradient and weight-gradient) one GPU runs for the
// strategy: what `bench gemm --shapes-from` measures so that estimates price from the store.
// Throws InputError for a strategy the model cannot take (tp=3 of 32 heads).
struct NamedGemm {
  std::string name;  // "qkv", "qkv.dgrad", "mlp_fc1.wgrad", ...
  GemmShape shape;
};
std::vector<NamedGemm> gemm_shapes(const Model&, const Strategy&,
                                   AttentionKernel = AttentionKernel::flash);
std::vector<NamedGemm> gemm_shapes(const Workload&, const Strategy&,
                                   AttentionKernel = AttentionKernel::flash);

// Why a strategy cannot run at all (does not divide, ...) or nullopt.
std::optional<std::string> check_strategy(const Model&, const Cluster&, const Strategy&);
std::optional<std::string> check_strategy(const Workload&, const Cluster&, const Strategy&);

// ---------------------------------------------------------------- ranking
enum class Objective { time, memory };

// What rank searches at most: global batches (sequences) and micro-batch sizes (larger ones
// are refused or not tried; no input may make the search run for minutes).
inline constexpr int kMaxGlobalBatch = 1 << 24;
inline constexpr int kMaxMicroBatch = 4096;

struct RankOptions {
  int global_batch = 0;
  int top = 10;
  Objective objective = Objective::time;
  std::string fixed;  // strategy keys to pin, "tp=8,recompute=full"
  // A plan whose memory need is above the capacity by no more than the memory model's
  // uncertainty (kMemoryVerdictUncertainty) counts as fitting. For pricing a run that is known
  // to have run (validate): the run settles what the model cannot tell. (The fixed-length
  // search only: rank_varlen keeps what fits.)
  bool near_limit_fits = false;
  // On one node group, the best plans with a pipeline are priced again with the layers per
  // stage that balance their stages (the first and last stages' embedding, head and MTP
  // counted). Off for pricing a run whose layout is known (validate: the default split, as
  // Megatron runs layers that divide evenly).
  bool balance_stages = true;
  EstimateOptions estimate;
};

struct RankResult {
  int64_t evaluated = 0;  // candidates priced
  int64_t feasible = 0;
  double elapsed_s = 0;
  std::map<std::string, int64_t> rejected;  // reason -> count
  std::vector<Estimate> best;               // top K, best first, with breakdowns
  // Per-layer sharding (zero_layers, OSDP): the fastest mixture rank priced, where a shape's
  // uniform ZeRO-3 fits and a lower stage does not, and that shape under each uniform stage
  // the stack has (feasible or not), by stage.
  struct Sharding {
    Estimate mixture;
    std::vector<Estimate> uniform;
  };
  std::optional<Sharding> sharding;
};
RankResult rank(const Model&, const Cluster&, const RankOptions&);
RankResult rank(const Workload&, const Cluster&, const RankOptions&);

// ---------------------------------------------------------------- networks that change
// One plan over a cluster's bandwidth traces: its step in each segment and the steps it
// completes over the trace.
struct TraceSegmentEstimate {
  double start_s = 0, end_s = 0;
  std::string bandwidths;
  Estimate estimate;
};
struct TraceEstimate {
  std::vector<TraceSegmentEstimate> segments;
  double duration_s = 0, steps = 0;  // steps: sum of each segment's length over its step
};
TraceEstimate estimate_over_trace(const Workload&, const Cluster&, const Plan&,
                                  const EstimateOptions& = {});
// rank --replan: the best plan of each segment; the best single plan over the whole trace
// (the most steps, among the segments' best); where the plan changes, and the steps gained.
struct ReplanResult {
  std::vector<TraceSegmentEstimate> best;  // per segment
  Strategy single;                         // the best single plan
  std::vector<double> single_step_s;       // its step per segment (0: does not fit there)
  double duration_s = 0, replan_steps = 0, single_steps = 0;
  std::vector<double> switches_s;  // segment starts where the best plan changes
};
ReplanResult replan(const Model&, const Cluster&, const RankOptions&);

// ---------------------------------------------------------------- validation
struct ValidationRow {
  std::string table;  // "korthikanti2022" | "megatron2021" | "megatron2021_fixed_rule"
  std::string label;  // "175B selective"
  Strategy strategy;  // the strategy priced (for megatron2021: the best found)
  double published_s = 0;
  double predicted_s = 0;
  bool fits = true;  // false: no plan of the row's keys fits; priced as given, without recompute
  double error() const { return (predicted_s - published_s) / published_s; }
  // The measured run the row is, as it was priced (validate --runs-csv): the model, the
  // cluster as a catalog system name or a cluster file's JSON, its GPUs, the stack.
  Model model;
  std::string cluster;
  int gpus = 0;
  Software software;
};
// A catalog model's parameters against its released checkpoint's: every stored weight (the
// main model, multi-token-prediction modules and the copies a checkpoint keeps of shared
// tables) and the activated ones per token (the publisher's rounded figure).
struct CountRow {
  std::string model;
  double published = 0, computed = 0;                // checkpoint parameters
  double published_active = 0, computed_active = 0;  // activated per token
  double error() const { return (computed - published) / published; }
  double active_error() const { return (computed_active - published_active) / published_active; }
};
// Training FLOPs per token as a publisher counts them (causal attention, no MTP) against this
// count under the same convention, and under Megatron's (the whole square: model FLOPs).
struct FlopRow {
  std::string model;
  int seq_len = 0;
  double published = 0, computed_causal = 0, computed_full = 0;
  double error() const { return (computed_causal - published) / published; }
};
struct ValidationReport {
  std::vector<ValidationRow> rows;
  std::vector<CountRow> counts;
  std::vector<FlopRow> flops;
  double mean_abs_error(std::string_view table) const;
  double max_abs_error(std::string_view table) const;
};
ValidationReport validate(const EstimateOptions& base = {});

}  // namespace shardcost
