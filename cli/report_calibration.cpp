// The report's measured training steps: for each step calibration in the store, its runs'
// measured steps against the estimate alone and against the calibration held out a model at a
// time (each run priced by a calibration fitted without its model), with its factors.
#include <fmt/format.h>

#include <algorithm>

#include "report_html.h"
#include "shardcost/units.h"
#include "svg_plot.h"

namespace shardcost::cli {

std::string calibrations_section(const std::vector<StepCalibration>& calibrations) {
  std::string o;
  for (const StepCalibration& k : calibrations) {
    if (k.held_out.empty()) continue;
    svg::Plot p;
    p.title = fmt::format("{} under {}: {} measured runs of {} models",
                          k.device.empty() ? "every device (pooled)" : k.device, k.software, k.runs,
                          k.models);
    p.x = {"measured step (s, log scale)", svg::Scale::log, svg::Ticks::number, {}, {}};
    p.y = {"predicted step (s, log scale)", svg::Scale::log, svg::Ticks::number, {}, {}};
    svg::Series analytic{
        fmt::format("the estimate alone: {:.1f} % mean error", 100 * k.analytic_error),
        {},
        false,
        3,
        {},
        ""};
    svg::Series calibrated{fmt::format("calibrated, {}: {:.1f} % mean error",
                                       k.model_cv_error           ? "its model held out"
                                       : k.configuration_cv_error ? "its configuration held out"
                                                                  : "in-sample",
                                       100 * k.uncertainty()),
                           {},
                           false,
                           3,
                           {},
                           ""};
    double lo = 1e300, hi = 0;
    std::vector<StepCalibration::HeldOut> runs = k.held_out;
    std::sort(runs.begin(), runs.end(),
              [](const auto& a, const auto& b) { return a.measured_s < b.measured_s; });
    for (const auto& h : runs) {
      analytic.points.emplace_back(h.measured_s, h.analytic_s);
      analytic.tips.push_back(fmt::format("{}: measured {:.3f} s, estimate {:.3f} s", h.label,
                                          h.measured_s, h.analytic_s));
      calibrated.points.emplace_back(h.measured_s, h.calibrated_s);
      calibrated.tips.push_back(fmt::format("{}: measured {:.3f} s, calibrated {:.3f} s", h.label,
                                            h.measured_s, h.calibrated_s));
      lo = std::min({lo, h.measured_s, h.analytic_s, h.calibrated_s});
      hi = std::max({hi, h.measured_s, h.analytic_s, h.calibrated_s});
    }
    p.series.push_back(std::move(analytic));
    p.series.push_back(std::move(calibrated));
    p.series.push_back({"predicted = measured", {{lo, lo}, {hi, hi}}, true, 0, {}, ""});
    std::string factors;
    for (const auto& f : k.factors)
      if (f.runs > 0)
        factors += fmt::format("{}{} x{:.2f}", factors.empty() ? "" : ", ", f.part, f.value);
    o += "<figure>" + svg::render(p) +
         fmt::format(
             "<figcaption>Each run's step as measured against the estimate alone and against "
             "the calibration fitted without the run's model (without its configuration where the "
             "runs are of one model). Factors: {}; overhead {:.3f} s a "
             "step{}.</figcaption></figure>\n",
             svg::escape(factors), k.overhead_s,
             k.memory_allowance_bytes ? fmt::format("; memory allowance {:.1f} GiB",
                                                    *k.memory_allowance_bytes / units::kGiB)
                                      : "");
  }
  return o;
}

}  // namespace shardcost::cli
