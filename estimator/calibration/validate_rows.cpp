// validate --db with a store that holds step calibrations: each published row priced again and
// calibrated where a calibration covers it, and marked in-sample where the row's run is among
// the store's measured runs (then the calibration was fitted on it).
#include "shardcost/calibration.h"
#include "shardcost/error.h"

namespace shardcost {

std::vector<CalibratedRow> calibrate_rows(const ValidationReport& report,
                                          const std::vector<StepCalibration>& calibrations,
                                          const std::vector<db::MeasuredStepRecord>& store_runs,
                                          const CostSource* costs) {
  std::vector<CalibratedRow> out;
  for (const ValidationRow& row : report.rows) {
    CalibratedRow c;
    if (row.gpus <= 0 || row.cluster.empty()) {
      out.push_back(c);
      continue;
    }
    const Cluster cluster = run_cluster(row.cluster, row.gpus);
    EstimateOptions opt;
    opt.software = row.software;
    opt.costs = costs;
    const std::string strategy = to_string(row.strategy);
    for (const auto& r : store_runs)
      c.in_sample =
          c.in_sample ||
          (r.model_name == row.model.name && r.gpus == row.gpus && r.strategy == strategy &&
           r.software.substr(0, r.software.find(':')) == row.software.name);
    try {
      const Estimate e = estimate(row.model, cluster, row.strategy, opt);
      if (const auto k = calibrate(e, cluster, row.software, calibrations)) {
        if (k->applied)
          c.step_s = k->step_s;
        else
          c.why_not = k->why_not;
      }
    } catch (const InputError& e) {
      c.why_not = e.what();
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace shardcost
