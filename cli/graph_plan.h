#pragma once
// estimate and rank of operator graphs (--model FILE.onnx) as text: uniform strategies and the
// layer-wise search of shardcost/layerwise.h, from their report (shardcost/request.h).
#include <string>

#include "shardcost/request.h"

namespace shardcost::cli {

std::string graph_estimate_text(const GraphReport&, const Cluster&, const std::string& software);
std::string graph_rank_text(const GraphReport&, const Cluster&, const std::string& software);

}  // namespace shardcost::cli
