// fit_store: the store's rows into fitted models, one per stored device and data type
// (GEMMs), op and fabric level (collectives) or kind (memory), and one per device for its
// traced kernels, saved in fitted_model.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <thread>

#include "curve_model.h"
#include "embedding_model.h"
#include "gemm_model.h"
#include "kernel_model.h"
#include "kinds.h"
#include "shardcost/db.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/learned.h"
#include "shardcost/quantiles.h"
#include "shardcost/store_costs.h"

namespace shardcost {

using namespace learned;  // the record kinds and the fitters

namespace {

// What every model of one stored device starts from: its catalog device, or why not.
struct Target {
  FitReport report;
  std::optional<Device> catalog;
  bool wanted = true;  // false: --device names another device
};
Target target(const std::string& kind, const std::string& stored, std::string key, size_t rows,
              const std::optional<std::string>& device) {
  Target t;
  t.report.kind = kind;
  t.report.key = std::move(key);
  t.report.rows = rows;
  t.catalog = catalog_device_for(stored);
  t.report.device = t.catalog ? t.catalog->name : stored;
  t.wanted = !device || (t.catalog && t.catalog->name == *device);
  if (!t.catalog)
    t.report.skipped = fmt::format("no catalog device is '{}': the model needs its specs", stored);
  return t;
}

void fit_gemms(db::Store& store, const std::optional<std::string>& device, int threads,
               std::vector<FitReport>& out) {
  // (stored device, dtype) -> shape -> (sum of seconds, count)
  std::map<std::pair<std::string, std::string>, std::map<GemmShape, std::pair<double, int>>> rows;
  for (const auto& p : store.gemm_points()) {
    auto& slot = rows[{p.device, p.dtype}][{p.m, p.n, p.k, p.batch}];
    slot.first += p.time_ns * 1e-9;
    slot.second += 1;
  }
  std::map<DType, std::vector<DeviceRows>> pooled;  // per type, every device's rows
  for (const auto& [key, shapes] : rows) {
    const auto& [stored, dtype_name] = key;
    Target t = target(kGemmKind, stored, dtype_name, shapes.size(), device);
    if (!t.wanted) continue;
    FitReport& r = t.report;
    const auto dtype = parse_store_dtype(dtype_name);
    if (!t.catalog) {
    } else if (!dtype) {
      r.skipped = fmt::format("data type '{}' is not one shardcost prices", dtype_name);
    } else if (shapes.size() < kMinGemmRows) {
      r.skipped =
          fmt::format("{} shapes, fewer than the {} a model needs", shapes.size(), kMinGemmRows);
    } else if (t.catalog->peak_flops[static_cast<int>(*dtype)] <= 0) {
      r.skipped = fmt::format("{} has no {} peak in the catalog", t.catalog->name, dtype_name);
    } else {
      r.key = std::string(to_string(*dtype));
      std::vector<GemmRow> data;
      for (const auto& [shape, sum] : shapes) data.push_back({shape, sum.first / sum.second});
      const GemmFit fit = fit_gemm(*t.catalog, *dtype, data, threads);
      r.cross_validation = validations(fit.cv);
      store.put_fitted_model(
          {kGemmKind, stored, r.key, fit.to_json(), store.source_runs("gemm", stored), 0});
      pooled[*dtype].push_back({*t.catalog, std::move(data)});
    }
    out.push_back(std::move(r));
  }
  // The prior over every device of a type prices devices with no rows of their own.
  if (device) return;
  for (const auto& [dtype, data] : pooled) {
    const PooledGemmPrior p = fit_pooled_gemm_prior(dtype, data);
    store.put_fitted_model({kPooledKind, "", std::string(to_string(dtype)), p.to_json(),
                            store.source_runs("gemm", ""), 0});
    out.push_back({kPooledKind,
                   joined(p.devices),
                   std::string(to_string(dtype)),
                   p.rows,
                   validations(p.cv),
                   "",
                   {}});
  }
}

void fit_collectives(db::Store& store, const std::optional<std::string>& device,
                     std::vector<FitReport>& out) {
  // Between nodes, a model per ranks-per-node layout: their curves are different links.
  using Key = std::tuple<std::string, CollectiveOp, FabricLevel, int>;
  std::map<Key, std::map<int, std::vector<std::pair<double, double>>>> rows;
  std::map<Key, size_t> counts;
  for (const auto& p : store.collective_points()) {
    const auto op = parse_collective_op(p.op);
    if (!op || p.bytes <= 0 || p.time_ns <= 0)
      continue;  // gather, scatter: nothing the estimator asks for
    const FabricLevel level =
        p.fabric_level == "inter_node" ? FabricLevel::inter_node : FabricLevel::intra_node;
    const int per_node = level == FabricLevel::inter_node
                             ? GroupShape::measured(p.ranks, p.nodes, level).ranks_per_node()
                             : 0;
    const Key key{p.device, *op, level, per_node};
    rows[key][p.ranks].push_back({static_cast<double>(p.bytes), p.time_ns * 1e-9});
    ++counts[key];
  }
  for (const auto& [key, by_ranks] : rows) {
    const auto& [stored, op, level, per_node] = key;
    Target t =
        target(kCollectiveKind, stored, collective_key(op, level, per_node), counts[key], device);
    if (!t.wanted) continue;
    if (t.catalog) {
      try {
        CollectiveFit fit =
            fit_collective(*t.catalog, op, level, {by_ranks.begin(), by_ranks.end()});
        fit.per_node = per_node;
        t.report.rows = fit.rows;
        t.report.cross_validation = validations(fit.cv);
        t.report.notes = fit.dropped;
        store.put_fitted_model({kCollectiveKind, stored, t.report.key, fit.to_json(),
                                store.source_runs("collective", stored), 0});
      } catch (const InputError& e) {
        t.report.skipped = e.what();
      }
    }
    out.push_back(std::move(t.report));
  }
}

void fit_memory_kinds(db::Store& store, const std::optional<std::string>& device,
                      std::vector<FitReport>& out) {
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<double, double>>> rows;
  for (const auto& p : store.memory_points())
    if (p.bytes > 0 && p.time_ns > 0)
      rows[{p.device, p.kind}].push_back({static_cast<double>(p.bytes), p.time_ns * 1e-9});
  for (const auto& [key, points] : rows) {
    const auto& [stored, kind] = key;
    Target t = target(kMemoryKind, stored, kind, points.size(), device);
    if (!t.wanted) continue;
    t.report.skipped.clear();  // a memory curve needs no specs: a host CPU's own name will do
    try {
      const MemoryFit fit = fit_memory(t.report.device, kind, points);
      t.report.rows = fit.rows;
      t.report.cross_validation = validations(fit.cv);
      store.put_fitted_model(
          {kMemoryKind, stored, kind, fit.to_json(), store.source_runs("memory", stored), 0});
    } catch (const InputError& e) {
      t.report.skipped = e.what();
    }
    out.push_back(std::move(t.report));
  }
}

void fit_kernel_classes(db::Store& store, const std::optional<std::string>& device,
                        std::vector<FitReport>& out) {
  std::map<std::string, std::vector<KernelSample>> rows;
  std::map<std::string, size_t> events;
  for (const auto& p : store.kernel_points()) {
    rows[p.device].push_back({p.name, p.launch.threads(), p.count, p.mean_ns * 1e-9});
    events[p.device] += static_cast<size_t>(p.count);
  }
  for (auto& [stored, samples] : rows) {
    Target t = target(kKernelKind, stored, kKernelKey, events[stored], device);
    if (!t.wanted) continue;
    t.report.skipped
        .clear();  // a kernel's duration needs no specs: a trace's own device name will do
    try {
      const KernelFit fit = fit_kernels(t.report.device, std::move(samples));
      t.report.rows = fit.rows;
      t.report.cross_validation = validations(fit.cv);
      t.report.notes.push_back(fmt::format("{} kernel classes", fit.classes.size()));
      store.put_fitted_model({kKernelKind, stored, kKernelKey, fit.to_json(),
                              store.source_runs("kernel_event", stored), 0});
    } catch (const InputError& e) {
      t.report.skipped = e.what();
    }
    out.push_back(std::move(t.report));
  }
}

void fit_embeddings(db::Store& store, const std::optional<std::string>& device,
                    std::vector<FitReport>& out) {
  // (stored device, pass, dtype, optimizer) -> configuration -> its measured times. A
  // configuration measured in several rounds (bench embedding --rounds) counts once, at the
  // median: on a noisy machine its rounds drift apart, and one slow round must not move it.
  using Key = std::tuple<std::string, bool, std::string, std::string>;
  using Config = std::tuple<int64_t, int64_t, double, int64_t, double>;
  std::map<Key, std::map<Config, std::vector<int64_t>>> rows;
  for (const auto& p : store.embedding_points()) {
    const bool backward = p.pass == "backward";
    rows[{p.device, backward, p.dtype, backward ? p.optimizer : "none"}]
        [{p.rows, p.dim, p.pooling, p.batch, p.zipf}]
            .push_back(p.time_ns);
  }
  for (const auto& [key, configs] : rows) {
    const auto& [stored, backward, dtype, optimizer] = key;
    Target t = target(kEmbeddingKind, stored, embedding_key(backward, dtype, optimizer),
                      configs.size(), device);
    if (!t.wanted) continue;
    t.report.skipped.clear();  // the model needs no specs: a host CPU's own name will do
    const int bytes = embedding_dtype_bytes(dtype);
    if (bytes == 0) {
      t.report.skipped = fmt::format("weight type '{}' is not fp32, fp16 or bf16", dtype);
      out.push_back(std::move(t.report));
      continue;
    }
    std::vector<EmbeddingRow> data;
    for (const auto& [c, times] : configs) {
      const auto& [r, dim, pooling, batch, zipf] = c;
      EmbeddingPass pass{backward,
                         bytes,
                         optimizer,
                         static_cast<double>(r),
                         static_cast<double>(dim),
                         pooling,
                         static_cast<double>(batch),
                         zipf,
                         {}};
      data.push_back({pass, median(times) * 1e-9});
    }
    try {
      const EmbeddingFit fit = fit_embedding(t.report.device, backward, dtype, optimizer, data);
      t.report.cross_validation = validations(fit.cv);
      store.put_fitted_model({kEmbeddingKind, stored, t.report.key, fit.to_json(),
                              store.source_runs("embedding", stored), 0});
    } catch (const InputError& e) {
      t.report.skipped = e.what();
    }
    out.push_back(std::move(t.report));
  }
}

}  // namespace

std::vector<FitReport> fit_store(const std::string& path, std::string_view table,
                                 const std::optional<std::string>& device, int threads) {
  if (threads < 0)
    throw InputError(
        fmt::format("--threads {}: give a count of at least 1 (0: every core)", threads));
  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (table != "gemm" && table != "collective" && table != "memory" && table != "kernels" &&
      table != "embedding" && table != "all")
    throw InputError(fmt::format(
        "--table {}: models are fitted for gemm, collective, memory, embedding or kernels (or "
        "all)",
        table));
  if (device) (void)find_device(*device);  // an unknown name is an error, not an empty fit
  // Fitting reads measurements: a store that is not there is a mistyped path, never a new one.
  { (void)db::Store::open(path, db::Store::Mode::read_only); }
  db::Store store = db::Store::open(path, db::Store::Mode::read_write);
  std::vector<FitReport> out;
  if (table == "gemm" || table == "all") fit_gemms(store, device, threads, out);
  if (table == "collective" || table == "all") fit_collectives(store, device, out);
  if (table == "memory" || table == "all") fit_memory_kinds(store, device, out);
  if (table == "kernels" || table == "all") fit_kernel_classes(store, device, out);
  if (table == "embedding" || table == "all") fit_embeddings(store, device, out);
  return out;
}

}  // namespace shardcost
