// schedule: many training jobs on one cluster, each at the GPU count and plan that minimise
// the makespan (or the total completion time), against two baselines.
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <optional>

#include "commands.h"
#include "format.h"
#include "run_info.h"
#include "shardcost/db.h"
#include "shardcost/error.h"
#include "shardcost/jobs.h"
#include "shardcost/profiler.h"

namespace shardcost::cli {
namespace {

struct ScheduleArgs {
  std::string jobs, cluster, software = "megatron-core", objective = "makespan";
  std::optional<int> gpus;
  std::string db;  // store to save the schedule in (report draws it)
  std::string solver = "auto", format = "text";
  double time_limit_s = 10;
  bool spill = false;  // Hydra's model hopping for jobs that fit no single GPU
};

std::string hours(double seconds) {
  return fmt::format("{:.2f}", seconds / 3600);
}

nlohmann::json schedule_json(const ScheduleArgs& a, const std::vector<JobCurve>& curves,
                             const JobSchedule& s) {
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
  return {{"cluster", a.cluster},
          {"objective", a.objective},
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

// The plan column: the strategy's sizes, or Hydra's shards on one GPU.
std::string plan_text(const ScheduledJob& j) {
  const Strategy& st = j.strategy;
  if (j.spilled_shards > 0)
    return fmt::format("{} shards spilled to host, mbs={},recompute={} (Hydra)", j.spilled_shards,
                       st.mbs, to_string(st.recompute));
  return fmt::format(
      "tp={},pp={},dp={},cp={},mbs={},vpp={},recompute={},zero={}{}", st.tp, st.pp, st.dp, st.cp,
      st.mbs, st.vpp, to_string(st.recompute), st.zero,
      st.zero_layers.empty() ? "" : ",zero_layers=" + zero_layers_text(st.zero_layers));
}

void print_schedule(const ScheduleArgs& a, const Cluster& c, const std::vector<JobCurve>& curves,
                    const JobSchedule& s) {
  fmt::print("{} jobs on {} ({} GPUs), objective {}, software {}\nsolver: {}\n\n", curves.size(),
             c.name, c.total_gpus(), a.objective == "makespan" ? "makespan" : "total completion",
             a.software, s.solver);
  Table t({"job", "model", "gbs", "steps", "gpus", "start h", "end h", "plan"},
          {false, false, true, true, true, true, true, false});
  for (const ScheduledJob& j : s.jobs) {
    const JobSpec& spec = curves[j.job].spec;
    t.add({spec.name, spec.model, std::to_string(spec.global_batch), std::to_string(spec.steps),
           std::to_string(j.gpus), hours(j.start_s), hours(j.end_s), plan_text(j)});
  }
  fmt::print("{}\n", t.render());
  if (!s.jobs.empty()) {
    auto ratio = [&](double base) {
      return s.makespan_s > 0 && std::isfinite(base) ? fmt::format("{:.2f}x", base / s.makespan_s)
                                                     : std::string("-");
    };
    fmt::print("makespan          {} h (no schedule ends before {} h: {:.1f} % above that bound)\n",
               hours(s.makespan_s), hours(s.makespan_bound_s),
               100 * (s.makespan_s / s.makespan_bound_s - 1));
    fmt::print("total completion  {} h (priority-weighted sum of end times)\n",
               hours(s.completion_s));
    fmt::print("baselines         one after another {} h ({}), cluster split evenly {} h ({})\n",
               hours(s.sequential_s), ratio(s.sequential_s),
               std::isfinite(s.even_split_s) ? hours(s.even_split_s) : std::string("-"),
               ratio(s.even_split_s));
  }
  for (size_t i : s.unschedulable)
    fmt::print("not scheduled     {}: {}\n", curves[i].spec.name,
               curves[i].why_none.empty() ? "no GPU count it may take is on this cluster"
                                          : curves[i].why_none);
  for (size_t i : s.late)
    fmt::print("late              {}: ends after its deadline of {} h\n", curves[i].spec.name,
               hours(*curves[i].spec.deadline_s));
}

// The schedule as a run of the store, for report's Gantt chart.
void save(const ScheduleArgs& a, const Cluster& c, const std::vector<JobCurve>& curves,
          const JobSchedule& s, int64_t start_ns, const std::string& recorded_by) {
  db::Measurements m;
  m.run.uuid = db::new_run_uuid();
  m.run.tool = "shardcost";
  m.run.host = host_info().hostname;
  m.run.command_line = command_line();
  m.run.start_time_ns = start_ns;
  m.run.end_time_ns = now_ns();
  m.run.recorded_by = recorded_by;
  db::JobScheduleRecord r;
  r.cluster = c.name;
  r.gpus = c.total_gpus();
  r.objective = a.objective;
  r.solver = s.solver;
  r.optimal = s.optimal;
  // The store keeps nanoseconds in 64 bits: up to 292 years.
  if (!(s.makespan_s < 9e9) || !(s.sequential_s < 9e9))
    throw InputError(fmt::format(
        "the schedule spans {:.3g} years, longer than the store keeps (nanoseconds in 64 bits); "
        "give fewer steps or tokens",
        std::max(s.makespan_s, s.sequential_s) / (365.25 * 86400)));
  auto ns = [](double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e9)); };
  r.makespan_ns = ns(s.makespan_s);
  r.bound_ns = ns(s.makespan_bound_s);
  r.sequential_ns = ns(s.sequential_s);
  if (std::isfinite(s.even_split_s)) r.even_split_ns = ns(s.even_split_s);
  for (const ScheduledJob& j : s.jobs) {
    const JobSpec& spec = curves[j.job].spec;
    r.jobs.push_back({spec.name, spec.model, spec.global_batch, spec.steps, j.gpus, ns(j.start_s),
                      ns(j.end_s), plan_text(j)});
  }
  m.schedule = std::move(r);
  db::Store store = db::Store::open(a.db, db::Store::Mode::read_write);
  store.write(m);
}

}  // namespace

void add_schedule_command(CLI::App& app, const std::string& recorded_by) {
  auto a = std::make_shared<ScheduleArgs>();
  auto* cmd = app.add_subcommand(
      "schedule", "Schedule many training jobs on one cluster: GPU counts, plans, start times");
  cmd->add_option("--jobs", a->jobs, "jobs file: JSON or CSV (docs/scheduling.md)")->required();
  cmd->add_option("--cluster", a->cluster, "catalog system name or cluster JSON file")->required();
  cmd->add_option("--gpus", a->gpus, "GPU count of the cluster (whole nodes)");
  cmd->add_option("--software", a->software, "software stack (as for estimate)");
  cmd->add_option("--objective", a->objective,
                  "makespan (default) or completion (the priority-weighted sum of end times)");
  cmd->add_option("--solver", a->solver,
                  "auto (exact up to 8 jobs, 6 for completion), exact, or heuristic");
  cmd->add_option("--time-limit", a->time_limit_s, "the exact solver's limit in seconds");
  cmd->add_option("--format", a->format, "text or json");
  cmd->add_option("--db", a->db, "save the schedule in this store (report draws it)");
  cmd->add_flag("--spill", a->spill,
                "also run a job that fits no single GPU on one, shard after shard from host "
                "memory (Hydra's model hopping)");
  cmd->callback([a, recorded_by] {
    const int64_t start_ns = now_ns();
    const Format format = parse_format(a->format, {Format::text, Format::json});
    ScheduleOptions opt;
    if (a->objective == "makespan")
      opt.objective = ScheduleObjective::makespan;
    else if (a->objective == "completion")
      opt.objective = ScheduleObjective::completion;
    else
      throw InputError(fmt::format("--objective '{}': give makespan or completion", a->objective));
    if (a->solver == "auto")
      opt.solver = ScheduleSolver::automatic;
    else if (a->solver == "exact")
      opt.solver = ScheduleSolver::exact;
    else if (a->solver == "heuristic")
      opt.solver = ScheduleSolver::heuristic;
    else
      throw InputError(fmt::format("--solver '{}': give auto, exact or heuristic", a->solver));
    if (!(a->time_limit_s > 0) || a->time_limit_s > 3600)
      throw InputError("--time-limit must be above 0 and at most 3600 seconds");
    opt.time_limit_s = a->time_limit_s;
    const std::vector<JobSpec> specs = load_jobs(a->jobs);
    const Cluster c = load_cluster(a->cluster, a->gpus);
    EstimateOptions eo;
    eo.software = software_preset(a->software);
    eo.breakdown = false;
    const std::vector<JobCurve> curves = job_curves(specs, a->cluster, a->gpus, eo, a->spill);
    const JobSchedule s = schedule_jobs(curves, c.total_gpus(), opt);
    if (!a->db.empty() && !s.jobs.empty()) save(*a, c, curves, s, start_ns, recorded_by);
    if (format == Format::json)
      fmt::print("{}\n", json_text(schedule_json(*a, curves, s)));
    else
      print_schedule(*a, c, curves, s);
    // Jobs left out or late: the schedule is printed whole, and the exit code says it (1).
    if (!s.unschedulable.empty() || !s.late.empty()) {
      std::fflush(stdout);
      fmt::print(stderr, "shardcost: {} job(s) not scheduled, {} late\n", s.unschedulable.size(),
                 s.late.size());
      throw ExitStatus{1};
    }
  });
}

}  // namespace shardcost::cli
