#include "embedding_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <set>

#include "costs/embedding_bytes.h"
#include "shardcost/error.h"
#include "xgboost_api.h"

namespace shardcost::learned {
namespace {

// Small tables of a few hundred configurations: shallow trees, as many rounds as the GEMM
// model's at a higher rate. One thread (XGBoost's OpenMP threads spin on a busy machine).
const std::map<std::string, std::string> kParams = {{"objective", "reg:squarederror"},
                                                    {"max_depth", "3"},
                                                    {"eta", "0.1"},
                                                    {"subsample", "0.8"},
                                                    {"colsample_bytree", "1"},
                                                    {"min_child_weight", "3"},
                                                    {"tree_method", "exact"},
                                                    {"seed", "0"},
                                                    {"nthread", "1"},
                                                    {"base_score", "0"}};
constexpr int kRounds = 200;
constexpr int kFolds = 5;
constexpr uint64_t kSeed = 20261202;

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = {
      "log2 rows",          "log2 dim",           "log2 pooling",
      "log2 batch",         "hottest 1 % share",  "log2 lookups",
      "log2 table bytes",   "log2 distinct rows", "log2 distinct rows bytes",
      "distinct / lookups", "log2 pass bytes",    "log2 row bytes"};
  return names;
}

void features(const EmbeddingPass& p, std::vector<float>& x) {
  const double lookups = p.batch * p.pooling, row = p.dim * p.dtype_bytes;
  const double distinct =
      std::max(1.0, embedding_bytes::unique_rows(p.rows, p.zipf, lookups, p.histogram));
  for (double v :
       {std::log2(p.rows), std::log2(p.dim), std::log2(p.pooling), std::log2(p.batch),
        // The skew, whichever way it was given: the lookups' share of the hottest rows.
        embedding_bytes::top_mass(p.rows, p.zipf, std::max(1.0, 0.01 * p.rows), p.histogram),
        std::log2(lookups), std::log2(p.rows * row), std::log2(distinct), std::log2(distinct * row),
        distinct / lookups, std::log2(embedding_bytes::pass_bytes(p)), std::log2(row)})
    x.push_back(static_cast<float>(v));
}

double log2_dim(const EmbeddingPass& p, int i) {
  switch (i) {
    case 0:
      return std::log2(p.rows);
    case 1:
      return std::log2(p.dim);
    case 2:
      return std::log2(p.pooling);
    case 3:
      return std::log2(p.batch);
    default:
      return p.zipf;
  }
}

// The prior's terms for a cache of `cache` bytes: bytes the cache serves, bytes memory serves,
// lookups.
struct Terms {
  double hit = 0, miss = 0, lookups = 0;
};
Terms terms(const EmbeddingPass& p, double cache) {
  using embedding_bytes::sectors;
  const double row = p.dim * p.dtype_bytes, lookups = p.batch * p.pooling;
  const double cached_rows = cache / sectors(row);
  Terms t;
  t.lookups = lookups;
  if (!p.backward) {
    // Each lookup's row: from the cache when it is among the hot rows the cache holds.
    const double reads = lookups * sectors(row),
                 h = embedding_bytes::top_mass(p.rows, p.zipf, cached_rows, p.histogram);
    t.hit = reads * h;
    t.miss = reads * (1 - h) + p.batch * row;  // pooled rows written: streamed
    return t;
  }
  const double unique =
      std::max(1.0, embedding_bytes::unique_rows(p.rows, p.zipf, lookups, p.histogram));
  // Distinct rows updated: cached when the table fits, or (skewed) when they are the hot ones.
  const double hu = p.zipf > 0 || !p.histogram.empty() ? std::min(1.0, cached_rows / unique)
                                                       : std::min(1.0, cached_rows / p.rows);
  const double update =
      unique * (2 * sectors(row) + 2 * embedding_bytes::state_bytes(p.optimizer, p.dim));
  // Each lookup's fp32 output gradient row, from the cache when the batch's gradients fit.
  const double grads = lookups * sectors(4 * p.dim);
  const double hg = std::min(1.0, cache / (p.batch * p.dim * 4));
  t.hit = update * hu + grads * hg;
  t.miss = update * (1 - hu) + grads * (1 - hg) + p.batch * row;
  return t;
}

// Solves the k x k system a x = b (k <= 5) by elimination with partial pivoting; false when
// singular.
bool solve(std::vector<std::vector<double>> a, std::vector<double> b, std::vector<double>& x) {
  const size_t k = b.size();
  for (size_t c = 0; c < k; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < k; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[pivot][c])) pivot = r;
    if (std::fabs(a[pivot][c]) < 1e-300) return false;
    std::swap(a[c], a[pivot]);
    std::swap(b[c], b[pivot]);
    for (size_t r = c + 1; r < k; ++r) {
      const double f = a[r][c] / a[c][c];
      for (size_t j = c; j < k; ++j) a[r][j] -= f * a[c][j];
      b[r] -= f * b[c];
    }
  }
  x.assign(k, 0);
  for (size_t c = k; c-- > 0;) {
    double v = b[c];
    for (size_t j = c + 1; j < k; ++j) v -= a[c][j] * x[j];
    x[c] = v / a[c][c];
  }
  return true;
}

// The prior's constants by least squares on relative error (weights 1/t^2), none negative:
// every subset of the five terms is solved and the best all-positive one kept, for each pair
// of cache sizes from 64 KiB to 8 GiB (by factors of 2). The levels are not ordered by speed:
// ordering them (near <= far <= memory per byte) cost 2-7 points of the forward's off-design
// error on this VM's kept runs (docs/embeddings.md).
void fit_prior(EmbeddingFit& f, const std::vector<EmbeddingRow>& rows,
               const std::vector<size_t>& which) {
  double best = 1e300;
  // Each row's terms at each cache size, once: every pair of sizes reads them.
  std::vector<double> sizes;
  for (double c = 64.0 * 1024; c <= 8.0 * (1 << 30); c *= 2) sizes.push_back(c);
  std::vector<std::vector<Terms>> at(sizes.size());
  for (size_t s = 0; s < sizes.size(); ++s)
    for (size_t i : which) at[s].push_back(terms(rows[i].pass, sizes[s]));
  std::vector<double> t;
  for (size_t i : which) t.push_back(rows[i].seconds);
  for (size_t ni = 0; ni + 1 < sizes.size(); ++ni)
    for (size_t fi = ni + 1; fi < sizes.size(); ++fi) {
      const double near = sizes[ni], far = sizes[fi];
      std::vector<std::array<double, 5>> x;
      for (size_t r = 0; r < t.size(); ++r) {
        const Terms& n = at[ni][r];
        const Terms& m = at[fi][r];
        x.push_back({1.0, n.hit, m.hit - n.hit, m.miss, m.lookups});
      }
      for (int mask = 1; mask < 32; ++mask) {
        std::vector<int> used;
        for (int j = 0; j < 5; ++j)
          if (mask & (1 << j)) used.push_back(j);
        const size_t k = used.size();
        std::vector<std::vector<double>> a(k, std::vector<double>(k, 0));
        std::vector<double> b(k, 0), coef;
        for (size_t r = 0; r < t.size(); ++r) {
          const double w = 1 / (t[r] * t[r]);
          for (size_t p = 0; p < k; ++p) {
            b[p] += w * x[r][static_cast<size_t>(used[p])] * t[r];
            for (size_t q = 0; q < k; ++q)
              a[p][q] +=
                  w * x[r][static_cast<size_t>(used[p])] * x[r][static_cast<size_t>(used[q])];
          }
        }
        if (!solve(a, b, coef)) continue;
        if (std::any_of(coef.begin(), coef.end(), [](double c) { return !(c >= 0); })) continue;
        double err = 0;
        for (size_t r = 0; r < t.size(); ++r) {
          double pred = 0;
          for (size_t p = 0; p < k; ++p) pred += coef[p] * x[r][static_cast<size_t>(used[p])];
          err += (pred / t[r] - 1) * (pred / t[r] - 1);
        }
        if (err >= best) continue;
        best = err;
        double c[5] = {0, 0, 0, 0, 0};
        for (size_t p = 0; p < k; ++p) c[used[p]] = coef[p];
        f.fixed_s = c[0], f.near_s_per_byte = c[1], f.far_s_per_byte = c[2];
        f.miss_s_per_byte = c[3], f.lookup_s = c[4];
        f.near_bytes = near, f.far_bytes = far;
      }
    }
}

struct Data {
  std::vector<float> x, y;
};
Data make_data(const EmbeddingFit& f, const std::vector<EmbeddingRow>& rows,
               const std::vector<size_t>& which) {
  Data d;
  for (size_t i : which) {
    features(rows[i].pass, d.x);
    d.y.push_back(static_cast<float>(std::log2(f.prior_s(rows[i].pass) / rows[i].seconds)));
  }
  return d;
}

// The configurations `which` spans: where the model is learned, and where the trees'
// correction is taken for a pass outside (predict).
void set_domain(EmbeddingFit& f, const std::vector<EmbeddingRow>& rows,
                const std::vector<size_t>& which) {
  for (int i = 0; i < 5; ++i) f.lo[i] = 1e300, f.hi[i] = -1e300;
  for (size_t r : which)
    for (int i = 0; i < 5; ++i) {
      f.lo[i] = std::min(f.lo[i], log2_dim(rows[r].pass, i));
      f.hi[i] = std::max(f.hi[i], log2_dim(rows[r].pass, i));
    }
}

// The domain, the prior and the trees fitted on the rows `which`.
void train(EmbeddingFit& f, const std::vector<EmbeddingRow>& rows,
           const std::vector<size_t>& which) {
  set_domain(f, rows, which);
  fit_prior(f, rows, which);
  const Data d = make_data(f, rows, which);
  f.booster = xgb::Booster::train(d.x, feature_names().size(), d.y, kParams, kRounds).save();
  f.trees = TreeEnsemble::from_xgboost_json(f.booster);
}

CrossValidation cross_validate(const EmbeddingFit& base, const std::vector<EmbeddingRow>& rows,
                               const std::vector<int>& fold_of, int folds, const std::string& split,
                               bool prior_alone = false) {
  HeldOut held;
  for (int k = 0; k < folds; ++k) {
    std::vector<size_t> fit_rows, test;
    for (size_t i = 0; i < rows.size(); ++i) (fold_of[i] == k ? test : fit_rows).push_back(i);
    if (test.empty() || fit_rows.size() < kMinEmbeddingRows / 2) continue;
    EmbeddingFit f = base;
    if (prior_alone) {
      set_domain(f, rows, fit_rows);
      fit_prior(f, rows, fit_rows);
    } else
      train(f, rows, fit_rows);
    for (size_t i : test) held.add(f.predict(rows[i].pass).first, rows[i].seconds);
  }
  return held.summary(split);
}

}  // namespace

std::string embedding_key(bool backward, const std::string& dtype, const std::string& optimizer) {
  return backward ? fmt::format("backward {} {}", dtype, optimizer)
                  : fmt::format("forward {}", dtype);
}

int embedding_dtype_bytes(const std::string& dtype) {
  return dtype == "fp32" ? 4 : dtype == "fp16" || dtype == "bf16" ? 2 : 0;
}

double EmbeddingFit::prior_s(const EmbeddingPass& p) const {
  const Terms n = terms(p, near_bytes), m = terms(p, far_bytes);
  return std::max(1e-9, fixed_s + near_s_per_byte * n.hit + far_s_per_byte * (m.hit - n.hit) +
                            miss_s_per_byte * m.miss + lookup_s * m.lookups);
}

std::pair<double, bool> EmbeddingFit::predict(const EmbeddingPass& p) const {
  // Outside the configurations fitted on, the prior carries the pass on and the trees'
  // correction stays what it is at the nearest fitted configuration: trees do not extrapolate,
  // and their last step can turn the physics around (a larger table priced cheaper).
  EmbeddingPass edge = p;
  double* dims[5] = {&edge.rows, &edge.dim, &edge.pooling, &edge.batch, &edge.zipf};
  bool inside = true;
  for (int i = 0; i < 5; ++i) {
    const double v = log2_dim(p, i);
    inside = inside && v >= lo[i] - 1e-9 && v <= hi[i] + 1e-9;
    const double clamped = std::clamp(v, lo[i], std::max(lo[i], hi[i]));
    if (clamped != v) *dims[i] = i == 4 ? clamped : std::exp2(clamped);
  }
  std::vector<float> x;
  features(edge, x);
  const double correction = trees ? trees->predict(x.data()) : 0;
  return {prior_s(p) / std::exp2(correction), inside};
}

EmbeddingFit fit_embedding(const std::string& device, bool backward, const std::string& dtype,
                           const std::string& optimizer, const std::vector<EmbeddingRow>& rows) {
  if (rows.size() < kMinEmbeddingRows)
    throw InputError(fmt::format("{} configurations, fewer than the {} a model needs", rows.size(),
                                 kMinEmbeddingRows));
  EmbeddingFit f;
  f.device = device;
  f.backward = backward;
  f.dtype = dtype;
  f.optimizer = backward ? optimizer : "none";
  f.rows = rows.size();
  // Folds: rows shuffled with a fixed seed; and each table size held out in turn, which says
  // how far the model carries to a table size it has not seen.
  std::mt19937_64 rng(kSeed);
  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<int> fold(rows.size());
  for (size_t j = 0; j < order.size(); ++j) fold[order[j]] = static_cast<int>(j % kFolds);
  f.cv.push_back(cross_validate(f, rows, fold, kFolds, "5-fold"));
  f.cv.push_back(cross_validate(f, rows, fold, kFolds, "5-fold, prior alone", true));
  std::set<double> sizes;
  for (const auto& r : rows) sizes.insert(r.pass.rows);
  // Only where table sizes repeat (a grid): a sampled design's sizes are all different, and
  // holding each out is the 5-fold split again.
  if (sizes.size() >= 3 && 3 * sizes.size() <= rows.size()) {
    std::vector<int> by_size(rows.size());
    for (size_t i = 0; i < rows.size(); ++i)
      by_size[i] = static_cast<int>(std::distance(sizes.begin(), sizes.find(rows[i].pass.rows)));
    f.cv.push_back(cross_validate(f, rows, by_size, static_cast<int>(sizes.size()),
                                  "each table size held out"));
  }
  std::vector<size_t> all(rows.size());
  std::iota(all.begin(), all.end(), 0);
  train(f, rows, all);
  return f;
}

std::string EmbeddingFit::to_json() const {
  nlohmann::json j;
  j["fitter"] = kEmbeddingFitterVersion;
  j["xgboost"] = xgb::version();
  j["device"] = device;
  j["pass"] = backward ? "backward" : "forward";
  j["dtype"] = dtype;
  j["optimizer"] = optimizer;
  j["rows"] = rows;
  j["features"] = feature_names();
  j["target"] = "log2(prior seconds / measured seconds)";
  j["prior"] = {{"fixed_s", fixed_s},
                {"near_s_per_byte", near_s_per_byte},
                {"far_s_per_byte", far_s_per_byte},
                {"miss_s_per_byte", miss_s_per_byte},
                {"lookup_s", lookup_s},
                {"near_bytes", near_bytes},
                {"far_bytes", far_bytes}};
  j["cross_validation"] = cv_json(cv);
  j["domain"] = {{"lo", lo}, {"hi", hi}};
  j["booster"] = nlohmann::json::parse(booster);
  return j.dump();
}

EmbeddingFit EmbeddingFit::from_json(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    if (j.at("fitter").get<std::string>() != kEmbeddingFitterVersion)
      throw InputError(fmt::format("fitted by '{}', not this shardcost's {}; fit again",
                                   j.at("fitter").get<std::string>(), kEmbeddingFitterVersion));
    if (j.at("features").get<std::vector<std::string>>() != feature_names())
      throw InputError("its features differ from this shardcost's; fit again");
    EmbeddingFit f;
    f.device = j.at("device").get<std::string>();
    const std::string pass = j.at("pass").get<std::string>();
    if (pass != "forward" && pass != "backward") throw InputError("its pass is not known");
    f.backward = pass == "backward";
    f.dtype = j.at("dtype").get<std::string>();
    if (embedding_dtype_bytes(f.dtype) == 0) throw InputError("its weight type is not known");
    f.optimizer = j.at("optimizer").get<std::string>();
    f.rows = count_of(j.at("rows"));
    const auto& prior = j.at("prior");
    f.fixed_s = number_of(prior.at("fixed_s"));
    f.near_s_per_byte = number_of(prior.at("near_s_per_byte"));
    f.far_s_per_byte = number_of(prior.at("far_s_per_byte"));
    f.miss_s_per_byte = number_of(prior.at("miss_s_per_byte"));
    f.lookup_s = number_of(prior.at("lookup_s"));
    f.near_bytes = number_of(prior.at("near_bytes"));
    f.far_bytes = number_of(prior.at("far_bytes"));
    if (f.fixed_s < 0 || f.near_s_per_byte < 0 || f.far_s_per_byte < 0 || f.miss_s_per_byte < 0 ||
        f.lookup_s < 0 || !(f.near_bytes > 0) || !(f.far_bytes > f.near_bytes))
      throw InputError("its prior has a negative constant; fit again");
    f.cv = cv_from(j.at("cross_validation"));
    for (int i = 0; i < 5; ++i) {
      f.lo[i] = number_of(j.at("domain").at("lo").at(i));
      f.hi[i] = number_of(j.at("domain").at("hi").at(i));
    }
    f.booster = j.at("booster").dump();
    f.trees = TreeEnsemble::from_xgboost_json(f.booster);
    if (f.trees->features() != feature_names().size())
      throw InputError("its trees read another number of features; fit again");
    return f;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("unreadable embedding model ({}); fit again", e.what()));
  }
}

}  // namespace shardcost::learned
