// schedule_jobs: the instance from the jobs' curves, the solver, the baselines.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "shardcost/error.h"
#include "solver.h"

namespace shardcost {

JobSchedule schedule_jobs(const std::vector<JobCurve>& curves, int cluster_gpus,
                          const ScheduleOptions& opt) {
  if (cluster_gpus < 1) throw InputError("the cluster has no GPUs to schedule jobs on");
  JobSchedule out;
  jobs::Instance in;
  in.capacity = cluster_gpus;
  std::vector<size_t> job_of;  // instance job -> curve
  std::vector<std::vector<size_t>> option_of;
  for (size_t i = 0; i < curves.size(); ++i) {
    std::vector<jobs::Mode> modes;
    std::vector<size_t> options;
    for (size_t k = 0; k < curves[i].options.size(); ++k) {
      const JobOption& o = curves[i].options[k];
      if (o.gpus > cluster_gpus || !(o.seconds > 0) || !std::isfinite(o.seconds)) continue;
      modes.push_back({o.gpus, o.seconds});
      options.push_back(k);
    }
    if (modes.empty()) {
      out.unschedulable.push_back(i);
      continue;
    }
    in.modes.push_back(std::move(modes));
    in.weight.push_back(curves[i].spec.priority);
    in.deadline.push_back(curves[i].spec.deadline_s.value_or(jobs::kNoDeadline));
    job_of.push_back(i);
    option_of.push_back(std::move(options));
  }
  if (in.jobs() == 0) return out;

  if (opt.solver == ScheduleSolver::exact && static_cast<int>(in.jobs()) > kExactScheduleMaxJobs)
    throw InputError(fmt::format(
        "--solver exact schedules up to {} jobs (its program grows with every pair of jobs), "
        "and {} can be scheduled; use --solver auto or heuristic",
        kExactScheduleMaxJobs, in.jobs()));
  const int exact_max = opt.objective == ScheduleObjective::completion
                            ? std::min(opt.exact_max_jobs, 6)
                            : opt.exact_max_jobs;
  const bool exact =
      opt.solver == ScheduleSolver::exact ||
      (opt.solver == ScheduleSolver::automatic && static_cast<int>(in.jobs()) <= exact_max);
  jobs::Solution s;
  std::string why;
  if (exact && jobs::exact_schedule(in, opt.objective, opt.time_limit_s, s, why)) {
    out.solver = s.optimal ? "exact (GLPK MILP, optimal)"
                           : fmt::format(
                                 "exact (GLPK MILP, best within {:.0f} s, not proven "
                                 "optimal)",
                                 opt.time_limit_s);
    out.optimal = s.optimal;
  } else {
    if (exact && opt.solver == ScheduleSolver::exact) throw InputError("schedule: " + why);
    s = jobs::list_schedule(in, opt.objective);
    out.solver =
        exact ? fmt::format("list scheduling (the exact solver: {})", why) : "list scheduling";
  }
  for (size_t j = 0; j < in.jobs(); ++j) {
    const size_t c = job_of[j];
    const JobOption& o = curves[c].options[option_of[j][static_cast<size_t>(s.mode[j])]];
    ScheduledJob sj;
    sj.job = c;
    sj.gpus = o.gpus;
    sj.start_s = s.start[j];
    sj.end_s = s.start[j] + o.seconds;
    sj.strategy = o.plan.strategy;
    sj.spilled_shards = o.spilled_shards;
    if (sj.end_s > in.deadline[j] * (1 + 1e-9)) out.late.push_back(c);
    out.jobs.push_back(sj);
  }
  std::stable_sort(
      out.jobs.begin(), out.jobs.end(),
      [](const ScheduledJob& a, const ScheduledJob& b) { return a.start_s < b.start_s; });
  out.makespan_s = s.makespan;
  out.completion_s = s.completion;
  out.sequential_s = jobs::one_after_another(in).makespan;
  double area = 0, longest = 0;
  for (const auto& ms : in.modes) {
    double least_area = INFINITY, fastest = INFINITY;
    for (const jobs::Mode& m : ms) {
      least_area = std::min(least_area, m.gpus * m.seconds);
      fastest = std::min(fastest, m.seconds);
    }
    area += least_area;
    longest = std::max(longest, fastest);
  }
  out.makespan_bound_s = std::max(longest, area / in.capacity);
  out.even_split_s = jobs::even_split(in).makespan;
  return out;
}

}  // namespace shardcost
