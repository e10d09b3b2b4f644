#pragma once
// One request, one report: what `estimate` and `rank` are asked (a model, a cluster, a plan or
// a search, the stack, the data, the store) and everything they answer, for transformers and
// operator graphs alike. The command line and the Python module both fill a PlanRequest, call
// run_estimate or run_rank, and render the report; which pricing path runs is decided here.
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/calibration.h"
#include "shardcost/estimator.h"
#include "shardcost/layerwise.h"
#include "shardcost/learned.h"
#include "shardcost/opgraph.h"
#include "shardcost/plan.h"
#include "shardcost/store_costs.h"
#include "shardcost/varlen.h"

namespace shardcost {

// Variable-length data: a length file or a named distribution, and the sampling.
struct VarlenRequest {
  std::string lengths_file, dist, long_seqs = "drop";
  uint64_t seed = 0;
  int batches = 100;
  int64_t batch_tokens = 0;
  int pad_to = 0;
  bool given() const { return !lengths_file.empty() || !dist.empty(); }
  VarlenOptions options() const;  // the file read or the distribution parsed; InputError
};

struct PlanRequest {
  std::string command = "estimate";  // estimate or rank
  std::string model;                 // catalog name, model JSON, config.json, or FILE.onnx
  std::string cluster;               // catalog system or cluster JSON
  std::optional<int> gpus;
  std::string software;   // empty: megatron-core (pytorch-ddp for operator graphs)
  std::string attention;  // the fused attention kernel; empty: the preset's
  std::optional<double> memory_headroom_gib;
  std::optional<int> seq_len;
  std::string db;             // cost store; empty: the catalog only
  std::string network_trace;  // seconds,bandwidth_GBps CSV
  std::string data_loading;   // each rank's loader, "cores=N,rate=R"; empty: input is free
  // estimate: a strategy string or a plan file.
  std::string strategy, plan;
  // rank
  int gbs = 0;
  int top = 10;
  std::string fix;
  std::string objective = "time";
  bool replan = false;
  VarlenRequest varlen;
  // Operator graphs only.
  double epoch_samples = 0;
  std::string optimizer = "sgd";
};

// The request as JSON (the inputs, and what differs from the defaults unless every_key), and
// back: unknown keys, wrong types and missing inputs are one InputError naming `origin` and the
// key.
nlohmann::json to_json(const PlanRequest&, bool every_key = false);
PlanRequest plan_request_from_json(const nlohmann::json&, std::string_view origin);
// A file holding a request, or the JSON an estimate or rank printed (its "request").
PlanRequest load_plan_request(std::string_view path);

// The cost sources of one request, best first, indexed once (ranking prices every candidate
// from memory): a store's measurements, then models fitted on it, then the catalog.
struct CostSources {
  std::optional<StoreCosts> store;
  std::optional<LearnedCosts> learned;
  CostChain chain;
  std::vector<std::string> warnings;  // fitted models that could not be read (skipped)
  const CostSource* source() const { return chain.empty() ? nullptr : &chain; }
};
// db: a store's path; empty: the catalog only.
std::unique_ptr<CostSources> load_cost_sources(const std::string& db);

// How a command ends after its report is rendered: 0; 1 when the answer is a failure (the plan
// does not fit, nothing fits); 2 when the request was bad in a way only pricing showed (a --fix
// every plan turns away). message: the line to say.
struct Verdict {
  int exit_code = 0;
  std::string message;
};

// An operator graph's plans (.onnx): one uniform strategy, or the layer-wise search.
struct GraphReport {
  OpGraph graph;
  LayerwiseOptions options;
  std::optional<GraphPlan> plan;          // estimate
  std::optional<LayerwiseResult> search;  // rank
  int top = 10;
};

struct EstimateReport {
  PlanRequest request;  // as run: the software preset resolved
  Model model;
  Cluster cluster;
  std::optional<GraphReport> graph;  // an operator graph; nothing below is then set
  Plan plan;
  Estimate estimate;
  std::optional<VarlenOptions> varlen_options;
  std::optional<VarlenEstimate> varlen;
  std::optional<TraceEstimate> trace;
  std::optional<Estimate> end_to_end;  // schedule=local: the same plan under 1F1B
  std::optional<CalibratedStep> calibrated;
  StepUncertainty uncertainty;
  std::string stage_tp;  // a plan file whose replicas differ in tp: each stage's ("8/4+2")
  // A plan file on part of its cluster: the GPUs the cluster file holds (cluster is the part).
  int cluster_file_gpus = 0;
  std::vector<std::string> warnings;
  Verdict verdict;
};

struct RankReport {
  PlanRequest request;
  Model model;
  Cluster cluster;
  std::optional<GraphReport> graph;
  // One of: the fixed-length search, variable-length data, or --replan over a trace.
  std::optional<RankResult> fixed;
  std::optional<TrustedRanking> trusted;  // objective time
  std::optional<VarlenOptions> varlen_options;
  std::optional<VarlenRank> varlen;
  std::optional<ReplanResult> replanned;
  std::vector<std::string> warnings;
  Verdict verdict;
};

// costs: the sources of the request's store, read once by a caller that runs several requests
// on it (report); nullptr: read here from request.db, their warnings in the report's.
EstimateReport run_estimate(const PlanRequest&, const CostSources* costs = nullptr);
RankReport run_rank(const PlanRequest&, const CostSources* costs = nullptr);

// The JSON `estimate --format json` and `rank --format json` print, the request included.
nlohmann::json to_json(const EstimateReport&);
nlohmann::json to_json(const RankReport&);
nlohmann::json to_json(const Strategy&);
nlohmann::json to_json(const Estimate&);
nlohmann::json calibrated_json(const CalibratedStep&);
nlohmann::json uncertainty_json(const StepUncertainty&);
// JSON as every command prints it: indented by 2; a byte that is not UTF-8 written as U+FFFD.
std::string json_text(const nlohmann::json&);

// With a calibration, rank prices this many times --top (at least this many tens) of the
// search's best and keeps the calibrated best.
inline constexpr int kCalibratedPool = 4;
// What local updates change about convergence, said beside their price.
extern const char* const kLocalConvergence;

}  // namespace shardcost
