#include "report_html.h"

#include <gtest/gtest.h>

namespace shardcost::cli {
namespace {

db::CostTable memory(const std::vector<std::pair<std::string, double>>& device_gbps) {
  db::CostTable t{"memory", {"device", "kind", "bytes", "bandwidth_gbps"}, {}};
  for (const auto& [device, gbps] : device_gbps)
    for (int64_t bytes : {1 << 20, 1 << 24})
      t.rows.push_back({device, std::string("copy"), bytes, gbps * (bytes == 1 << 20 ? 0.5 : 1)});
  return t;
}

std::string memory_report(const std::vector<std::pair<std::string, double>>& device_gbps) {
  ReportInputs in;
  in.memory = memory(device_gbps);
  return report_html(in);
}

TEST(ReportHtml, BandwidthOfDevicesFarApartIsDrawnOnALogAxis) {
  const std::string html =
      memory_report({{"NVIDIA A100-SXM4-80GB", 1700}, {"Generic Host CPU @ 3.0GHz", 9}});
  EXPECT_NE(html.find(">bandwidth (GB/s) (log)</text>"), std::string::npos);
  EXPECT_NE(html.find(">copy · Generic Host CPU @ 3.0GHz</text>"), std::string::npos);
}

TEST(ReportHtml, BandwidthOfOneDeviceOrOfSimilarDevicesStaysLinear) {
  for (const auto& rows : {std::vector<std::pair<std::string, double>>{{"NVIDIA A100", 1700}},
                           {{"NVIDIA A100", 1700}, {"NVIDIA H100", 3000}}}) {
    const std::string html = memory_report(rows);
    EXPECT_NE(html.find(">bandwidth (GB/s)</text>"), std::string::npos);
    EXPECT_EQ(html.find("(log)"), std::string::npos);
  }
}

TEST(ReportHtml, CollectivesOfDevicesFarApartAreDrawnOnALogAxis) {
  ReportInputs in;
  in.collective = {"collective",
                   {"device", "op", "in_place", "ranks", "fabric_level", "bytes", "busbw_gbps"},
                   {}};
  for (const auto& [device, busbw] :
       std::vector<std::pair<std::string, double>>{{"NVIDIA A100", 230}, {"Host CPU", 5}})
    for (int64_t bytes : {1 << 20, 1 << 24})
      in.collective.rows.push_back({device, std::string("all_reduce"), int64_t{0}, int64_t{4},
                                    std::string("intra_node"), bytes, busbw});
  const std::string html = report_html(in);
  EXPECT_NE(html.find(">bus bandwidth (GB/s) (log)</text>"), std::string::npos);
  EXPECT_NE(html.find(">4 ranks, intra-node · Host CPU</text>"), std::string::npos);
}

}  // namespace
}  // namespace shardcost::cli

namespace shardcost::cli {
namespace {

TEST(ReportHtml, AJobScheduleIsAGanttChartOfItsJobs) {
  ReportInputs in;
  db::JobScheduleRecord s;
  s.cluster = "dgx-h100";
  s.gpus = 16;
  s.objective = "makespan";
  s.solver = "exact (GLPK MILP, optimal)";
  s.makespan_ns = 7200000000000;
  s.jobs = {{"first", "gpt3-1.3b", 32, 10, 16, 0, 3600000000000, "tp=1"},
            {"second", "llama3-8b", 64, 10, 8, 3600000000000, 7200000000000, "tp=2"}};
  in.schedules = {s};
  const std::string html = report_html(in);
  EXPECT_NE(html.find("<h2 id=\"schedules\">Job schedules</h2>"), std::string::npos);
  EXPECT_NE(html.find("class=\"plot gantt\""), std::string::npos);
  EXPECT_NE(html.find(">16 GPUs</text>"), std::string::npos);
  EXPECT_NE(html.find("data-name=\"second\""), std::string::npos);
  EXPECT_NE(html.find("the cluster split evenly none fits"), std::string::npos);
  // Without a schedule, no section.
  EXPECT_EQ(report_html(ReportInputs{}).find("Job schedules"), std::string::npos);
}

}  // namespace
}  // namespace shardcost::cli
