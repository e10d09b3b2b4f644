// The report's job schedules: each stored schedule as a Gantt chart (a row per job, its GPU
// count on its bar) with its figures.
#include <fmt/format.h>

#include "report_html.h"
#include "svg_plot.h"

namespace shardcost::cli {

std::string schedules_section(const std::vector<db::JobScheduleRecord>& schedules) {
  std::string o;
  for (const auto& s : schedules) {
    std::vector<svg::GanttBar> bars;
    for (const auto& j : s.jobs)
      bars.push_back(
          {j.name, j.start_ns / 3.6e12, j.end_ns / 3.6e12, fmt::format("{} GPUs", j.gpus),
           fmt::format("{} ({}, gbs {}, {} steps): {} GPUs from {:.2f} h to {:.2f} h; {}", j.name,
                       j.model, j.gbs, j.steps, j.gpus, j.start_ns / 3.6e12, j.end_ns / 3.6e12,
                       j.strategy)});
    const std::string title =
        fmt::format("{} jobs on {} ({} GPUs), {}", s.jobs.size(), s.cluster, s.gpus,
                    s.objective == "makespan" ? "shortest makespan" : "least total completion");
    const std::string even =
        s.even_split_ns ? fmt::format("{:.2f} h", *s.even_split_ns / 3.6e12) : "none fits";
    o += "<figure>" + svg::render_gantt(title, "hours from the start", bars, 760) +
         fmt::format(
             "<figcaption>Run <code>{}</code>, solver: {}. Makespan {:.2f} h (no schedule ends "
             "before {:.2f} h); one job after another {:.2f} h; the cluster split evenly "
             "{}.</figcaption></figure>\n",
             svg::escape(s.run_uuid), svg::escape(s.solver), s.makespan_ns / 3.6e12,
             s.bound_ns / 3.6e12, s.sequential_ns / 3.6e12, even);
  }
  return o;
}

}  // namespace shardcost::cli
