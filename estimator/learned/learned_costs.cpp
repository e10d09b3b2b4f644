// LearnedCosts: fitted models as a cost source, with a cache (searches ask for the same few
// thousand shapes many times).
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "curve_model.h"
#include "embedding_model.h"
#include "gemm_model.h"
#include "kernel_model.h"
#include "kinds.h"
#include "shardcost/db.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/learned.h"
#include "shardcost/store_costs.h"

namespace shardcost {

using namespace learned;  // the record kinds and their readers

struct LearnedCosts::Impl {
  struct Entry {
    DType dtype;
    learned::GemmModel model;
    Device device;  // the catalog device it was fitted for
  };
  std::vector<Entry> gemms;
  std::vector<learned::PooledGemmPrior> pooled;
  std::vector<learned::CollectiveFit> collectives;
  std::vector<learned::MemoryFit> memory;
  std::vector<learned::KernelFit> kernels;
  std::vector<learned::EmbeddingFit> embeddings;
  std::vector<FitReport> described;
  mutable std::mutex mutex;
  // (device name, dtype) -> the model of that device (index into gemms), or -1: matching
  // names is string work a search must not repeat per operator.
  mutable std::map<std::pair<std::string, DType>, int> model_of;
  // (device name, op, level) -> index into collectives, or -1; likewise memory by kind.
  mutable std::map<std::tuple<std::string, CollectiveOp, FabricLevel, int>, int> collective_of;
  mutable std::map<std::pair<std::string, std::string>, int> memory_of;
  // (device name, backward, optimizer, element bytes) -> index into embeddings, or -1.
  mutable std::map<std::tuple<std::string, bool, std::string, int>, int> embedding_of;
  struct Key {
    size_t model;
    GemmShape shape;
    bool operator==(const Key& o) const { return model == o.model && shape == o.shape; }
  };
  struct Hash {
    size_t operator()(const Key& k) const {
      size_t h = k.model;
      for (int64_t v : {k.shape.m, k.shape.n, k.shape.k, k.shape.batch})
        h = h * 1000003 ^ std::hash<int64_t>()(v);
      return h;
    }
  };
  mutable std::unordered_map<Key, double, Hash> cache;
};

LearnedCosts::LearnedCosts(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LearnedCosts::LearnedCosts(LearnedCosts&&) noexcept = default;
LearnedCosts& LearnedCosts::operator=(LearnedCosts&&) noexcept = default;
LearnedCosts::~LearnedCosts() = default;

LearnedCosts LearnedCosts::load(const std::string& path, std::vector<std::string>* problems) {
  const db::Store store = db::Store::open(path, db::Store::Mode::read_only);
  auto impl = std::make_unique<Impl>();
  for (const auto& row : store.fitted_models()) {
    if (row.kind == kPooledKind) {
      try {
        impl->pooled.push_back(learned::PooledGemmPrior::from_json(row.parameters_json));
        const auto& p = impl->pooled.back();
        impl->described.push_back(
            {kPooledKind, joined(p.devices), row.key, p.rows, validations(p.cv), "", {}});
      } catch (const Error& e) {
        if (problems)
          problems->push_back(
              fmt::format("{}: fitted model {} {} skipped: {}", path, row.kind, row.key, e.what()));
      }
      continue;
    }
    try {
      if (row.kind == kGemmKind) {
        const learned::GemmFit fit = learned::GemmFit::from_json(row.parameters_json);
        Device d = find_device(fit.device);
        impl->gemms.push_back({fit.dtype, learned::GemmModel(fit), std::move(d)});
        impl->described.push_back({kGemmKind,
                                   fit.device,
                                   std::string(to_string(fit.dtype)),
                                   fit.rows,
                                   validations(fit.cv),
                                   "",
                                   {}});
      } else if (row.kind == kCollectiveKind) {
        learned::CollectiveFit fit = learned::CollectiveFit::from_json(row.parameters_json);
        (void)find_device(fit.device);
        impl->described.push_back({kCollectiveKind,
                                   fit.device,
                                   collective_key(fit.op, fit.level, fit.per_node),
                                   fit.rows,
                                   validations(fit.cv),
                                   "",
                                   {}});
        impl->collectives.push_back(std::move(fit));
      } else if (row.kind == kMemoryKind) {
        learned::MemoryFit fit = learned::MemoryFit::from_json(row.parameters_json);
        impl->described.push_back(
            {kMemoryKind, fit.device, fit.kind, fit.rows, validations(fit.cv), "", {}});
        impl->memory.push_back(std::move(fit));
      } else if (row.kind == kEmbeddingKind) {
        learned::EmbeddingFit fit = learned::EmbeddingFit::from_json(row.parameters_json);
        impl->described.push_back({kEmbeddingKind,
                                   fit.device,
                                   embedding_key(fit.backward, fit.dtype, fit.optimizer),
                                   fit.rows,
                                   validations(fit.cv),
                                   "",
                                   {}});
        impl->embeddings.push_back(std::move(fit));
      } else if (row.kind == kKernelKind) {
        learned::KernelFit fit = learned::KernelFit::from_json(row.parameters_json);
        impl->described.push_back(
            {kKernelKind, fit.device, kKernelKey, fit.rows, validations(fit.cv), "", {}});
        impl->kernels.push_back(std::move(fit));
      }
    } catch (const Error& e) {
      if (problems)
        problems->push_back(fmt::format("{}: fitted model {} {} {} skipped: {}", path, row.kind,
                                        row.device, row.key, e.what()));
    }
  }
  return LearnedCosts(std::move(impl));
}

const std::vector<FitReport>& LearnedCosts::describe() const {
  return impl_->described;
}

size_t LearnedCosts::models() const {
  return impl_->gemms.size() + impl_->pooled.size() + impl_->collectives.size() +
         impl_->memory.size() + impl_->kernels.size() + impl_->embeddings.size();
}

namespace {

// A curve model's answer as a price: learned inside the sizes (and rank counts) it was
// validated on, extrapolated outside; nonsense from a damaged model is left to the next source.
std::optional<Priced> priced(const learned::CurveAnswer& a) {
  if (!(a.seconds > 0) || !std::isfinite(a.seconds)) return std::nullopt;
  return Priced{a.seconds, a.inside ? CostOrigin::learned : CostOrigin::extrapolated};
}

}  // namespace

const learned::CollectiveFit* LearnedCosts::collective_fit(const Device& device, CollectiveOp op,
                                                           GroupShape group) const {
  const FabricLevel level = group.level();
  // Between nodes only a model of the same layout answers (ranks per node as measured); a
  // layout with more ranks on some nodes than on others, none.
  if (level == FabricLevel::inter_node && group.ranks % group.nodes != 0) return nullptr;
  const int per_node = level == FabricLevel::inter_node ? group.ranks_per_node() : 0;
  std::lock_guard lock(impl_->mutex);
  auto [match, added] = impl_->collective_of.try_emplace({device.name, op, level, per_node}, -1);
  for (size_t i = 0; added && i < impl_->collectives.size() && match->second < 0; ++i) {
    const auto& c = impl_->collectives[i];
    if (c.op == op && c.level == level && same_device_name(c.device, device.name) &&
        (level == FabricLevel::intra_node || c.per_node == per_node))
      match->second = static_cast<int>(i);
  }
  return match->second < 0 ? nullptr : &impl_->collectives[static_cast<size_t>(match->second)];
}

std::optional<Priced> LearnedCosts::collective(const Device& device, CollectiveOp op, double bytes,
                                               GroupShape group) const {
  const learned::CollectiveFit* fit = collective_fit(device, op, group);
  if (!fit) return std::nullopt;
  const auto answer = fit->predict(bytes, group.ranks);
  return answer ? priced(*answer) : std::nullopt;
}

std::optional<PriceBasis> LearnedCosts::collective_basis(const Device& device, CollectiveOp op,
                                                         double bytes, GroupShape group) const {
  const learned::CollectiveFit* fit = collective_fit(device, op, group);
  if (!fit) return std::nullopt;
  const auto b = fit->basis(bytes, group.ranks);
  if (!b) return std::nullopt;
  PriceBasis out{
      fmt::format("{} model: {}", fit->level == FabricLevel::inter_node ? "between-node" : "fitted",
                  b->how),
      {},
      0,
      0,
      0};
  if (b->split.empty()) return out;
  // "each size held out" is named by how many sizes were held out where there were many.
  const bool sizes = b->split == "each size held out";
  for (const auto& cv : fit->cv) {
    if (cv.split.rfind(b->split, 0) == 0 ||
        (sizes && cv.split.rfind("sizes held out one at a time", 0) == 0)) {
      out.split = cv.split;
      out.median = cv.median;
      out.p90 = cv.p90;
      out.held_out = cv.rows;
      return out;
    }
  }
  out.split = b->split + ": no figure (too few measured to hold one out)";
  return out;
}

std::optional<Priced> LearnedCosts::memory(const Device& device, std::string_view kind,
                                           double bytes) const {
  if (!(bytes > 0)) return std::nullopt;
  std::lock_guard lock(impl_->mutex);
  auto [match, added] = impl_->memory_of.try_emplace({device.name, std::string(kind)}, -1);
  for (size_t i = 0; added && i < impl_->memory.size() && match->second < 0; ++i) {
    const auto& m = impl_->memory[i];
    if (m.kind == kind && same_device_name(m.device, device.name))
      match->second = static_cast<int>(i);
  }
  if (match->second < 0) return std::nullopt;
  return priced(impl_->memory[static_cast<size_t>(match->second)].predict(bytes));
}

std::optional<Priced> LearnedCosts::gemm(const Device& device, DType dtype,
                                         const GemmShape& s) const {
  std::lock_guard lock(impl_->mutex);
  auto [match, new_device] = impl_->model_of.try_emplace({device.name, dtype}, -1);
  for (size_t i = 0; new_device && i < impl_->gemms.size() && match->second < 0; ++i)
    if (impl_->gemms[i].dtype == dtype &&
        same_device_name(impl_->gemms[i].device.name, device.name))
      match->second = static_cast<int>(i);
  if (match->second >= 0) {
    const size_t i = static_cast<size_t>(match->second);
    const auto& e = impl_->gemms[i];
    const CostOrigin origin =
        e.model.fit().domain.contains(s) ? CostOrigin::learned : CostOrigin::extrapolated;
    auto [it, added] = impl_->cache.try_emplace({i, s}, 0.0);
    if (added) it->second = e.model.predict(e.device, {s}).front();
    // A damaged model's nonsense (not a positive, finite time) is left to the next source.
    if (!(it->second > 0) || !std::isfinite(it->second)) return std::nullopt;
    return Priced{it->second, origin};
  }
  // No model of this device: the pooled prior, if the device has a peak for the type.
  if (device.peak_flops[static_cast<int>(dtype)] <= 0) return std::nullopt;
  for (const auto& p : impl_->pooled)
    if (p.dtype == dtype)
      return Priced{learned::gemm_prior_seconds(device, dtype, s, p.prior),
                    CostOrigin::extrapolated};
  return std::nullopt;
}

}  // namespace shardcost

namespace shardcost {

std::optional<EmbeddingPriced> LearnedCosts::embedding(std::string_view device,
                                                       const EmbeddingPass& pass) const {
  if (!(pass.rows >= 1) || !(pass.dim >= 1) || !(pass.batch > 0) || !(pass.pooling > 0))
    return std::nullopt;
  // The last stored model of the device, pass, optimizer and element size (a pass knows its
  // weights' bytes only: fp16 and bf16 alike). Matched once per key: a plan asks per shard.
  const learned::EmbeddingFit* best = nullptr;
  {
    std::lock_guard lock(impl_->mutex);
    auto [match, added] = impl_->embedding_of.try_emplace(
        {std::string(device), pass.backward, pass.backward ? pass.optimizer : "", pass.dtype_bytes},
        -1);
    for (size_t i = 0; added && i < impl_->embeddings.size(); ++i) {
      const auto& e = impl_->embeddings[i];
      if (e.backward == pass.backward && (!pass.backward || e.optimizer == pass.optimizer) &&
          learned::embedding_dtype_bytes(e.dtype) == pass.dtype_bytes &&
          (e.device == device || same_device_name(e.device, device)))
        match->second = static_cast<int>(i);
    }
    if (match->second < 0) return std::nullopt;
    best = &impl_->embeddings[static_cast<size_t>(match->second)];
  }
  const auto [seconds, inside] = best->predict(pass);
  if (!(seconds > 0) || !std::isfinite(seconds)) return std::nullopt;
  return EmbeddingPriced{{seconds, inside ? CostOrigin::learned : CostOrigin::extrapolated},
                         std::min(best->fixed_s, seconds)};
}

std::optional<EmbeddingPriced> LearnedCosts::embedding(const Device& device,
                                                       const EmbeddingPass& pass) const {
  return embedding(std::string_view(device.name), pass);
}

std::optional<Priced> LearnedCosts::kernel(std::string_view device, std::string_view name,
                                           double threads, bool look_up) const {
  for (const auto& k : impl_->kernels) {
    if (k.device != device && !same_device_name(k.device, device)) continue;
    const auto answer = k.predict(name, threads, look_up);
    return answer ? priced(*answer) : std::nullopt;
  }
  return std::nullopt;
}

}  // namespace shardcost
