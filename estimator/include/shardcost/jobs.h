#pragma once
#include "shardcost/progress.h"
// Many training jobs on one cluster (Hydra, SIGMOD'21; Saturn, its successor): each job's
// speed-up curve from the estimator's best plan at each GPU count it may take, then a
// schedule choosing each job's GPU count, plan and start time to minimise the makespan or the
// total completion time. Records only; printing belongs to cli/ (docs/scheduling.md).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/estimator.h"

namespace shardcost {

// One job of a jobs file.
struct JobSpec {
  std::string name;
  std::string model;                 // a catalog name or a model file
  int global_batch = 0;              // sequences per step
  int64_t steps = 0;                 // steps to train (or derived from tokens)
  double tokens = 0;                 // tokens to train, when given instead of steps
  double priority = 1;               // weight in the total completion time
  std::optional<double> deadline_s;  // must finish by (seconds from the start)
  std::vector<int> gpu_counts;       // allowed; empty: every count the cluster offers
};

// Parses a jobs file: JSON ({"jobs": [{"name", "model", "gbs", "steps" | "tokens",
// "priority", "deadline_hours", "gpus": [8, 16]}, ...]}) or CSV with those columns ("gpus" as
// 8/16/32). Throws InputError naming the job and the field.
std::vector<JobSpec> parse_jobs(std::string_view text, std::string_view origin);
std::vector<JobSpec> load_jobs(std::string_view path);

// A job at one GPU count: its best plan there and the job's time with it.
struct JobOption {
  int gpus = 0;
  double seconds = 0;  // steps x the plan's step time
  Estimate plan;
  // Hydra's model hopping (Nagrecha and Kumar, SIGMOD'21): a model too large for one GPU runs
  // on one GPU shard after shard, each shard's state brought in over PCIe from host memory
  // while the previous one computes. 0: a plan that fits.
  int spilled_shards = 0;
};
struct JobCurve {
  JobSpec spec;
  std::vector<JobOption> options;  // by GPU count; empty: fits at no allowed count
  std::string why_none;            // when options is empty: why
};

// The GPU counts a job may take on a cluster: powers of two up to one node, then whole
// nodes in powers of two, and the whole cluster.
std::vector<int> offered_gpu_counts(const Cluster&);

// Each job's curve: rank at every allowed count (sub-clusters of the cluster, `gpus` of it
// when given, with the same devices and links), shared between jobs of the same model and
// batch.
// spill: also offer each job that fits no single GPU a one-GPU option in Hydra's model-hopping
// mode (JobOption::spilled_shards; docs/scheduling.md gives its price).
std::vector<JobCurve> job_curves(const std::vector<JobSpec>&, std::string_view cluster,
                                 std::optional<int> gpus, const EstimateOptions&,
                                 bool spill = false, const Progress& progress = {});

enum class ScheduleObjective { makespan, completion };
enum class ScheduleSolver { automatic, exact, heuristic };

// The most jobs --solver exact takes: its program has flow variables for every pair of jobs
// (2,000 jobs made 4,000,000 of them, 10 GB), and past a few dozen GLPK cannot close it anyway.
inline constexpr int kExactScheduleMaxJobs = 64;

struct ScheduleOptions {
  ScheduleObjective objective = ScheduleObjective::makespan;
  ScheduleSolver solver = ScheduleSolver::automatic;
  // automatic: the exact solver up to this many jobs (at most 6 for the completion time,
  // whose program takes GLPK far longer).
  int exact_max_jobs = 8;
  double time_limit_s = 10;  // the exact solver's, after which it keeps its best
};

struct ScheduledJob {
  size_t job = 0;  // index into the curves
  int gpus = 0;
  double start_s = 0, end_s = 0;
  Strategy strategy;
  int spilled_shards = 0;  // Hydra's model hopping on one GPU (JobOption)
};

struct JobSchedule {
  std::vector<ScheduledJob> jobs;     // every schedulable job, by start time
  std::vector<size_t> unschedulable;  // fit at no allowed GPU count
  std::vector<size_t> late;           // end after their deadline (list scheduling only)
  double makespan_s = 0;
  double completion_s = 0;  // the sum of end times, each weighted by its priority
  std::string solver;       // "exact (GLPK MILP, optimal)", "list scheduling", ...
  bool optimal = false;     // proven optimal for the objective
  // Two baselines: every job alone on the whole cluster, one after another; the cluster split
  // into k equal parts (the best k up to one per job), longest first onto the part that
  // frees first (infinity: no split every job fits).
  double sequential_s = 0, even_split_s = 0;
  // No schedule ends sooner: the longest job at its fastest, and every job's least
  // GPU-seconds spread over the whole cluster.
  double makespan_bound_s = 0;
};

// Throws InputError when the cluster has no GPUs, or the exact solver was asked for and finds
// no schedule (deadlines no choice meets, or its time limit).
JobSchedule schedule_jobs(const std::vector<JobCurve>&, int cluster_gpus,
                          const ScheduleOptions& = {});

}  // namespace shardcost
