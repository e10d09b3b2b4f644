// A step calibration applied to an estimate where it covers it: the same device, or the same
// devices of a mixed cluster (else the stack's pooled calibration), every part it prices seen in
// the runs fitted on, a scale not far beyond theirs.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "calibration/parts.h"
#include "shardcost/calibration.h"

namespace shardcost {
namespace {

// A plan on more than this many times the GPUs of the largest run fitted on is outside what
// the calibration saw: collectives over more ranks, other network tiers.
constexpr int kMaxScaleOut = 4;

}  // namespace

std::optional<CalibratedStep> calibrate(const Estimate& e, const Cluster& c, const Software& sw,
                                        const std::vector<StepCalibration>& calibrations) {
  const std::string device = calibration_devices(c);
  const StepCalibration* own = nullptr;
  const StepCalibration* pooled = nullptr;
  for (const auto& k : calibrations) {
    if (k.software != sw.name) continue;
    if (k.device == device) own = &k;
    if (k.device.empty()) pooled = &k;
  }
  const StepCalibration* by = own ? own : pooled;
  if (!by) return std::nullopt;
  CalibratedStep out;
  out.by = *by;
  out.step_s = e.step_time_s;
  out.uncertainty = by->uncertainty();
  auto refuse = [&](std::string why) {
    out.why_not = std::move(why);
    return out;
  };
  // A plan over its memory is still priced (the calibrated verdict below may differ).
  if (!(e.step_time_s > 0)) return refuse("the estimate prices no step (" + e.reason + ")");
  std::string why;
  const auto precision = resolved_precision(e.strategy, sw, c.groups.front().device, &why);
  const std::string prec = precision ? std::string(to_string(*precision)) : "";
  for (const auto& [part, seconds] : calibration_parts(e, prec)) {
    bool seen = false;
    for (const auto& f : by->factors) seen = seen || (f.part == part && f.runs > 0);
    if (!seen)
      return refuse(
          fmt::format("{} is {:.3f} s of this step and was in none of the {} runs it "
                      "was fitted on",
                      part, seconds, by->runs));
  }
  // A calibration that held out does no better than the estimate alone on its own runs has
  // not learnt anything that carries over (too few runs, or misses it cannot explain).
  if (by->uncertainty() >= by->analytic_error)
    return refuse(
        fmt::format("held out, it misses its runs by {:.1f} %, no better than the "
                    "estimate alone ({:.1f} %)",
                    100 * by->uncertainty(), 100 * by->analytic_error));
  if (c.total_gpus() > kMaxScaleOut * by->max_gpus)
    return refuse(
        fmt::format("{} GPUs is more than {} times the largest run it was fitted on "
                    "({} GPUs)",
                    c.total_gpus(), kMaxScaleOut, by->max_gpus));
  out.applied = true;
  out.step_s = by->overhead_s;
  std::optional<size_t> wait;  // input_wait: what loading takes beyond the calibrated step
  for (const TimePart& p : e.time) {
    if (p.given) {
      wait = out.time.size();
      out.time.push_back(p);
      continue;
    }
    TimePart q = p;
    q.seconds = p.seconds * by->factor(calibration_part(p.name, prec));
    if (q.seconds > 0) {
      q.origin = CostOrigin::calibrated;
      q.sources = {{CostOrigin::calibrated, q.seconds}};
    } else {
      q.sources.clear();
    }
    out.step_s += q.seconds;
    out.time.push_back(q);
  }
  if (wait && e.input) {
    TimePart& w = out.time[*wait];
    w.seconds = std::max(0.0, e.input->load_s - out.step_s);
    w.sources.clear();
    out.step_s += w.seconds;
  }
  out.time.push_back(
      {"overhead", by->overhead_s, CostOrigin::calibrated,
       by->overhead_s > 0
           ? std::vector<std::pair<CostOrigin, double>>{{CostOrigin::calibrated, by->overhead_s}}
           : std::vector<std::pair<CostOrigin, double>>{}});
  if (by->memory_allowance_bytes) {
    const double need =
        e.memory_per_gpu_bytes - memory_part(e, "buffers") + *by->memory_allowance_bytes;
    out.memory_per_gpu_bytes = need;
    out.fits = need <= e.memory_capacity_bytes;
  }
  return out;
}

}  // namespace shardcost
