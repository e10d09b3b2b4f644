#include "devplace/stage_costs.h"

#include <fmt/format.h>

#include <bit>

#include "shardcost/error.h"

namespace shardcost {

size_t OpSet::size() const {
  size_t n = 0;
  for (uint64_t w : words) n += static_cast<size_t>(std::popcount(w));
  return n;
}

StageCosts::StageCosts(const OpGraph& g, const Cluster& c, const PlacementOptions& o) : c_(c) {
  groups_ = c.groups.size();
  LayerwiseOptions lo;
  lo.precision = o.precision;
  lo.optimizer = o.optimizer;
  lo.costs = o.costs;
  lo.global_batch = o.micro_batch;
  time_.resize(groups_);
  weights_.resize(groups_);
  for (size_t gi = 0; gi < groups_; ++gi) {
    const SplitModel m(g, c.groups[gi], c.network_of(gi), lo, 1, o.micro_batch);
    if (gi == 0) {
      order_ = m.priced();
      producers_ = m.producer_positions();
      consumers_.resize(order_.size());
      for (size_t i = 0; i < order_.size(); ++i)
        for (size_t u : producers_[i]) consumers_[u].push_back(i);
      for (int v : order_) {
        const GraphNode& n = g.nodes[static_cast<size_t>(v)];
        kept_.push_back(n.kept_bytes(m.element_bytes()) * o.micro_batch);
        out_bytes_.push_back(n.out_elements * o.micro_batch * m.element_bytes());
      }
    }
    for (size_t i = 0; i < order_.size(); ++i) {
      const NodePrice p = m.node(order_[i], {1, 1, 1, 1, 1});
      time_[gi].push_back(p.forward_s + p.backward_s);
      weights_[gi].push_back(p.memory_bytes - kept_[i]);
    }
    const Fabric& f = c.network_of(gi);
    bandwidth_.push_back(f.bandwidth_Bps * f.efficiency);
    latency_.push_back(f.latency_s);
  }
}

double StageCosts::compute(size_t g, const OpSet& stage) const {
  double t = 0;
  for (size_t i = 0; i < order_.size(); ++i)
    if (stage.has(i)) t += time_[g][i];
  return t;
}

double StageCosts::seconds(size_t g, const OpSet& stage) const {
  // Tensors entering the stage (written before it, read in it) and leaving it (written in
  // it, read after it), each sent once; forward the activation, backward its gradient.
  double bytes = 0, t = 0;
  int messages = 0;
  for (size_t i = 0; i < order_.size(); ++i) {
    if (stage.has(i)) {
      t += time_[g][i];
      for (size_t v : consumers_[i])
        if (!stage.has(v)) {
          bytes += out_bytes_[i], ++messages;
          break;
        }
    } else {
      for (size_t v : consumers_[i])
        if (stage.has(v) && v > i) {
          bytes += out_bytes_[i], ++messages;
          break;
        }
    }
  }
  if (messages > 0) t += 2 * (latency_[g] + bytes / bandwidth_[g]);
  return t;
}

double StageCosts::weights(size_t g, const OpSet& stage) const {
  double b = 0;
  for (size_t i = 0; i < order_.size(); ++i)
    if (stage.has(i)) b += weights_[g][i];
  return b;
}

double StageCosts::kept(const OpSet& stage) const {
  double b = 0;
  for (size_t i = 0; i < order_.size(); ++i)
    if (stage.has(i)) b += kept_[i];
  return b;
}

double StageCosts::capacity(size_t g) const {
  return c_.groups[g].device.memory_bytes;
}

}  // namespace shardcost
