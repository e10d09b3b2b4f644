// fit_store (the store's rows into fitted models) and LearnedCosts (fitted models as a cost
// source, with a cache: searches ask for the same few thousand shapes many times).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <unordered_map>

#include "gemm_model.h"
#include "shardcost/db.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/learned.h"
#include "shardcost/store_costs.h"

namespace shardcost {
namespace {

constexpr const char* kGemmKind = "gemm_efficiency";
constexpr const char* kPooledKind = "gemm_prior_pooled";

// The figures a fitted model carries, as fit reports them.
std::vector<FitReport::Validation> validations(const std::vector<learned::CrossValidation>& cv) {
  std::vector<FitReport::Validation> out;
  for (const auto& c : cv) out.push_back({c.split, c.rows, c.median, c.p90});
  return out;
}

// "a100-sxm4-80gb+b200-sxm-180gb": the devices a pooled prior was fitted on.
std::string joined(const std::vector<std::string>& devices) {
  std::string out;
  for (const auto& d : devices) out += (out.empty() ? "" : "+") + d;
  return out;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::vector<FitReport> fit_store(const std::string& path, std::string_view table,
                                 const std::optional<std::string>& device) {
  if (table != "gemm" && table != "all")
    throw InputError(fmt::format("--table {}: models are fitted for gemm (or all); collective, "
                                 "memory and kernel models are not built yet",
                                 table));
  if (device) (void)find_device(*device);  // an unknown name is an error, not an empty fit
  db::Store store = db::Store::open(path, db::Store::Mode::read_write);
  // (stored device, dtype) -> shape -> (sum of seconds, count)
  std::map<std::pair<std::string, std::string>, std::map<GemmShape, std::pair<double, int>>> rows;
  for (const auto& p : store.gemm_points()) {
    auto& slot = rows[{p.device, p.dtype}][{p.m, p.n, p.k, p.batch}];
    slot.first += p.time_ns * 1e-9;
    slot.second += 1;
  }
  std::vector<FitReport> out;
  std::map<DType, std::vector<learned::DeviceRows>> pooled;  // per type, every device's rows
  for (const auto& [key, shapes] : rows) {
    const auto& [stored, dtype_name] = key;
    FitReport r;
    r.kind = kGemmKind;
    r.key = dtype_name;
    r.rows = shapes.size();
    const auto catalog = catalog_device_for(stored);
    r.device = catalog ? catalog->name : stored;
    if (device && (!catalog || catalog->name != *device)) continue;
    const auto dtype = parse_store_dtype(dtype_name);
    if (!catalog) {
      r.skipped = fmt::format("no catalog device is '{}': the model's features need its specs", stored);
    } else if (!dtype) {
      r.skipped = fmt::format("data type '{}' is not one shardcost prices", dtype_name);
    } else if (shapes.size() < learned::kMinGemmRows) {
      r.skipped = fmt::format("{} shapes, fewer than the {} a model needs", shapes.size(),
                              learned::kMinGemmRows);
    } else if (catalog->peak_flops[static_cast<int>(*dtype)] <= 0) {
      r.skipped = fmt::format("{} has no {} peak in the catalog", catalog->name, dtype_name);
    } else {
      r.key = std::string(to_string(*dtype));
      std::vector<learned::GemmRow> data;
      for (const auto& [shape, sum] : shapes) data.push_back({shape, sum.first / sum.second});
      const learned::GemmFit fit = learned::fit_gemm(*catalog, *dtype, data);
      r.cross_validation = validations(fit.cv);
      store.put_fitted_model({kGemmKind, stored, r.key, fit.to_json(), "", now_ns()});
      pooled[*dtype].push_back({*catalog, std::move(data)});
    }
    out.push_back(std::move(r));
  }
  // The prior over every device of a type prices devices with no rows of their own.
  if (!device) {
    for (const auto& [dtype, data] : pooled) {
      const learned::PooledGemmPrior p = learned::fit_pooled_gemm_prior(dtype, data);
      store.put_fitted_model({kPooledKind, "", std::string(to_string(dtype)), p.to_json(), "", now_ns()});
      out.push_back({kPooledKind, joined(p.devices), std::string(to_string(dtype)), p.rows,
                     validations(p.cv), ""});
    }
  }
  return out;
}

struct LearnedCosts::Impl {
  struct Entry {
    DType dtype;
    learned::GemmModel model;
    Device device;  // the catalog device it was fitted for
  };
  std::vector<Entry> gemms;
  std::vector<learned::PooledGemmPrior> pooled;
  std::vector<FitReport> described;
  mutable std::mutex mutex;
  // (device name, dtype) -> the model of that device (index into gemms), or -1: matching
  // names is string work a search must not repeat per operator.
  mutable std::map<std::pair<std::string, DType>, int> model_of;
  struct Key {
    size_t model;
    GemmShape shape;
    bool operator==(const Key& o) const { return model == o.model && shape == o.shape; }
  };
  struct Hash {
    size_t operator()(const Key& k) const {
      size_t h = k.model;
      for (int64_t v : {k.shape.m, k.shape.n, k.shape.k, k.shape.batch}) h = h * 1000003 ^ std::hash<int64_t>()(v);
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
        impl->described.push_back({kPooledKind, joined(p.devices), row.key, p.rows, validations(p.cv), ""});
      } catch (const Error& e) {
        if (problems)
          problems->push_back(fmt::format("{}: fitted model {} {} skipped: {}", path, row.kind, row.key, e.what()));
      }
      continue;
    }
    if (row.kind != kGemmKind) continue;
    try {
      const learned::GemmFit fit = learned::GemmFit::from_json(row.parameters_json);
      Device d = find_device(fit.device);
      impl->gemms.push_back({fit.dtype, learned::GemmModel(fit), std::move(d)});
      impl->described.push_back({kGemmKind, fit.device, std::string(to_string(fit.dtype)), fit.rows,
                                 validations(fit.cv), ""});
    } catch (const Error& e) {
      if (problems)
        problems->push_back(fmt::format("{}: fitted model {} {} {} skipped: {}", path, row.kind,
                                        row.device, row.key, e.what()));
    }
  }
  return LearnedCosts(std::move(impl));
}

const std::vector<FitReport>& LearnedCosts::describe() const { return impl_->described; }

size_t LearnedCosts::models() const { return impl_->gemms.size() + impl_->pooled.size(); }

std::optional<Priced> LearnedCosts::gemm(const Device& device, DType dtype, const GemmShape& s) const {
  std::lock_guard lock(impl_->mutex);
  auto [match, new_device] = impl_->model_of.try_emplace({device.name, dtype}, -1);
  for (size_t i = 0; new_device && i < impl_->gemms.size() && match->second < 0; ++i)
    if (impl_->gemms[i].dtype == dtype && same_device_name(impl_->gemms[i].device.name, device.name))
      match->second = static_cast<int>(i);
  if (match->second >= 0) {
    const size_t i = static_cast<size_t>(match->second);
    const auto& e = impl_->gemms[i];
    const CostOrigin origin = e.model.fit().domain.contains(s) ? CostOrigin::learned : CostOrigin::extrapolated;
    auto [it, added] = impl_->cache.try_emplace({i, s}, 0.0);
    if (added) it->second = e.model.predict(e.device, {s}).front();
    // A damaged model's nonsense (not a positive, finite time) is left to the next source.
    if (!(it->second > 0) || !std::isfinite(it->second)) return std::nullopt;
    return Priced{it->second, origin};
  }
  // No model of this device: the pooled prior, if the device has a peak for the type.
  if (device.peak_flops[static_cast<int>(dtype)] <= 0) return std::nullopt;
  for (const auto& p : impl_->pooled)
    if (p.dtype == dtype) return Priced{learned::gemm_prior_seconds(device, dtype, s, p.prior), CostOrigin::extrapolated};
  return std::nullopt;
}

}  // namespace shardcost
