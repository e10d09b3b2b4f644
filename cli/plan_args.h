#pragma once
// What estimate and rank share: their options (into one PlanRequest, shardcost/request.h) and
// the lines both print.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "shardcost/calibration.h"
#include "shardcost/request.h"

namespace shardcost::cli {

// The options every request takes, bound to its fields; --request FILE beside them.
struct PlanOptions {
  PlanRequest request;
  std::string request_file;  // --request: a saved request (or a --format json output)
  std::string format = "text";
};
void add_plan_options(CLI::App*, PlanOptions&);
// The request to run: --request's file with every option the command line gives over it, or
// the command line's alone (then --model and --cluster are required).
PlanRequest request_of(const CLI::App&, const PlanOptions&);
// A sibling planner's --request FILE (shardcost/planner_requests.h): the file's keys, each
// option the command line gives replacing its own (`given`: the command line's request as
// JSON; options that exclude each other in `exclusive`, the one given dropping the other).
nlohmann::json planner_request(
    const CLI::App&, const std::string& file, const nlohmann::json& given,
    const std::vector<std::pair<std::string, std::string>>& exclusive = {});
// Where no --request is given, the options a planner needs, each named as the command line
// names it ("--model is required ... (or --request FILE)").
void require_options(const std::vector<std::pair<const char*, bool>>& given);

std::string cluster_line(const Cluster&);
std::string summary_text(const Estimate&);
// The loader every plan of a rank shares, in one line.
std::string input_text(const DataLoading&);
std::string join_layers(const std::vector<int>&);
// The tp column: the degree, or each stage's ("8/8/4/4").
std::string tp_text(const Strategy&);
// A calibration's verdict on the step, and the step's uncertainty, in lines.
std::string calibration_line(const CalibratedStep&, const Estimate&);
std::string uncertainty_line(const StepUncertainty&);
// After a report is rendered: its verdict as the exit status.
void end_with(const Verdict&);

// rank, registered beside estimate (cmd_rank.cpp).
void add_rank_command(CLI::App&);

}  // namespace shardcost::cli
