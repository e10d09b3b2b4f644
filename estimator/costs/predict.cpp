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

CollectiveAnswer Predictor::collective(CollectiveOp op, double bytes, int ranks, int nodes) const {
  if (!system_)
    throw InputError(
        fmt::format("no system to price collectives of {} on: give --cluster (a "
                    "catalog system or a cluster file)",
                    device_.name));
  const NodeGroup& g = system_->groups.front();
  if (ranks < 2) throw InputError(fmt::format("--ranks {}: a collective needs at least 2", ranks));
  if (nodes < 1 || nodes > ranks)
    throw InputError(fmt::format(
        "--nodes {} for {} ranks: every node of the collective holds a rank; use 1 to {} nodes",
        nodes, ranks, ranks));
  const int most = (ranks + nodes - 1) / nodes;
  if (most > g.gpus_per_node)
    throw InputError(fmt::format(
        "{} ranks over {} node{} put {} on a node, and its nodes have {} GPUs; use at least {} "
        "nodes",
        ranks, nodes, nodes == 1 ? "" : "s", most, g.gpus_per_node,
        (ranks + g.gpus_per_node - 1) / g.gpus_per_node));
  if (bytes <= 0) throw InputError("collective sizes must be positive");
  if (op == CollectiveOp::send_recv && ranks != 2)
    throw InputError("send_recv is between 2 ranks; give --ranks 2");
  CollectiveAnswer a;
  a.most_per_node = most;
  a.fewest_per_node = ranks / nodes;
  // Nodes of one NVLink domain (a rack of NVL72) talk over NVLink: the group's nodes, taken
  // in order, fill domains, and the domains are what the network joins.
  const int nodes_per_domain = std::max(1, g.domain_gpus() / g.gpus_per_node);
  const GroupPlacement placed{ranks, 1, (nodes + nodes_per_domain - 1) / nodes_per_domain};
  a.priced = op == CollectiveOp::send_recv ? pricer_->send_recv(bytes, placed)
                                           : pricer_->collective(op, bytes, placed);
  if (auto b = pricer_->collective_basis(op, bytes, placed)) {
    a.basis = std::move(*b);
  } else if (a.priced.origin == CostOrigin::catalog) {
    const bool between = placed.nodes > 1;
    const Fabric& f = between ? system_->inter_node : g.intra_node;
    const int nics = pricer_->ranks_per_node(placed);
    a.basis.how = fmt::format(
        "catalog: {} by {}, {}", between ? "the network" : "the node's links",
        busbw_curve(f, op)                      ? "its published bus-bandwidth sweep"
        : between || !pricer_->nccl_protocols() ? "bandwidth x efficiency"
                                                : "bandwidth x efficiency under NCCL's protocols",
        between ? fmt::format("{} NIC{} a node carrying it (the fewest ranks a node holds)", nics,
                              nics == 1 ? "" : "s")
                : fmt::format("{} of the node's {} GPUs", ranks, g.domain_gpus()));
  }
  return a;
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
