// schedule: many training jobs on one cluster, each at the GPU count and plan that minimise
// the makespan (or the total completion time), against two baselines.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <memory>
#include <optional>

#include "commands.h"
#include "format.h"
#include "plan_args.h"  // end_with
#include "progress.h"
#include "run_info.h"
#include "shardcost/db.h"
#include "shardcost/error.h"
#include "shardcost/planner_requests.h"
#include "shardcost/profiler.h"

namespace shardcost::cli {
namespace {

struct ScheduleArgs {
  ScheduleRequest request;
  std::string search;  // a hyperparameter search file instead of jobs
  std::string db;      // store to save the schedule in (report draws it)
  std::string format = "text";
};

std::string hours(double seconds) {
  return fmt::format("{:.2f}", seconds / 3600);
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

void print_schedule(const ScheduleReport& r) {
  const ScheduleRequest& a = r.request;
  const Cluster& c = r.cluster;
  const std::vector<JobCurve>& curves = r.curves;
  const JobSchedule& s = r.schedule;
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

// A search's times: hours, or minutes and seconds where they are shorter.
std::string span(double seconds) {
  if (seconds >= 3600) return fmt::format("{:.2f} h", seconds / 3600);
  if (seconds >= 60) return fmt::format("{:.1f} min", seconds / 60);
  return fmt::format("{:.1f} s", seconds);
}

void print_search(const SearchReport& r) {
  const SearchSpec& s = r.spec;
  fmt::print(
      "search {}: {} trials{} on {} ({} GPUs){}\n", s.name, s.trials,
      s.model.empty() ? std::string() : fmt::format(" of {} (gbs {})", s.model, s.global_batch),
      r.cluster.name, r.cluster.total_gpus(),
      s.model.empty() ? std::string(", step times as given") : ", software " + r.request.software);
  const std::vector<int64_t> b = s.budgets();
  std::vector<std::string> budgets;
  for (int64_t x : b) budgets.push_back(std::to_string(x));
  fmt::print("rungs: {} steps (reduction {}); promoted trials {}\n\n",
             fmt::format("{}", fmt::join(budgets, ", ")), s.reduction,
             s.resume ? "resume from their checkpoints" : "train again from the start");
  Table t({"gpus/trial", "workers", "step s", "halving", "first full", "end", "GPU busy", "plan"},
          {true, true, true, false, true, true, true, false});
  for (const HalvingRun& h : r.runs) {
    const auto p = r.plans.find(h.gpus_per_trial);
    t.add({std::to_string(h.gpus_per_trial), std::to_string(h.workers),
           fmt::format("{:.3f}", h.step_s), std::string(to_string(h.kind)), span(h.first_full_s),
           span(h.makespan_s), fmt::format("{:.0f} %", 100 * h.gpu_busy_share),
           p == r.plans.end() ? std::string("-") : to_string(p->second)});
  }
  fmt::print("{}\n", t.render());
  if (!r.runs.empty()) {
    const HalvingRun& f = r.runs[r.fastest];
    fmt::print(
        "fastest to a full-budget result: {} GPU{} per trial, {} halving: {} (one trial "
        "trained to the full budget alone: {})\n",
        f.gpus_per_trial, f.gpus_per_trial == 1 ? "" : "s", to_string(f.kind), span(f.first_full_s),
        span(f.time_full_s));
    std::vector<std::string> counts;
    for (const RungCount& c : f.rungs) counts.push_back(std::to_string(c.trials));
    fmt::print("trials per rung   {}\n", fmt::join(counts, ", "));
  }
  for (const std::string& why : r.left_out) fmt::print("left out          {}\n", why);
}

// The schedule as a run of the store, for report's Gantt chart.
void save(const std::string& path, const ScheduleReport& rep, int64_t start_ns,
          const std::string& recorded_by) {
  const Cluster& c = rep.cluster;
  const std::vector<JobCurve>& curves = rep.curves;
  const JobSchedule& s = rep.schedule;
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
  r.objective = rep.request.objective;
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
  db::Store store = db::Store::open(path, db::Store::Mode::read_write);
  store.write(m);
}

}  // namespace

void add_schedule_command(CLI::App& app, const std::string& recorded_by) {
  auto a = std::make_shared<ScheduleArgs>();
  ScheduleRequest& q = a->request;
  auto* cmd = app.add_subcommand(
      "schedule", "Schedule many training jobs on one cluster: GPU counts, plans, start times");
  auto* jobs = cmd->add_option("--jobs", q.jobs, "jobs file: JSON or CSV (docs/scheduling.md)");
  auto* search = cmd->add_option(
      "--search", a->search,
      "a hyperparameter search file: planned as synchronous successive halving and as ASHA at "
      "each GPU count per trial (docs/scheduling.md)");
  jobs->excludes(search);
  search->excludes(jobs);
  cmd->add_option("--cluster", q.cluster, "catalog system name or cluster JSON file");
  cmd->add_option("--gpus", q.gpus, "GPU count of the cluster (whole nodes)");
  cmd->add_option("--software", q.software, "software stack (as for estimate)");
  cmd->add_option("--objective", q.objective,
                  "makespan (default) or completion (the priority-weighted sum of end times)");
  cmd->add_option("--solver", q.solver,
                  "auto (exact up to 8 jobs, 6 for completion), exact, or heuristic");
  cmd->add_option("--time-limit", q.time_limit_s, "the exact solver's limit in seconds");
  cmd->add_option("--format", a->format, "text or json");
  cmd->add_option("--db", a->db, "save the schedule in this store (report draws it)");
  cmd->add_flag("--spill", q.spill,
                "also run a job that fits no single GPU on one, shard after shard from host "
                "memory (Hydra's model hopping)");
  auto request_file = std::make_shared<std::string>();
  cmd->add_option("--request", *request_file,
                  "run a saved request (JSON, {\"command\": \"schedule\", \"jobs\" or "
                  "\"search\": FILE, ...}; docs/python.md): options given beside it replace "
                  "its keys");
  cmd->callback([a, recorded_by, request_file, cmd] {
    const int64_t start_ns = now_ns();
    const Format format = parse_format(a->format, {Format::text, Format::json});
    if (!request_file->empty()) {
      // The file's request, the options given replacing its keys (--jobs or --search the
      // other); then as below.
      nlohmann::json given = to_json(a->request);
      if (!a->search.empty()) given["search"] = a->search;
      const ScheduleRequests from_file = schedule_request_from_json(
          planner_request(*cmd, *request_file, given, {{"jobs", "search"}}),
          fmt::format("'{}'", *request_file));
      if (from_file.search) {
        a->search = from_file.search->search;
        a->request.jobs.clear();
        a->request.cluster = from_file.search->cluster;
        a->request.software = from_file.search->software;
        a->request.gpus = from_file.search->gpus;
      } else {
        a->search.clear();
        a->request = *from_file.jobs;
      }
    }
    require_options({{"--cluster", !a->request.cluster.empty()}});
    if (a->request.jobs.empty() == a->search.empty())
      throw InputError("give --jobs FILE (many jobs) or --search FILE (one hyperparameter search)");
    if (!a->search.empty()) {
      const ScheduleRequest& given = a->request;
      if (!a->db.empty() || given.spill || given.objective != "makespan" || given.solver != "auto")
        throw InputError(
            "--search plans both kinds of halving itself; --db, --spill, --objective and "
            "--solver go with --jobs");
      SearchRequest request;
      request.search = a->search;
      request.cluster = given.cluster;
      request.software = given.software;
      request.gpus = given.gpus;
      request.progress = progress_lines("schedule");
      const SearchReport r = run_search(request);
      if (format == Format::json)
        fmt::print("{}\n", json_text(to_json(r)));
      else
        print_search(r);
      end_with(r.verdict);
      return;
    }
    ScheduleRequest request = a->request;
    request.progress = progress_lines("schedule");
    const ScheduleReport r = run_schedule(request);
    if (!a->db.empty() && !r.schedule.jobs.empty()) save(a->db, r, start_ns, recorded_by);
    if (format == Format::json)
      fmt::print("{}\n", json_text(to_json(r)));
    else
      print_schedule(r);
    // Jobs left out or late: the schedule is printed whole, and the exit code says it (1).
    end_with(r.verdict);
  });
}

}  // namespace shardcost::cli
