#pragma once
// Prices single operations on one device the way estimates do: the cost sources in order
// (the store's measurements, interpolation, learned models), then the catalog. What
// `shardcost predict` answers; each answer says which source gave it.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "shardcost/costs.h"
#include "shardcost/hardware.h"

namespace shardcost {

class Pricer;

// A collective's price with what it rests on: the layout priced (the most and the fewest ranks
// a node holds) and the basis of the answer (a store source's, with the cross-validated error
// of a learned model's kind of answer; the catalog's otherwise).
struct CollectiveAnswer {
  Priced priced;
  int most_per_node = 0, fewest_per_node = 0;
  PriceBasis basis;
};

class Predictor {
 public:
  // system: the cluster whose fabrics price collectives for the catalog (a catalog system of
  // this device, or a cluster file); without one, collectives are refused with the fix.
  Predictor(Device device, std::optional<Cluster> system, const CostSource* sources);
  // A device only a store knows (a host CPU as `bench` and `fit` name it): priced from the
  // store's measurements and models alone; what they do not answer is an InputError.
  static Predictor store_device(std::string name, const CostSource* sources);
  ~Predictor();
  Predictor(Predictor&&) noexcept;

  const Device& device() const { return device_; }
  // Throws InputError when the device has no peak for the data type.
  Priced gemm(const GemmShape&, DType) const;
  // Any layout NCCL runs: `ranks` over `nodes` nodes, spread as evenly as they go (7 over 2:
  // 4 and 3), at most a node's GPUs on one. An InputError for what cannot run (fewer than 2
  // ranks, a node with no rank, more ranks on a node than it has GPUs).
  CollectiveAnswer collective(CollectiveOp, double bytes, int ranks, int nodes) const;
  Priced memory(std::string_view kind, double bytes) const;
  // An embedding-bag pass: a fitted lookup model where the sources have one, else the pass's
  // bytes at the streaming read rate (as shard-tables prices shards).
  Priced embedding(const EmbeddingPass&) const;

 private:
  Device device_;
  std::optional<Cluster> system_;
  std::unique_ptr<Pricer> pricer_;
  const CostSource* sources_ = nullptr;
  bool store_only_ = false;
  Priced from_store(std::optional<Priced>, std::string_view what) const;
};

}  // namespace shardcost
