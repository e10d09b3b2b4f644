#pragma once
// The sibling planners' requests and reports (beside shardcost/request.h's estimate and rank):
// device placement, split learning, embedding tables, many jobs. Each command fills its
// request, calls run_*, renders the report; which planners run, and with what, is decided here.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/device_placement.h"
#include "shardcost/embeddings.h"
#include "shardcost/jobs.h"
#include "shardcost/layerwise.h"
#include "shardcost/request.h"
#include "shardcost/search.h"
#include "shardcost/split_learning.h"

namespace shardcost {

// place: an operator graph's operators on a cluster's devices for pipelined training.
struct PlaceRequest {
  std::string model, cluster, precision = "fp32", optimizer = "sgd", db;
  std::string solver = "ideals";  // ideals or mip
  std::optional<int> gpus;
  int micro_batch = 1, micro_batches = 0;
  int64_t max_ideals = 20000;
  double solver_time_s = 10;
  Progress progress;  // how far the program has got (the command line says it on stderr)
};
struct PlaceReport {
  PlaceRequest request;
  OpGraph graph;
  Cluster cluster;
  DevicePlacement placement;
  // The layer-wise search on the same GPUs and global batch, where they are of one kind.
  std::optional<GraphPlan> layerwise;
  int global_batch = 0;
  std::vector<std::string> warnings;
  Verdict verdict;
};
PlaceReport run_place(const PlaceRequest&);
nlohmann::json to_json(const PlaceReport&);

// split-learning: each edge device's cut and uplink share.
struct SplitLearningRequest {
  std::string model, devices, server, precision = "fp32", db;
  bool inference = false;  // a forward pass per request batch instead of a training round
};
struct SplitLearningReport {
  SplitLearningRequest request;
  OpGraph graph;
  SplitSetup setup;
  Device server;
  SplitResult result;
  std::vector<std::string> warnings;
};
SplitLearningReport run_split_learning(const SplitLearningRequest&);
nlohmann::json to_json(const SplitLearningReport&);

// shard-tables: embedding tables over a cluster's GPUs, the search beside TorchRec's greedy.
struct ShardTablesRequest {
  std::string tables, cluster, optimizer = "rowwise_adagrad", db;
  std::optional<int> gpus;
  int batch = 0, beam = 8;
  std::vector<std::vector<int>> dense_mlps;  // each MLP's layer widths
  std::string dense_precision = "fp32";
  Progress progress;
};
struct ShardTablesReport {
  ShardTablesRequest request;
  std::vector<EmbeddingTable> tables;
  Cluster cluster;
  ShardingOptions options;
  ShardingResult result;
  std::vector<std::string> warnings;
};
ShardTablesReport run_shard_tables(const ShardTablesRequest&);
nlohmann::json to_json(const ShardTablesReport&);

// schedule: many jobs on one cluster, each at the GPU count and plan that minimise the
// objective, against two baselines.
struct ScheduleRequest {
  std::string jobs, cluster, software = "megatron-core", objective = "makespan";
  std::string solver = "auto";
  std::optional<int> gpus;
  double time_limit_s = 10;
  bool spill = false;  // Hydra's model hopping for jobs that fit no single GPU
  Progress progress;
};
struct ScheduleReport {
  ScheduleRequest request;
  Cluster cluster;
  std::vector<JobCurve> curves;
  JobSchedule schedule;
  Verdict verdict;  // jobs left out or late: 1
};
ScheduleReport run_schedule(const ScheduleRequest&);
nlohmann::json to_json(const ScheduleReport&);

// schedule --search: one hyperparameter search planned both ways at every GPU count per trial.
struct SearchRequest {
  std::string search, cluster, software = "megatron-core";
  std::optional<int> gpus;
  Progress progress;
};
struct SearchReport {
  SearchRequest request;
  SearchSpec spec;
  Cluster cluster;
  // Synchronous then asynchronous at each GPU count per trial, ascending.
  std::vector<HalvingRun> runs;
  std::map<int, Strategy> plans;      // the estimator's plan at each count (with a model)
  std::vector<std::string> left_out;  // counts no trial can take, each with why
  size_t fastest = 0;  // the run with the earliest full-budget result (then the earliest end)
  Verdict verdict;     // no count a trial can take: 1
};
SearchReport run_search(const SearchRequest&);
nlohmann::json to_json(const SearchReport&);

// A planner's request as JSON: "command" (place, split-learning, shard-tables or schedule;
// schedule with "search" runs schedule --search) and the command line's options, '_' for '-'
// (shard-tables' dense_mlp: one MLP's widths or a list of them). Run as its command runs it:
// the report's JSON (what --format json prints), how it ends, its warnings.
struct PlannerRun {
  nlohmann::json report;
  Verdict verdict;
  std::vector<std::string> warnings;
};
bool is_planner_command(std::string_view command);
PlannerRun run_planner_json(const nlohmann::json& request, std::string_view origin);

// A request file's JSON object (read whole; not JSON or not an object: InputError naming it
// and `command`, the planner it is for).
nlohmann::json load_planner_request(const std::string& path, std::string_view command);
// Each planner's request from JSON (the keys above; a "command" where given must be the
// planner's) and back, every key written: what `--request FILE` reads and what the command
// line's options replace.
PlaceRequest place_request_from_json(const nlohmann::json&, std::string_view origin);
SplitLearningRequest split_learning_request_from_json(const nlohmann::json&,
                                                      std::string_view origin);
ShardTablesRequest shard_tables_request_from_json(const nlohmann::json&, std::string_view origin);
// schedule: many jobs ("jobs") or one hyperparameter search ("search"), one of the two.
struct ScheduleRequests {
  std::optional<ScheduleRequest> jobs;
  std::optional<SearchRequest> search;
};
ScheduleRequests schedule_request_from_json(const nlohmann::json&, std::string_view origin);
nlohmann::json to_json(const PlaceRequest&);
nlohmann::json to_json(const SplitLearningRequest&);
nlohmann::json to_json(const ShardTablesRequest&);
nlohmann::json to_json(const ScheduleRequest&);

}  // namespace shardcost
