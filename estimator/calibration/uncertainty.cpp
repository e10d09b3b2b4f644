// How far to trust a step: the calibration's held-out error where one applies, else the
// estimate's own error on the published runs nearest it (validate's rows on the same device and
// precision); and which of a ranking's plans that error cannot tell apart from the best.
#include <fmt/format.h>

#include <cmath>

#include "shardcost/calibration.h"

namespace shardcost {
namespace {

// Fewer rows than this on a device (or a device and precision) say too little to stand for it.
constexpr int kMinRows = 3;

struct Near {
  double sum = 0;
  int rows = 0;
  void add(double error) { sum += std::abs(error), ++rows; }
  double mean() const { return rows > 0 ? sum / rows : 0; }
};

}  // namespace

StepUncertainty published_uncertainty(const ValidationReport& report, const std::string& device,
                                      const std::string& precision, const std::string& software) {
  Near stack, both, same_device, every;
  int under_stack = 0;
  for (const ValidationRow& row : report.rows) {
    // The fixed rule's rows are Narayanan's runs again, priced under another rule.
    if (row.table == "megatron2021_fixed_rule" || row.gpus <= 0 || !(row.published_s > 0)) continue;
    const Cluster cluster = run_cluster(row.cluster, row.gpus);
    const Device& d = cluster.groups.front().device;
    std::string why;
    const auto p = resolved_precision(row.strategy, row.software, d, &why);
    const std::string prec = p ? std::string(to_string(*p)) : "";
    const bool ours = row.software.name == software;
    under_stack += ours ? 1 : 0;
    every.add(row.error());
    if (d.name != device) continue;
    same_device.add(row.error());
    if (prec != precision) continue;
    both.add(row.error());
    if (ours) stack.add(row.error());
  }
  // A stack no published run ran under borrows the other stacks' rows, and says so.
  const std::string borrowed =
      software.empty() || under_stack > 0 ? "" : fmt::format("; none ran under {}", software);
  StepUncertainty u;
  const auto said = [&](const Near& n, std::string what) {
    u.relative = n.mean();
    u.runs = n.rows;
    u.basis = fmt::format("the estimate's mean error on the {} published {} runs (validate{})",
                          n.rows, what, borrowed);
    return u;
  };
  if (stack.rows >= kMinRows) return said(stack, device + " " + precision);
  if (both.rows >= kMinRows) return said(both, device + " " + precision);
  if (same_device.rows >= kMinRows) return said(same_device, device);
  u.relative = every.mean();
  u.runs = every.rows;
  u.basis =
      fmt::format("the estimate's mean error on every published run ({}, validate; none on {}{})",
                  every.rows, device, borrowed);
  return u;
}

StepUncertainty step_uncertainty(const Estimate& e, const Cluster& c, const Software& sw,
                                 const std::optional<CalibratedStep>& k,
                                 const PublishedErrors& published) {
  if (k && k->applied) {
    StepUncertainty u;
    u.relative = k->uncertainty;
    u.runs = k->by.runs;
    u.basis = fmt::format("the calibration's {} error on its {} runs",
                          k->by.model_cv_error           ? "model-held-out"
                          : k->by.configuration_cv_error ? "configuration-held-out"
                                                         : "fitted",
                          k->by.runs);
    return u;
  }
  const Device& d = c.groups.front().device;
  std::string why;
  const auto p = resolved_precision(e.strategy, sw, d, &why);
  return published_uncertainty(published(), d.name, p ? std::string(to_string(*p)) : "", sw.name);
}

int indistinguishable_from_best(const std::vector<double>& steps, double uncertainty) {
  if (steps.empty()) return 0;
  int n = 1;
  while (n < static_cast<int>(steps.size()) && steps[n] <= steps.front() * (1 + uncertainty)) ++n;
  return n;
}

}  // namespace shardcost
