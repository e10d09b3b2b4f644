#include "gemm_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>

#include "gemm_features.h"
#include "records.h"
#include "shardcost/error.h"
#include "shardcost/parallel.h"
#include "shardcost/quantiles.h"
#include "tree_ensemble.h"
#include "xgboost_api.h"

namespace shardcost::learned {
namespace {

// Boosting parameters (docs/learned-models.md: chosen by cross-validation on the shared
// tables' training samples, the same for every device and type).
// One thread: XGBoost's OpenMP threads spin, and on a busy 2-core machine that made a fit
// of 2,000 rows take minutes instead of seconds.
const std::map<std::string, std::string> kParams = {{"objective", "reg:squarederror"},
                                                    {"max_depth", "6"},
                                                    {"eta", "0.08"},
                                                    {"subsample", "0.8"},
                                                    {"colsample_bytree", "0.8"},
                                                    {"min_child_weight", "2"},
                                                    {"tree_method", "hist"},
                                                    {"seed", "0"},
                                                    {"nthread", "1"},
                                                    {"base_score", "0"}};
constexpr int kRounds = 300;
constexpr int kFolds = 5;
constexpr uint64_t kSeed = 20261201;

struct Data {
  std::vector<float> x;
  std::vector<float> y;  // log2(prior / measured)
  size_t columns = 0;
};

// Label: log2(prior / measured), what the trees add to the analytic prior.
Data make_data(const Device& d, DType t, const std::vector<GemmRow>& rows,
               const std::vector<size_t>& which, const GemmPrior& prior) {
  Data out;
  out.columns = gemm_feature_names().size();
  for (size_t i : which) {
    gemm_features(d, t, rows[i].shape, out.x);
    out.y.push_back(static_cast<float>(
        std::log2(gemm_prior_seconds(d, t, rows[i].shape, prior) / rows[i].seconds)));
  }
  return out;
}

GemmPrior prior_of(const Device& d, DType t, const std::vector<GemmRow>& rows,
                   const std::vector<size_t>& which) {
  std::vector<PriorRow> p;
  for (size_t i : which) p.push_back({&d, t, rows[i].shape, rows[i].seconds});
  return fit_gemm_prior(p);
}

std::vector<double> predict_seconds(const xgb::Booster& b, const Device& d, DType t,
                                    const std::vector<GemmShape>& shapes, const GemmPrior& prior) {
  std::vector<float> x;
  for (const auto& s : shapes) gemm_features(d, t, s, x);
  const std::vector<float> residual = b.predict(x, gemm_feature_names().size());
  std::vector<double> out;
  for (size_t i = 0; i < shapes.size(); ++i)
    out.push_back(gemm_prior_seconds(d, t, shapes[i], prior) /
                  std::exp2(static_cast<double>(residual[i])));
  return out;
}

// A booster trained on some rows, with the prior it corrects.
struct Trained {
  GemmPrior prior;
  xgb::Booster booster;
};

Trained train_on(const Device& d, DType t, const std::vector<GemmRow>& rows,
                 const std::vector<size_t>& which) {
  const GemmPrior prior = prior_of(d, t, rows, which);
  const Data data = make_data(d, t, rows, which, prior);
  return {prior, xgb::Booster::train(data.x, data.columns, data.y, kParams, kRounds)};
}

// One fold's fit: the rows of fold `f` of `fold_of` held out, their predictions kept.
struct Fold {
  const std::vector<int>* fold_of = nullptr;
  int f = 0;
  std::vector<double> predicted, measured;
};

void run_fold(const Device& d, DType t, const std::vector<GemmRow>& rows, Fold& fold) {
  std::vector<size_t> train, test;
  for (size_t i = 0; i < rows.size(); ++i)
    ((*fold.fold_of)[i] == fold.f ? test : train).push_back(i);
  if (test.empty() || train.size() < kMinGemmRows) return;
  const Trained m = train_on(d, t, rows, train);
  std::vector<GemmShape> shapes;
  for (size_t i : test) shapes.push_back(rows[i].shape);
  fold.predicted = predict_seconds(m.booster, d, t, shapes, m.prior);
  for (size_t i : test) fold.measured.push_back(rows[i].seconds);
}

double log2_dim(const GemmShape& s, int i) {
  const int64_t v[4] = {s.m, s.n, s.k, s.batch};
  return std::log2(static_cast<double>(v[i]));
}

// The parts both records (a device's model, a pooled prior) share.
nlohmann::json prior_json(const GemmPrior& p) {
  return {{"c0_cycles", p.c0_cycles}, {"p", p.p}};
}
GemmPrior prior_from(const nlohmann::json& j) {
  const GemmPrior p{number_of(j.at("c0_cycles")), number_of(j.at("p"))};
  if (!(p.c0_cycles > 0) || !(p.p > 0)) throw InputError("its prior is not positive; fit again");
  return p;
}
}  // namespace

bool GemmDomain::contains(const GemmShape& s) const {
  for (int i = 0; i < 4; ++i) {
    const double v = log2_dim(s, i);
    if (v < lo[i] - 1e-9 || v > hi[i] + 1e-9) return false;
  }
  return true;
}

GemmFit fit_gemm(const Device& d, DType t, const std::vector<GemmRow>& rows, int threads) {
  if (rows.size() < kMinGemmRows)
    throw InputError(fmt::format("{} {}: {} GEMM rows, fewer than the {} a model needs", d.name,
                                 to_string(t), rows.size(), kMinGemmRows));
  if (d.peak_flops[static_cast<int>(t)] <= 0)
    throw InputError(
        fmt::format("{} has no {} peak in the catalog to fit against", d.name, to_string(t)));
  GemmFit fit;
  fit.device = d.name;
  fit.dtype = t;
  fit.rows = rows.size();
  // Folds: rows shuffled with a fixed seed; and whole (n, k) pairs held out, which says how
  // far the model carries to a weight shape it has not seen.
  std::mt19937_64 rng(kSeed);
  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<int> fold(rows.size()), group_fold(rows.size());
  for (size_t j = 0; j < order.size(); ++j) fold[order[j]] = static_cast<int>(j % kFolds);
  std::map<std::pair<int64_t, int64_t>, int> groups;
  for (const auto& r : rows) groups.emplace(std::make_pair(r.shape.n, r.shape.k), 0);
  std::vector<std::pair<int64_t, int64_t>> keys;
  for (const auto& [k, v] : groups) keys.push_back(k);
  std::shuffle(keys.begin(), keys.end(), rng);
  for (size_t j = 0; j < keys.size(); ++j) groups[keys[j]] = static_cast<int>(j % kFolds);
  for (size_t i = 0; i < rows.size(); ++i)
    group_fold[i] = groups[{rows[i].shape.n, rows[i].shape.k}];
  // The folds of both splits and the final fit, each on its own thread where there are several.
  const bool by_group = keys.size() >= static_cast<size_t>(kFolds);
  std::vector<Fold> folds;
  for (int f = 0; f < kFolds; ++f) folds.push_back({&fold, f, {}, {}});
  if (by_group)
    for (int f = 0; f < kFolds; ++f) folds.push_back({&group_fold, f, {}, {}});
  std::optional<Trained> final_fit;
  std::vector<size_t> all(rows.size());
  std::iota(all.begin(), all.end(), 0);
  parallel_for(folds.size() + 1, threads, [&](size_t i) {
    if (i == 0)
      final_fit = train_on(d, t, rows, all);  // the longest: started first
    else
      run_fold(d, t, rows, folds[i - 1]);
  });
  for (int split = 0; split < (by_group ? 2 : 1); ++split) {
    HeldOut held;
    for (int f = 0; f < kFolds; ++f) {
      const Fold& x = folds[static_cast<size_t>(split * kFolds + f)];
      for (size_t j = 0; j < x.predicted.size(); ++j) held.add(x.predicted[j], x.measured[j]);
    }
    fit.cv.push_back(held.summary(split == 0 ? "5-fold" : "5-fold by (n, k)"));
  }
  fit.prior = final_fit->prior;
  fit.booster = final_fit->booster.save();
  for (int i = 0; i < 4; ++i) {
    fit.domain.lo[i] = 1e300;
    fit.domain.hi[i] = -1e300;
  }
  for (const auto& r : rows)
    for (int i = 0; i < 4; ++i) {
      fit.domain.lo[i] = std::min(fit.domain.lo[i], log2_dim(r.shape, i));
      fit.domain.hi[i] = std::max(fit.domain.hi[i], log2_dim(r.shape, i));
    }
  return fit;
}

std::string GemmFit::to_json() const {
  nlohmann::json j;
  j["fitter"] = kGemmFitterVersion;
  j["xgboost"] = xgb::version();
  j["device"] = device;
  j["dtype"] = std::string(to_string(dtype));
  j["rows"] = rows;
  j["features"] = gemm_feature_names();
  j["target"] = "log2(prior seconds / measured seconds)";
  j["prior"] = prior_json(prior);
  j["cross_validation"] = cv_json(cv);
  j["domain_log2"] = {{"lo", domain.lo}, {"hi", domain.hi}};
  j["booster"] = nlohmann::json::parse(booster);
  return j.dump();
}

GemmFit GemmFit::from_json(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    GemmFit f;
    if (j.at("fitter").get<std::string>() != kGemmFitterVersion)
      throw InputError(fmt::format("fitted by '{}', not this shardcost's {}; fit again",
                                   j.at("fitter").get<std::string>(), kGemmFitterVersion));
    if (j.at("features").get<std::vector<std::string>>() != gemm_feature_names())
      throw InputError("its features differ from this shardcost's; fit again");
    f.device = j.at("device").get<std::string>();
    f.dtype = parse_dtype(j.at("dtype").get<std::string>());
    f.rows = count_of(j.at("rows"));
    f.prior = prior_from(j.at("prior"));
    f.cv = cv_from(j.at("cross_validation"));
    for (int i = 0; i < 4; ++i) {
      f.domain.lo[i] = number_of(j.at("domain_log2").at("lo").at(i));
      f.domain.hi[i] = number_of(j.at("domain_log2").at("hi").at(i));
    }
    f.booster = j.at("booster").dump();
    return f;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("unreadable GEMM model ({}); fit again", e.what()));
  }
}

struct GemmModel::Impl {
  TreeEnsemble trees;
};

GemmModel::GemmModel(const GemmFit& f)
    : fit_(f), impl_(new Impl{TreeEnsemble::from_xgboost_json(f.booster)}) {
  if (impl_->trees.features() != gemm_feature_names().size())
    throw InputError(
        fmt::format("GEMM model with {} features, this shardcost computes {}; fit again",
                    impl_->trees.features(), gemm_feature_names().size()));
}
GemmModel::GemmModel(GemmModel&&) noexcept = default;
GemmModel::~GemmModel() = default;

std::vector<double> GemmModel::predict(const Device& d,
                                       const std::vector<GemmShape>& shapes) const {
  std::vector<double> out;
  std::vector<float> x;
  for (const auto& s : shapes) {
    x.clear();
    gemm_features(d, fit_.dtype, s, x);
    out.push_back(gemm_prior_seconds(d, fit_.dtype, s, fit_.prior) /
                  std::exp2(impl_->trees.predict(x.data())));
  }
  return out;
}

namespace {

std::vector<PriorRow> prior_rows(DType t, const std::vector<DeviceRows>& data, int skip) {
  std::vector<PriorRow> out;
  for (size_t i = 0; i < data.size(); ++i) {
    if (static_cast<int>(i) == skip) continue;
    for (const auto& r : data[i].rows) out.push_back({&data[i].device, t, r.shape, r.seconds});
  }
  return out;
}

}  // namespace

PooledGemmPrior fit_pooled_gemm_prior(DType t, const std::vector<DeviceRows>& data) {
  PooledGemmPrior out;
  out.dtype = t;
  for (const auto& d : data) {
    out.devices.push_back(d.device.name);
    out.rows += d.rows.size();
  }
  if (out.rows < kMinGemmRows)
    throw InputError(fmt::format("{} GEMM rows over all devices, fewer than the {} a prior needs",
                                 out.rows, kMinGemmRows));
  out.prior = fit_gemm_prior(prior_rows(t, data, -1));
  if (data.size() >= 2) {
    for (size_t held = 0; held < data.size(); ++held) {
      const GemmPrior p = fit_gemm_prior(prior_rows(t, data, static_cast<int>(held)));
      HeldOut predictions;
      for (const auto& r : data[held].rows)
        predictions.add(gemm_prior_seconds(data[held].device, t, r.shape, p), r.seconds);
      out.cv.push_back(predictions.summary("without " + data[held].device.name));
    }
  }
  return out;
}

std::string PooledGemmPrior::to_json() const {
  nlohmann::json j;
  j["fitter"] = kGemmFitterVersion;
  j["dtype"] = std::string(to_string(dtype));
  j["prior"] = prior_json(prior);
  j["devices"] = devices;
  j["rows"] = rows;
  j["cross_validation"] = cv_json(cv);
  return j.dump();
}

PooledGemmPrior PooledGemmPrior::from_json(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    if (j.at("fitter").get<std::string>() != kGemmFitterVersion)
      throw InputError("fitted by another shardcost; fit again");
    PooledGemmPrior p;
    p.dtype = parse_dtype(j.at("dtype").get<std::string>());
    p.prior = prior_from(j.at("prior"));
    p.devices = j.at("devices").get<std::vector<std::string>>();
    p.rows = count_of(j.at("rows"));
    p.cv = cv_from(j.at("cross_validation"));
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("unreadable pooled GEMM prior ({}); fit again", e.what()));
  }
}

}  // namespace shardcost::learned
