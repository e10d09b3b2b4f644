// schedule: the options checked, every job's speed-up curve from rank, the schedule, and its
// JSON (docs/scheduling.md).
#include <fmt/format.h>

#include <cmath>

#include "shardcost/error.h"
#include "shardcost/planner_requests.h"
#include "shardcost/units.h"

namespace shardcost {

ScheduleReport run_schedule(const ScheduleRequest& a) {
  ScheduleReport r;
  r.request = a;
  ScheduleOptions opt;
  if (a.objective == "makespan")
    opt.objective = ScheduleObjective::makespan;
  else if (a.objective == "completion")
    opt.objective = ScheduleObjective::completion;
  else
    throw InputError(fmt::format("--objective '{}': give makespan or completion", a.objective));
  if (a.solver == "auto")
    opt.solver = ScheduleSolver::automatic;
  else if (a.solver == "exact")
    opt.solver = ScheduleSolver::exact;
  else if (a.solver == "heuristic")
    opt.solver = ScheduleSolver::heuristic;
  else
    throw InputError(fmt::format("--solver '{}': give auto, exact or heuristic", a.solver));
  if (!(a.time_limit_s > 0) || a.time_limit_s > 3600)
    throw InputError("--time-limit must be above 0 and at most 3600 seconds");
  opt.time_limit_s = a.time_limit_s;
  const std::vector<JobSpec> specs = load_jobs(a.jobs);
  // Before any job's curve is priced (the exact program's bound, checked again on the jobs
  // that can run).
  if (opt.solver == ScheduleSolver::exact && specs.size() > kExactScheduleMaxJobs)
    throw InputError(fmt::format(
        "--solver exact schedules up to {} jobs (its program grows with every pair of jobs), "
        "and the jobs file has {}; use --solver auto or heuristic",
        kExactScheduleMaxJobs, specs.size()));
  r.cluster = load_cluster(a.cluster, a.gpus);
  EstimateOptions eo;
  eo.software = software_preset(a.software);
  eo.breakdown = false;
  r.curves = job_curves(specs, a.cluster, a.gpus, eo, a.spill, a.progress);
  r.schedule = schedule_jobs(r.curves, r.cluster.total_gpus(), opt);
  const JobSchedule& s = r.schedule;
  if (!s.unschedulable.empty() || !s.late.empty())
    r.verdict = {
        1, fmt::format("{} job(s) not scheduled, {} late", s.unschedulable.size(), s.late.size())};
  return r;
}

nlohmann::json to_json(const ScheduleReport& r) {
  const JobSchedule& s = r.schedule;
  const std::vector<JobCurve>& curves = r.curves;
  nlohmann::json jobs = nlohmann::json::array();
  for (const ScheduledJob& j : s.jobs) {
    const JobSpec& spec = curves[j.job].spec;
    jobs.push_back({{"name", spec.name},
                    {"model", spec.model},
                    {"gbs", spec.global_batch},
                    {"steps", spec.steps},
                    {"gpus", j.gpus},
                    {"start_s", round6(j.start_s)},
                    {"end_s", round6(j.end_s)},
                    {"strategy", to_json(j.strategy)},
                    {"spilled_shards", j.spilled_shards}});
  }
  nlohmann::json unschedulable = nlohmann::json::array();
  for (size_t i : s.unschedulable)
    unschedulable.push_back({{"name", curves[i].spec.name}, {"why", curves[i].why_none}});
  nlohmann::json late = nlohmann::json::array();
  for (size_t i : s.late) late.push_back(curves[i].spec.name);
  nlohmann::json curve_list = nlohmann::json::array();
  for (const JobCurve& c : curves) {
    nlohmann::json options = nlohmann::json::array();
    for (const JobOption& o : c.options)
      options.push_back({{"gpus", o.gpus},
                         {"seconds", round6(o.seconds)},
                         {"step_time_s", round6(o.plan.step_time_s)},
                         {"strategy", to_json(o.plan.strategy)},
                         {"spilled_shards", o.spilled_shards}});
    curve_list.push_back({{"name", c.spec.name}, {"options", options}});
  }
  return {{"cluster", r.request.cluster},
          {"objective", r.request.objective},
          {"solver", s.solver},
          {"optimal", s.optimal},
          {"makespan_s", round6(s.makespan_s)},
          {"completion_s", round6(s.completion_s)},
          {"sequential_s", round6(s.sequential_s)},
          {"even_split_s", std::isfinite(s.even_split_s) ? nlohmann::json(round6(s.even_split_s))
                                                         : nlohmann::json(nullptr)},
          {"makespan_bound_s", round6(s.makespan_bound_s)},
          {"jobs", jobs},
          {"unschedulable", unschedulable},
          {"late", late},
          {"curves", curve_list}};
}

}  // namespace shardcost
