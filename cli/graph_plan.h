#pragma once
// estimate and rank of operator graphs (--model FILE.onnx): uniform strategies and the
// layer-wise search of shardcost/layerwise.h.
#include <optional>
#include <string>

#include "commands.h"
#include "shardcost/costs.h"

namespace shardcost::cli {

struct GraphArgs {
  std::string model, cluster, software, format, optimizer = "sgd";
  std::optional<int> gpus;
  int global_batch = 0;
  double epoch_samples = 0;
  const CostSource* costs = nullptr;
};

// strategy: "NAME,gbs=N[,precision=T]" (its gbs the global batch); fixed: "precision=T" or
// empty (the global batch GraphArgs's).
void run_graph_estimate(const GraphArgs&, const std::string& strategy);
void run_graph_rank(const GraphArgs&, const std::string& fixed, int top);

}  // namespace shardcost::cli
