#pragma once
// The search over one choice per node of a DAG: node costs (one per choice) and edge costs
// (a producer-choices x consumer-choices matrix, row-major) summed, minimised by node and
// edge elimination (Jia et al., ICML'18) and leaf folding; exact where the graph reduces to
// one node (chains, series-parallel branches such as residual blocks), else the remainder is
// enumerated (up to 2e6 assignments) or improved node by node.
#include <map>
#include <utility>
#include <vector>

namespace shardcost {

// node_cost[v][i]: node v under choice i; edge_cost[{u, v}][i * choices(v) + j]: u under i
// feeding v under j. Returns the choice per node.
std::vector<int> eliminate(const std::vector<std::vector<double>>& node_cost,
                           const std::map<std::pair<int, int>, std::vector<double>>& edge_cost);
// The sum an assignment costs.
double assignment_cost(const std::vector<std::vector<double>>& node_cost,
                       const std::map<std::pair<int, int>, std::vector<double>>& edge_cost,
                       const std::vector<int>& choice);

}  // namespace shardcost
