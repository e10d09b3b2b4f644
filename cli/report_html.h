#pragma once
// The HTML report: one self-contained file, every plot inline SVG (cli/svg_plot.h).
#include <optional>
#include <string>

#include "shardcost/calibration.h"
#include "shardcost/db.h"
#include "shardcost/estimator.h"
#include "shardcost/learned.h"

namespace shardcost::cli {

struct RankedPlans {
  std::string model, cluster;
  int gpus = 0, global_batch = 0;
  double capacity_bytes = 0;  // device memory, the feasibility limit
  RankResult result;
};

// One fitted model against measured rows: the held-out predictions its record keeps, else the
// rows it was fitted on; with its held-out figures.
struct FittedModelPlot {
  FitReport model;
  std::vector<std::pair<double, double>> measured_predicted_s;
  bool held_out = false;  // the pairs are cross-validation's (rows the model had not seen)
};

// A plan priced on variable-length data, to set beside the measured steps.
struct PredictedSteps {
  std::string label;             // the strategy and the distribution
  std::vector<double> step_s;    // per sampled global batch
  std::vector<int64_t> lengths;  // a sample of the distribution's lengths
};

struct ReportInputs {
  db::StoreInfo info;
  db::CostTable gemm, memory, collective, kernels;
  std::vector<db::StepPoint> steps;  // training steps the store's traces marked
  std::optional<PredictedSteps> predicted;
  std::vector<FittedModelPlot> models;
  std::optional<RankedPlans> plans;
  std::vector<db::JobScheduleRecord> schedules;  // schedule --db
  std::vector<StepCalibration> calibrations;     // fit --table step
};

std::string report_html(const ReportInputs&);
// The job schedules' section: a Gantt chart per schedule (report_schedule.cpp).
std::string schedules_section(const std::vector<db::JobScheduleRecord>&);

// The measured training steps' section: each step calibration's runs, measured against the
// estimate alone and the calibration held out (report_calibration.cpp).
std::string calibrations_section(const std::vector<StepCalibration>&);

// The catalog device a stored device name is (e.g. "NVIDIA H100 80GB HBM3" -> h100-sxm5-80gb):
// the same normalized name, or the same model token and memory size where both are named.
std::optional<Device> catalog_device(const std::string& stored_name);

}  // namespace shardcost::cli
