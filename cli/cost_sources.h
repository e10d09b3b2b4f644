#pragma once
// The cost sources of one command, best first, indexed once (ranking prices every candidate
// from memory): a store's measurements, then models fitted on it, then the catalog.
#include <memory>
#include <optional>
#include <string>

#include "shardcost/learned.h"
#include "shardcost/store_costs.h"

namespace shardcost::cli {

struct Costs {
  std::optional<StoreCosts> store;
  std::optional<LearnedCosts> learned;
  CostChain chain;
  const CostSource* source() const { return chain.empty() ? nullptr : &chain; }
};

// db: a store's path; empty: the catalog only. Problems with fitted models are warnings.
std::unique_ptr<Costs> load_costs(const std::string& db);

}  // namespace shardcost::cli
