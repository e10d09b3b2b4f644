// rank's best plans as far as the evidence orders them: the store's calibration applied to each
// (re-ordering them by the calibrated step where it applies), and the plans the step's
// uncertainty cannot tell from the best.
#include <algorithm>

#include "shardcost/calibration.h"

namespace shardcost {

TrustedRanking trusted_ranking(const RankResult& r, const Cluster& c, const Software& sw,
                               const std::vector<StepCalibration>& calibrations,
                               const PublishedErrors& published, int top) {
  struct Ranked {
    const Estimate* estimate;
    std::optional<CalibratedStep> calibrated;
    double step_s;
  };
  std::vector<Ranked> plans;
  TrustedRanking out;
  out.priced = static_cast<int>(r.best.size());
  for (const Estimate& e : r.best) {
    std::optional<CalibratedStep> k;
    if (!calibrations.empty()) k = calibrate(e, c, sw, calibrations);
    if (k && k->applied) {
      if (k->fits && !*k->fits) {
        ++out.over_calibrated_memory;
        continue;
      }
      ++out.calibrated;
    } else if (k && out.not_covered.empty()) {
      out.not_covered = k->why_not;
    }
    plans.push_back({&e, k, k && k->applied ? k->step_s : e.step_time_s});
  }
  // Calibrated steps are ordered against calibrated steps only: where the calibration leaves a
  // plan out, the search's (analytic) order stands.
  const bool by_calibration = out.calibrated > 0 && out.not_covered.empty();
  if (by_calibration)
    std::stable_sort(plans.begin(), plans.end(),
                     [](const Ranked& a, const Ranked& b) { return a.step_s < b.step_s; });
  else
    for (Ranked& p : plans) p.step_s = p.estimate->step_time_s;
  if (static_cast<int>(plans.size()) > top) plans.resize(top);
  std::vector<double> steps;
  for (size_t i = 0; i < plans.size(); ++i) {
    out.reordered = out.reordered || plans[i].estimate != &r.best[i];
    out.best.push_back(*plans[i].estimate);
    out.calibrated_steps.push_back(plans[i].calibrated);
    steps.push_back(plans[i].step_s);
  }
  if (plans.empty()) return out;
  // The steps compared are analytic where the order stands: so is their uncertainty.
  out.uncertainty =
      step_uncertainty(*plans.front().estimate, c, sw,
                       by_calibration ? plans.front().calibrated : std::nullopt, published);
  out.indistinguishable = indistinguishable_from_best(steps, out.uncertainty.relative);
  if (out.indistinguishable < static_cast<int>(steps.size()))
    out.next_gap = steps[out.indistinguishable] / steps.front() - 1;
  return out;
}

}  // namespace shardcost
