#include "cost_sources.h"

#include <fmt/format.h>

namespace shardcost::cli {

std::unique_ptr<Costs> load_costs(const std::string& db) {
  auto c = std::make_unique<Costs>();
  if (db.empty()) return c;
  c->store = StoreCosts::load(db);
  c->chain.add(c->store->measured());
  c->chain.add(c->store->interpolated());
  // Models fitted on the store (shardcost fit), before the catalog.
  std::vector<std::string> problems;
  c->learned = LearnedCosts::load(db, &problems);
  for (const auto& p : problems) fmt::print(stderr, "shardcost: warning: {}\n", p);
  c->chain.add(*c->learned);
  return c;
}

}  // namespace shardcost::cli
