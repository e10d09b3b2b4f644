#pragma once
// Scheduling malleable jobs on a pool of identical GPUs: each job runs once, without
// preemption, in one of its modes (a GPU count and its duration); at no time may the running
// jobs hold more GPUs than the pool. The solvers behind schedule_jobs (docs/scheduling.md).
#include <limits>
#include <string>
#include <vector>

#include "shardcost/jobs.h"

namespace shardcost::jobs {

struct Mode {
  int gpus = 0;
  double seconds = 0;
};

struct Instance {
  int capacity = 0;                      // GPUs in the pool
  std::vector<std::vector<Mode>> modes;  // per job, at least one, each at most capacity GPUs
  std::vector<double> weight;            // per job, in the total completion time
  std::vector<double> deadline;          // per job; infinity: none
  size_t jobs() const { return modes.size(); }
};

inline constexpr double kNoDeadline = std::numeric_limits<double>::infinity();

struct Solution {
  std::vector<int> mode;      // per job
  std::vector<double> start;  // per job
  double makespan = 0, completion = 0;
  bool optimal = false;
  double end(const Instance& in, size_t j) const {
    return start[j] + in.modes[j][static_cast<size_t>(mode[j])].seconds;
  }
  // The objective's value (the makespan, or the weighted sum of end times).
  double value(ScheduleObjective o) const {
    return o == ScheduleObjective::makespan ? makespan : completion;
  }
};

// The serial schedule-generation scheme: jobs in `order`, each in its mode, each at the
// earliest time the pool holds its GPUs for its whole duration (jobs already placed may
// leave gaps that later ones fill). Over every order it generates every active schedule, so
// some order gives an optimal one (Kolisch, 1996).
Solution serial_schedule(const Instance&, const std::vector<size_t>& order,
                         const std::vector<int>& mode);

// Every order and every combination of modes: the optimum, for tests on small instances.
Solution brute_force(const Instance&, ScheduleObjective);

// List scheduling: modes chosen for a target duration (the least GPU-seconds within it),
// priority orders (longest first, largest first, earliest deadline; for the completion time,
// weighted shortest first), the serial scheme, then moves of one job's mode while they
// improve. Fast and not exact.
Solution list_schedule(const Instance&, ScheduleObjective);

// The baselines as schedules: every job alone on the whole pool (its fastest mode), one
// after another; the pool split into k equal parts (the best k up to one per job, among
// those whose part every job has a mode within), each job in its fastest mode that fits a
// part, longest first onto the part that frees first (makespan infinity: no such k).
Solution one_after_another(const Instance&);
Solution even_split(const Instance&);

// The exact solver: a mixed-integer program (continuous start times, the resource-flow
// formulation of Artigues et al., 2003, with a mode per job) through GLPK. Returns false
// with `why` when GLPK finds no schedule in its time limit; `optimal` says whether it proved
// its best one optimal.
bool exact_schedule(const Instance&, ScheduleObjective, double time_limit_s, Solution& out,
                    std::string& why);

// Fills makespan and completion from modes and starts.
void evaluate(const Instance&, Solution&);

}  // namespace shardcost::jobs
