// Plans over networks that change (docs/seed-planners.md): one plan priced segment by segment
// of a cluster's bandwidth traces, and the best plan of every segment against the best single
// plan.
#include <fmt/format.h>

#include <set>

#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost {
namespace {

std::vector<NetworkSegment> segments_of(const Cluster& c) {
  std::vector<NetworkSegment> s = network_segments(c);
  if (s.empty())
    throw InputError(
        fmt::format("cluster '{}' has no bandwidth trace; give links[].trace in its "
                    "file or --network-trace FILE",
                    c.name));
  return s;
}

}  // namespace

TraceEstimate estimate_over_trace(const Workload& w, const Cluster& c, const Plan& p,
                                  const EstimateOptions& o) {
  TraceEstimate r;
  for (NetworkSegment& s : segments_of(c)) {
    TraceSegmentEstimate e;
    e.start_s = s.start_s;
    e.end_s = s.end_s;
    e.bandwidths = s.bandwidths;
    e.estimate = estimate(w, s.cluster, p, o);
    r.duration_s += s.end_s - s.start_s;
    if (e.estimate.feasible && e.estimate.step_time_s > 0)
      r.steps += (s.end_s - s.start_s) / e.estimate.step_time_s;
    r.segments.push_back(std::move(e));
  }
  return r;
}

ReplanResult replan(const Model& m, const Cluster& c, const RankOptions& ro) {
  ReplanResult r;
  const std::vector<NetworkSegment> segments = segments_of(c);
  RankOptions one = ro;
  one.top = 1;
  for (const NetworkSegment& s : segments) {
    const RankResult best = rank(m, s.cluster, one);
    if (best.best.empty())
      throw InputError(fmt::format("no strategy fits {} on {} in the segment {}-{} s ({})", m.name,
                                   c.name, s.start_s, s.end_s, s.bandwidths));
    TraceSegmentEstimate e;
    e.start_s = s.start_s;
    e.end_s = s.end_s;
    e.bandwidths = s.bandwidths;
    e.estimate = best.best.front();
    if (!r.best.empty() &&
        to_string(r.best.back().estimate.strategy) != to_string(e.estimate.strategy))
      r.switches_s.push_back(s.start_s);
    r.duration_s += s.end_s - s.start_s;
    r.replan_steps += (s.end_s - s.start_s) / e.estimate.step_time_s;
    r.best.push_back(std::move(e));
  }
  // The single plan: the segments' best plans, each priced over the whole trace.
  std::set<std::string> tried;
  for (const TraceSegmentEstimate& cand : r.best) {
    const std::string key = to_string(cand.estimate.strategy);
    if (!tried.insert(key).second) continue;
    double steps = 0;
    std::vector<double> step_s;
    for (const NetworkSegment& s : segments) {
      const Estimate e = estimate(m, s.cluster, cand.estimate.strategy, ro.estimate);
      const bool ok = e.feasible && e.step_time_s > 0;
      step_s.push_back(ok ? e.step_time_s : 0);
      if (ok) steps += (s.end_s - s.start_s) / e.step_time_s;
    }
    if (steps > r.single_steps) {
      r.single_steps = steps;
      r.single = cand.estimate.strategy;
      r.single_step_s = std::move(step_s);
    }
  }
  return r;
}

}  // namespace shardcost
