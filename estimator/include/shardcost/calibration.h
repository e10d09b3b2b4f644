#pragma once
// Learning from measured training steps (docs/calibration.md): measured runs read into the
// store with their configuration, a calibration of the estimate's own parts fitted on them per
// device and software stack, and estimates that apply it where it covers them.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardcost/db.h"
#include "shardcost/estimator.h"

namespace shardcost {

// ---------------------------------------------------------------- measured runs
// A stored run's configuration as the estimator prices it.
struct MeasuredRun {
  std::string run_uuid;
  db::MeasuredStepRecord record;
  Model model;
  Cluster cluster;
  Strategy strategy;
  Software software;
};
// A run's cluster as the store keeps it: a catalog system, a cluster file, or a cluster file's
// JSON, with its GPUs.
Cluster run_cluster(std::string_view text, int gpus);
// Throws InputError naming the run when its configuration no longer reads.
MeasuredRun resolve_measured(const db::MeasuredStepRecord&, std::string_view run_uuid);

// The record of one measured run from its parts: the model as JSON, the cluster as given
// (a catalog name or a cluster file's JSON), the canonical strategy and stack text, the
// device of the cluster's first group. Times in seconds, memory in bytes.
struct MeasuredFigures {
  double step_s = 0;
  std::optional<double> step_p10_s, step_p90_s;
  int64_t steps = 0;
  std::optional<double> tokens_per_s;
  std::optional<double> peak_memory_bytes;
};
db::MeasuredStepRecord measured_record(const Model&, std::string_view cluster_text, const Cluster&,
                                       const Strategy&, const Software&, const MeasuredFigures&,
                                       std::string_view label);

// `import runs`: a table of measured runs (CSV with a header, or a JSON array of objects)
// with the columns label, model (a catalog name, a model file, or the model's JSON),
// cluster (a catalog system, a cluster file, or its JSON), gpus, strategy, software,
// step_time_s, and optionally step_time_p10_s, step_time_p90_s, steps, tokens_per_s,
// peak_memory_gib. Every row is checked (its configuration must price) before any is
// returned; one Measurements per row, named by its content (importing twice adds nothing).
std::vector<db::Measurements> import_runs_table(std::string_view text, std::string_view source);
// A Megatron-LM / Megatron-core training log (rank prefixes of srun -l and torchrun allowed):
// one measured run per arguments dump, its model and plan from the dump, its step the median
// of the logged iteration times past the warm-up (the first interval logged after a start or
// a restart, and any interval with one of the first 10 iterations, are left out), its peak
// memory the largest 'max reserved' any rank reported. The log names no GPUs: `cluster` does
// (a catalog system or a cluster file), with the dump's world_size; `software` the stack.
std::vector<db::Measurements> import_megatron_log(std::string_view text, std::string_view source,
                                                  std::string_view cluster,
                                                  std::string_view software);
// What a training log does not say of its run, given beside it.
struct LogImport {
  std::string cluster;        // a catalog system or a cluster file
  std::string software;       // the stack, preset[:key=value,...]
  std::optional<int> gpus;    // where the log does not fix them
  std::string model;          // torchtitan: instead of the config's; NeMo: required
  std::string strategy;       // NeMo: the recipe's plan (required)
  std::string config_text;    // torchtitan: the job config (TOML)
  std::string config_source;  // its file name, for errors
};
// A torchtitan log with its job config: the model (its name and flavor where they are a
// catalog model, else --model) with the config's seq_len, the plan from [parallelism]
// (data_parallel_shard_degree > 1 or -1: FSDP, zero=3; replicate alone: DDP; HSDP refused),
// [training] local/global batch, [activation_checkpoint] (per op: recompute_modules=ops; every
// nth layer: refused), float8/mx converters; the step from each metrics line's tps (tokens per
// second per device over the interval: global_batch x seq_len / (tps x GPUs)), past the warm-up;
// the peak the largest 'memory' (reserved) any rank printed. One run per start at step 1; a
// resume continues its run. The GPUs from the log's device mesh line, else the degrees, else
// opt.gpus.
std::vector<db::Measurements> import_torchtitan_log(std::string_view log, std::string_view source,
                                                    const LogImport&);
// A NeMo 2 / Megatron-Bridge log: the steps from its 'train_step_timing in s' lines (their
// global_batch_size must be the strategy's), the model, GPUs and plan given (the log does not
// print the recipe). One run per start from scratch.
std::vector<db::Measurements> import_nemo_log(std::string_view log, std::string_view source,
                                              const LogImport&);
// A PyTorch profiler trace imported (its kernels and step spans) made a measured run too: the
// step the median of its ProfilerStep spans, the configuration the one given (model, cluster,
// GPUs, strategy, software, all required).
void add_traced_run(db::Measurements&, std::string_view source, const LogImport&);
// The same table's text for records (validate --runs-csv writes the published tables so).
std::string runs_table_csv(const std::vector<db::MeasuredStepRecord>&);

// ---------------------------------------------------------------- calibration
// measured step ~ sum_k factor_k x part_k + overhead, over the estimate's own parts: compute
// by the run's precision, exposed communication by axis, the pipeline's sends and bubble,
// the optimizer; factors and overhead not negative, pulled toward 1 and 0.
struct StepCalibration {
  // The cluster's devices (calibration_devices): one catalog device, or a mixed cluster's
  // several joined by " + "; empty: pooled over every device of the stack.
  std::string device;
  std::string software;  // the preset's name
  struct Factor {
    std::string part;  // compute_bf16, tp_comm, ...
    double value = 1;
    int runs = 0;  // runs where the part was priced above zero: 0, never seen (left at 1)
  };
  std::vector<Factor> factors;
  double overhead_s = 0;  // per step
  int runs = 0, models = 0;
  int max_gpus = 0;
  double lambda = 0;  // the pull toward 1 and 0, chosen by cross-validation
  // Mean |relative error| on its runs: the estimate alone, the calibration fitted on all of
  // them, held out one configuration at a time, one model at a time (0 runs: not possible).
  double analytic_error = 0, fitted_error = 0;
  std::optional<double> configuration_cv_error, model_cv_error;
  // The memory allowance fitted beside it: bytes per GPU on top of the modelled state and
  // activations (from logged peaks; bounded so that every run that ran fits).
  std::optional<double> memory_allowance_bytes;
  int memory_runs = 0;  // runs with a logged peak
  std::vector<std::string> notes;
  // Each run held out one model at a time (one configuration at a time where the runs are of
  // one model): its label, measured, analytic and calibrated seconds.
  struct HeldOut {
    std::string label, model;
    double measured_s = 0, analytic_s = 0, calibrated_s = 0;
  };
  std::vector<HeldOut> held_out;
  // The uncertainty a calibrated step carries: the model-held-out error, else the
  // configuration-held-out one, else the fitted one.
  double uncertainty() const;
  double factor(std::string_view part) const;  // 1 when it has none of that name
};

// What a calibration is fitted per: the cluster's device, or a mixed cluster's devices in name
// order joined by " + " (a mixed cluster is calibrated on its own trials: the devices' shares
// of each part are its own).
std::string calibration_devices(const Cluster&);

// Fits one calibration per device and stack the store's measured runs cover (and one pooled
// over devices per stack, for devices with too few runs of their own), prices them with
// `costs` (the store's, as estimate --db prices), and saves them in the store's fitted_model
// (kind step_calibration), replacing the old ones. Runs whose configuration no longer reads or
// does not price are skipped and said in `skipped`.
std::vector<StepCalibration> fit_step_calibrations(const std::string& store_path,
                                                   const CostSource* costs,
                                                   std::vector<std::string>* skipped);
// The calibrations a store holds.
std::vector<StepCalibration> load_step_calibrations(const std::string& store_path);

// An estimate with a calibration applied, or why none applies.
struct CalibratedStep {
  bool applied = false;
  std::string why_not;         // a calibration exists but does not cover this estimate
  StepCalibration by;          // the one applied (or the nearest that did not cover it)
  double step_s = 0;           // calibrated step; the analytic one where not applied
  double uncertainty = 0;      // relative, the calibration's cross-validated error
  std::vector<TimePart> time;  // the estimate's parts times their factors, and the overhead
  std::optional<double> memory_per_gpu_bytes;  // with the fitted allowance
  std::optional<bool> fits;                    // the verdict with the fitted allowance
};
// nullopt: no calibration for this device and stack, pooled or not.
std::optional<CalibratedStep> calibrate(const Estimate&, const Cluster&, const Software&,
                                        const std::vector<StepCalibration>&);

// validate's rows with a store's calibrations applied: the calibrated step where one covers
// the row, and whether the row's run is among the store's measured runs (in-sample: the
// calibration was fitted on it; its error there says how well it fits, not how it predicts).
struct CalibratedRow {
  std::optional<double> step_s;
  std::string why_not;  // a calibration exists and does not cover the row
  bool in_sample = false;
};
std::vector<CalibratedRow> calibrate_rows(const ValidationReport&,
                                          const std::vector<StepCalibration>&,
                                          const std::vector<db::MeasuredStepRecord>& store_runs,
                                          const CostSource* costs);

// ---------------------------------------------------------------- uncertainty
// How far to trust a step: its expected |relative error| and what that figure rests on.
struct StepUncertainty {
  double relative = 0;
  std::string basis;  // "the calibration's model-held-out error on its 24 runs", ...
  int runs = 0;       // the runs it rests on
};
// The estimate's mean |error| on the published runs nearest a device, precision and software
// preset: validate's rows of all three (at least 3), else of the device and precision, else of
// the device, else every row (the fixed rule's rows, the same runs again, left out); the basis
// says where no row ran under the preset (an empty name: any).
StepUncertainty published_uncertainty(const ValidationReport&, const std::string& device,
                                      const std::string& precision,
                                      const std::string& software = "");
// The published runs' errors, asked for only where no calibration applies (validate prices
// every published table: about 50 ms).
using PublishedErrors = std::function<ValidationReport()>;
// A step's: the calibration's held-out error where `k` applied, the published runs' otherwise.
StepUncertainty step_uncertainty(const Estimate&, const Cluster&, const Software&,
                                 const std::optional<CalibratedStep>& k, const PublishedErrors&);
// Steps sorted fastest first: how many (the best included) lie within `uncertainty` (relative)
// of the best, s <= best x (1 + uncertainty), where the estimate cannot order them.
int indistinguishable_from_best(const std::vector<double>& steps, double uncertainty);

// rank's best plans with the trust the evidence gives them: the store's calibration applied to
// each where it covers it (plans it says no longer fit left out) and, where it covers every
// one, the plans ordered by the calibrated step (else the search's order stands), cut to `top`;
// the best's uncertainty, and how many plans lie within it of the best.
struct TrustedRanking {
  std::vector<Estimate> best;
  std::vector<std::optional<CalibratedStep>> calibrated_steps;  // beside best
  int priced = 0;                  // the search's plans it priced (before the cut)
  int calibrated = 0;              // of them, the calibration applied to
  int over_calibrated_memory = 0;  // plans left out: over memory with the fitted allowance
  std::string not_covered;         // why the calibration left a plan out (the order stands)
  bool reordered = false;          // the calibration changed the search's order
  StepUncertainty uncertainty;     // the best plan's
  int indistinguishable = 0;       // best included
  double next_gap = 0;  // the first plan past them: how much slower than the best (relative)
};
TrustedRanking trusted_ranking(const RankResult&, const Cluster&, const Software&,
                               const std::vector<StepCalibration>&, const PublishedErrors&,
                               int top);

}  // namespace shardcost
