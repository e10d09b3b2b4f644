#pragma once
// Cost sources: where the price of one operator comes from. Sources are tried in order per
// operator (exact measurements, interpolation between them, learned models, ...) and the
// first answer wins, carrying its origin; whatever no source answers, the built-in catalog
// prices (datasheet peaks times measured efficiencies, in costs/pricing.h).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/hardware.h"

namespace shardcost {

// How a source reached a collective's price, for predict to say: what it rests on ("2 and 4
// ranks measured; time linear in the rank count") and, for a learned model's answer, the
// cross-validated error of that kind of answer on the store's rows (its split as fit names it,
// and the median and p90 |relative error| over the held-out points).
struct PriceBasis {
  std::string how;
  std::string split;  // empty: no cross-validation of this kind (measured, interpolated)
  double median = 0, p90 = 0;
  size_t held_out = 0;
};

class CostSource {
 public:
  virtual ~CostSource() = default;
  // nullopt: this source has no answer; the next one is asked.
  virtual std::optional<Priced> gemm(const Device&, DType, const GemmShape&) const = 0;
  // bytes: the collective's buffer size as nccl-tests counts it (the full buffer for
  // all-reduce, the gathered output for all-gather, the input for reduce-scatter). A source
  // answers only for a group laid out as it measured (ranks and the nodes they span).
  virtual std::optional<Priced> collective(const Device&, CollectiveOp, double bytes,
                                           GroupShape) const = 0;
  // What the answer of collective() rests on; nullopt where it gave none or does not say.
  virtual std::optional<PriceBasis> collective_basis(const Device&, CollectiveOp, double,
                                                     GroupShape) const {
    return std::nullopt;
  }
  // A memory operation as `bench memory` names it (copy_d2d, copy_h2d, copy_d2h, memset, read,
  // write; the host's copy, read, write) over `bytes`, counted once as the benchmark does.
  virtual std::optional<Priced> memory(const Device&, std::string_view kind, double bytes) const {
    (void)kind, (void)bytes;
    return std::nullopt;
  }
  // An embedding-bag pass (bench embedding's) on a device.
  virtual std::optional<EmbeddingPriced> embedding(const Device&, const EmbeddingPass&) const {
    return std::nullopt;
  }
};

// Several sources in order, as one: measured before interpolated before learned. The
// sources are not owned and must outlive the chain.
class CostChain final : public CostSource {
 public:
  CostChain() = default;
  explicit CostChain(std::vector<const CostSource*> sources) : sources_(std::move(sources)) {}
  void add(const CostSource& source) { sources_.push_back(&source); }
  bool empty() const { return sources_.empty(); }

  std::optional<Priced> gemm(const Device& d, DType t, const GemmShape& s) const override {
    for (const CostSource* c : sources_)
      if (auto p = c->gemm(d, t, s)) return p;
    return std::nullopt;
  }
  std::optional<Priced> collective(const Device& d, CollectiveOp op, double bytes,
                                   GroupShape group) const override {
    for (const CostSource* c : sources_)
      if (auto p = c->collective(d, op, bytes, group)) return p;
    return std::nullopt;
  }
  std::optional<PriceBasis> collective_basis(const Device& d, CollectiveOp op, double bytes,
                                             GroupShape group) const override {
    for (const CostSource* c : sources_)
      if (c->collective(d, op, bytes, group)) return c->collective_basis(d, op, bytes, group);
    return std::nullopt;
  }
  std::optional<Priced> memory(const Device& d, std::string_view kind,
                               double bytes) const override {
    for (const CostSource* c : sources_)
      if (auto p = c->memory(d, kind, bytes)) return p;
    return std::nullopt;
  }
  std::optional<EmbeddingPriced> embedding(const Device& d,
                                           const EmbeddingPass& pass) const override {
    for (const CostSource* c : sources_)
      if (auto p = c->embedding(d, pass)) return p;
    return std::nullopt;
  }

 private:
  std::vector<const CostSource*> sources_;
};

}  // namespace shardcost
