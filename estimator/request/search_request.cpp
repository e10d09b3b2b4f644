// schedule --search: a trial's step time at each GPU count per trial (the estimator's best plan
// there, or the file's own figures), both kinds of halving simulated at each, and the JSON
// (docs/scheduling.md, "Hyperparameter searches").
#include <fmt/format.h>

#include <cmath>

#include "shardcost/error.h"
#include "shardcost/planner_requests.h"
#include "shardcost/units.h"

namespace shardcost {

SearchReport run_search(const SearchRequest& a) {
  SearchReport r;
  r.request = a;
  r.spec = load_search(a.search);
  r.cluster = load_cluster(a.cluster, a.gpus);
  const int gpus = r.cluster.total_gpus();
  if (gpus < 1) throw InputError(fmt::format("cluster '{}' has no GPUs", a.cluster));
  std::map<int, double> step_s;
  if (!r.spec.step_seconds.empty()) {
    for (const auto& [g, s] : r.spec.step_seconds) {
      if (g > gpus)
        r.left_out.push_back(
            fmt::format("{} GPU{} per trial: the cluster has {}", g, g == 1 ? "" : "s", gpus));
      else
        step_s[g] = s;
    }
  } else {
    JobSpec trial;
    trial.name = r.spec.name;
    trial.model = r.spec.model;
    trial.global_batch = r.spec.global_batch;
    trial.steps = 1;  // a curve of seconds per step
    trial.gpu_counts = r.spec.gpu_counts;
    EstimateOptions eo;
    eo.software = software_preset(a.software);
    eo.breakdown = false;
    const std::vector<JobCurve> curves =
        job_curves({trial}, a.cluster, a.gpus, eo, false, a.progress);
    const JobCurve& c = curves.front();
    for (const JobOption& o : c.options) {
      step_s[o.gpus] = o.seconds;
      r.plans[o.gpus] = o.plan.strategy;
    }
    for (int g : r.spec.gpu_counts)
      if (!step_s.count(g))
        r.left_out.push_back(g > gpus ? fmt::format("{} GPU{} per trial: the cluster has {}", g,
                                                    g == 1 ? "" : "s", gpus)
                                      : fmt::format("{} GPU{} per trial: no plan of {} fits", g,
                                                    g == 1 ? "" : "s", r.spec.model));
    if (step_s.empty() && r.left_out.empty())
      r.left_out.push_back(c.why_none.empty() ? "no GPU count the cluster offers fits a trial"
                                              : c.why_none);
  }
  for (const auto& [g, s] : step_s)
    for (Halving h : {Halving::synchronous, Halving::asynchronous})
      r.runs.push_back(simulate_halving(r.spec, h, g, gpus, s));
  for (size_t i = 1; i < r.runs.size(); ++i) {
    const HalvingRun &x = r.runs[i], &best = r.runs[r.fastest];
    if (x.first_full_s < best.first_full_s ||
        (x.first_full_s == best.first_full_s && x.makespan_s < best.makespan_s))
      r.fastest = i;
  }
  if (r.runs.empty())
    r.verdict = {1, fmt::format("no GPU count per trial can run the search: {}",
                                r.left_out.empty() ? "none given" : r.left_out.front())};
  return r;
}

nlohmann::json to_json(const SearchReport& r) {
  const SearchSpec& s = r.spec;
  nlohmann::json runs = nlohmann::json::array();
  for (const HalvingRun& h : r.runs) {
    nlohmann::json rungs = nlohmann::json::array();
    for (const RungCount& c : h.rungs)
      rungs.push_back({{"budget_steps", c.budget_steps}, {"trials", c.trials}});
    nlohmann::json run = {{"halving", std::string(to_string(h.kind))},
                          {"gpus_per_trial", h.gpus_per_trial},
                          {"workers", h.workers},
                          {"step_time_s", round6(h.step_s)},
                          {"first_full_s", round6(h.first_full_s)},
                          {"makespan_s", round6(h.makespan_s)},
                          {"gpu_busy_share", round6(h.gpu_busy_share)},
                          {"one_trial_full_s", round6(h.time_full_s)},
                          {"rungs", rungs}};
    if (const auto p = r.plans.find(h.gpus_per_trial); p != r.plans.end())
      run["strategy"] = to_json(p->second);
    runs.push_back(run);
  }
  nlohmann::json budgets = nlohmann::json::array();
  for (int64_t b : s.budgets()) budgets.push_back(b);
  nlohmann::json out = {{"search", s.name},
                        {"cluster", r.request.cluster},
                        {"gpus", r.cluster.total_gpus()},
                        {"trials", s.trials},
                        {"reduction", s.reduction},
                        {"resume", s.resume},
                        {"budgets_steps", budgets},
                        {"runs", runs},
                        {"left_out", r.left_out}};
  if (!s.model.empty()) out["model"] = s.model, out["gbs"] = s.global_batch;
  if (!r.runs.empty()) {
    const HalvingRun& f = r.runs[r.fastest];
    out["fastest"] = {{"halving", std::string(to_string(f.kind))},
                      {"gpus_per_trial", f.gpus_per_trial},
                      {"first_full_s", round6(f.first_full_s)}};
  }
  return out;
}

}  // namespace shardcost
