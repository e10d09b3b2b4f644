#pragma once
// What estimate and rank share: their options (into one PlanRequest, shardcost/request.h) and
// the lines both print.
#include <CLI/CLI.hpp>
#include <string>
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
