#pragma once
// What estimate and rank share: their options, the inputs those name, and the lines both print.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "graph_plan.h"
#include "shardcost/calibration.h"
#include "shardcost/estimator.h"

namespace shardcost::cli {

struct PlanArgs {
  std::string model;
  std::string cluster;
  std::optional<int> gpus;
  std::string software;   // empty: megatron-core (pytorch-ddp for operator graphs)
  std::string attention;  // the fused attention kernel; empty: the preset's
  std::optional<double> memory_headroom_gib;  // replaces the preset's memory allowance
  std::optional<int> seq_len;  // replaces the model's sequence length (a config's maximum)
  std::string format = "text";
  std::string db;             // cost store to price from; empty: catalog only
  std::string network_trace;  // seconds,bandwidth_GBps CSV for the cluster's network
  bool replan = false;        // rank: the best plan of every segment of the traces
  // Operator graphs (.onnx) only.
  double epoch_samples = 0;
  std::string optimizer = "sgd";
};

// The preset a command runs under when --software names none; options that do not apply
// refused.
PlanArgs resolved(const PlanArgs&);
void add_plan_options(CLI::App*, PlanArgs&);
// The preset, with the attention kernel --attention names and --memory-headroom's allowance.
Software software_of(const PlanArgs&);
// The cluster, with the network trace the command names.
Cluster cluster_of(const PlanArgs&);
// The model, at the sequence length --seq-len names.
Model model_of(const PlanArgs&);
GraphArgs graph_args(const PlanArgs&, int global_batch, const CostSource* costs);

std::string cluster_line(const Cluster&);
std::string summary_text(const Estimate&);
std::string join_layers(const std::vector<int>&);
// The tp column: the degree, or each stage's ("8/8/4/4").
std::string tp_text(const Strategy&);
// A calibration's verdict on the step, and the step's uncertainty, in lines.
std::string calibration_line(const CalibratedStep&, const Estimate&);
std::string uncertainty_line(const StepUncertainty&);
nlohmann::json calibrated_json(const CalibratedStep&);
nlohmann::json uncertainty_json(const StepUncertainty&);

// rank, registered beside estimate (cmd_rank.cpp).
void add_rank_command(CLI::App&);

}  // namespace shardcost::cli
