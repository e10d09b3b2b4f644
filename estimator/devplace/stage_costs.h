#pragma once
// What one pipeline stage costs on a device of one group: its operators' forward and backward
// per micro-batch, the activations entering and leaving it (and their gradients) over the
// group's network, and its memory with the micro-batches 1F1B keeps in flight.
#include <cstdint>
#include <memory>
#include <vector>

#include "layerwise/split_model.h"
#include "shardcost/device_placement.h"

namespace shardcost {

// A set of the graph's priced operators (positions in priced order).
struct OpSet {
  std::vector<uint64_t> words;
  explicit OpSet(size_t n = 0) : words((n + 63) / 64, 0) {}
  bool has(size_t i) const { return words[i / 64] >> (i % 64) & 1u; }
  void add(size_t i) { words[i / 64] |= uint64_t{1} << (i % 64); }
  bool within(const OpSet& o) const {
    for (size_t w = 0; w < words.size(); ++w)
      if (words[w] & ~o.words[w]) return false;
    return true;
  }
  size_t size() const;
  bool operator==(const OpSet& o) const { return words == o.words; }
};

class StageCosts {
 public:
  StageCosts(const OpGraph&, const Cluster&, const PlacementOptions&);
  size_t operators() const { return order_.size(); }
  size_t groups() const { return groups_; }
  const std::vector<int>& order() const { return order_; }  // graph node of a position
  const std::vector<std::vector<size_t>>& producers() const { return producers_; }
  // Seconds per micro-batch of the operators in `stage` (given as J \ I) on group g's device.
  double seconds(size_t g, const OpSet& stage) const;
  double compute(size_t g, const OpSet& stage) const;
  // Bytes on a device of group g: weights, gradients and optimizer state, and the activations
  // one micro-batch keeps (1F1B keeps several in flight).
  double weights(size_t g, const OpSet& stage) const;
  double kept(const OpSet& stage) const;
  double capacity(size_t g) const;
  // Per operator (a position), what the sums above add: an integer program's coefficients.
  const std::vector<std::vector<size_t>>& consumers() const { return consumers_; }
  double op_seconds(size_t g, size_t i) const { return time_[g][i]; }
  double op_weights(size_t g, size_t i) const { return weights_[g][i]; }
  double op_kept(size_t i) const { return kept_[i]; }
  double out_bytes(size_t i) const { return out_bytes_[i]; }
  double bandwidth(size_t g) const { return bandwidth_[g]; }  // bytes/s
  double latency(size_t g) const { return latency_[g]; }

 private:
  const Cluster& c_;
  size_t groups_ = 0;
  std::vector<int> order_;
  std::vector<std::vector<size_t>> producers_, consumers_;
  std::vector<std::vector<double>> time_, weights_;  // [group][position]
  std::vector<double> kept_, out_bytes_;             // [position]
  std::vector<double> bandwidth_, latency_;          // [group]: its network, per GPU
};

}  // namespace shardcost
