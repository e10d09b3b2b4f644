#include "shardcost/predict.h"

#include <fmt/format.h>

#include "embedding_bytes.h"
#include "pricing.h"
#include "shardcost/error.h"

namespace shardcost {
namespace {

// A fabric that no collective may use: the predictor refuses them before pricing.
const Fabric kNoFabric{};

}  // namespace

Predictor::Predictor(Device device, std::optional<Cluster> system, const CostSource* sources)
    : device_(std::move(device)), system_(std::move(system)), sources_(sources) {
  const NodeGroup* g = system_ ? &system_->groups.front() : nullptr;
  pricer_ = std::make_unique<Pricer>(device_, g ? g->intra_node : kNoFabric,
                                     system_ ? system_->inter_node : kNoFabric,
                                     g ? g->domain_gpus() : 1, sources);
}

Predictor Predictor::store_device(std::string name, const CostSource* sources) {
  Device d;
  d.name = std::move(name);
  Predictor p(std::move(d), std::nullopt, sources);
  p.store_only_ = true;
  return p;
}

Priced Predictor::from_store(std::optional<Priced> priced, std::string_view what) const {
  if (priced) return *priced;
  throw InputError(fmt::format(
      "'{}' is not a catalog device, and the store has no measurement or fitted model of it that "
      "prices {}; measure it (bench ... --db) and fit, or use a catalog device (shardcost "
      "catalog)",
      device_.name, what));
}

Predictor::~Predictor() = default;
Predictor::Predictor(Predictor&&) noexcept = default;

Priced Predictor::gemm(const GemmShape& s, DType dtype) const {
  if (store_only_)
    return from_store(sources_ ? sources_->gemm(device_, dtype, s) : std::nullopt,
                      fmt::format("{} GEMMs", to_string(dtype)));
  if (device_.peak_flops[static_cast<int>(dtype)] <= 0)
    throw InputError(
        fmt::format("device {} has no {} peak in the catalog; use a data type it "
                    "has",
                    device_.name, to_string(dtype)));
  if (s.m < 1 || s.n < 1 || s.k < 1 || s.batch < 1)
    throw InputError(fmt::format("GEMM {}x{}x{}x{}: every dimension must be at least 1", s.m, s.n,
                                 s.k, s.batch));
  return pricer_->gemm(s, dtype);
}

Priced Predictor::collective(CollectiveOp op, double bytes, int ranks, int nodes) const {
  if (!system_)
    throw InputError(
        fmt::format("no system to price collectives of {} on: give --cluster (a "
                    "catalog system or a cluster file)",
                    device_.name));
  const NodeGroup& g = system_->groups.front();
  if (ranks < 2) throw InputError(fmt::format("--ranks {}: a collective needs at least 2", ranks));
  if (nodes < 1 || ranks % nodes != 0)
    throw InputError(fmt::format("--nodes {} must divide --ranks {}", nodes, ranks));
  const int per_node = ranks / nodes;
  if (per_node > g.gpus_per_node || g.gpus_per_node % per_node != 0)
    throw InputError(
        fmt::format("{} ranks per node on {}-GPU nodes: use a number of ranks per "
                    "node that divides {}",
                    per_node, g.gpus_per_node, g.gpus_per_node));
  if (bytes <= 0) throw InputError("collective sizes must be positive");
  // Members a node apart when each node holds one, else consecutive.
  const int stride = nodes == 1 ? 1 : g.gpus_per_node / per_node;
  if (op == CollectiveOp::send_recv) {
    if (ranks != 2) throw InputError("send_recv is between 2 ranks; give --ranks 2");
    return pricer_->send_recv(bytes, GroupPlacement{2, nodes == 1 ? 1 : g.gpus_per_node});
  }
  return pricer_->collective(op, bytes, {ranks, stride});
}

Priced Predictor::memory(std::string_view kind, double bytes) const {
  if (bytes <= 0) throw InputError("memory sizes must be positive");
  if (store_only_)
    return from_store(sources_ ? sources_->memory(device_, kind, bytes) : std::nullopt,
                      fmt::format("memory {}", kind));
  if (!catalog_prices_memory(kind))
    throw InputError(
        fmt::format("unknown memory operation '{}' for a GPU; use copy_d2d, "
                    "copy_h2d, copy_d2h, memset, read or write",
                    kind));
  return pricer_->memory(kind, bytes);
}

Priced Predictor::embedding(const EmbeddingPass& pass) const {
  if (!(pass.rows >= 1) || !(pass.dim >= 1) || !(pass.batch > 0) || !(pass.pooling > 0))
    throw InputError("an embedding pass needs rows, dim, batch and pooling above 0");
  if (sources_)
    if (auto p = sources_->embedding(device_, pass)) return p->priced;
  return pricer_->memory("read", embedding_bytes::pass_bytes(pass));
}

}  // namespace shardcost
