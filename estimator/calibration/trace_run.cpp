// A traced training run as a measured run: the profiler's step spans (ProfilerStep#N) give the
// step; the configuration is given beside the trace, as a trace does not hold it.
#include <fmt/format.h>

#include "calibration/log_lines.h"
#include "shardcost/calibration.h"
#include "shardcost/error.h"

namespace shardcost {

void add_traced_run(db::Measurements& m, std::string_view source, const LogImport& opt) {
  if (opt.model.empty() || opt.strategy.empty() || opt.cluster.empty() || !opt.gpus)
    throw InputError(fmt::format(
        "{}: a trace does not hold its run's configuration: give --model, --cluster, --gpus and "
        "--strategy together (and --software) to store it as a measured run",
        source));
  if (m.steps.empty())
    throw InputError(
        fmt::format("{}: the trace marks no training step (ProfilerStep#N spans, or NVTX ranges "
                    "named so in an Nsight Systems export: --step-prefix); profile with "
                    "torch.profiler's schedule and prof.step() to store it as a measured run",
                    source));
  // The profiler's own schedule (wait, warmup, active) keeps warm-up steps out of the trace:
  // every recorded step counts.
  logs::LogRun r;
  r.model = load_model(opt.model);
  r.cluster = opt.cluster;
  r.gpus = *opt.gpus;
  r.strategy = opt.strategy;
  r.software = opt.software;
  for (const db::StepSpan& s : m.steps) {
    if (s.duration_ns <= 0) continue;
    r.kept.seconds.push_back(static_cast<double>(s.duration_ns) / 1e9);
    ++r.kept.steps;
  }
  r.label = std::string(source);
  // The same trace under another configuration is another measured run.
  const std::string configuration = fmt::format("{}|{}|{}|{}|{}|{}", m.run.uuid, opt.model,
                                                opt.cluster, *opt.gpus, opt.strategy, opt.software);
  db::Measurements run =
      logs::measured_run(r, std::string(source), m.run.tool.empty() ? "kineto" : m.run.tool, source,
                         "", configuration);
  m.measured = std::move(run.measured);
  m.run.uuid = run.run.uuid;
}

}  // namespace shardcost
