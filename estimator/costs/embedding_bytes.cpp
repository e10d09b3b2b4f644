#include "embedding_bytes.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

namespace shardcost::embedding_bytes {

double sectors(double bytes) {
  return std::ceil(bytes / 32) * 32;
}

namespace {

// Ranks 1..R in 96 log-spaced buckets: (rows in the bucket, its last rank, one row's weight
// r^-zipf at the bucket's geometric middle), and the weights' sum.
struct Buckets {
  std::vector<std::tuple<double, double, double>> b;
  double norm = 0;
};
Buckets buckets(double R, double zipf) {
  constexpr int kBuckets = 96;
  Buckets out;
  double lo = 1;
  for (int i = 0; i < kBuckets && lo <= R; ++i) {
    const double hi =
        std::min(R + 1, std::max(lo + 1, std::floor(std::pow(R + 1, (i + 1.0) / kBuckets))));
    const double n = hi - lo, mid = std::sqrt(lo * (hi - 1 > lo ? hi - 1 : lo));
    const double w = std::pow(mid, -zipf);
    out.b.emplace_back(n, hi - 1, w);
    out.norm += n * w;
    lo = hi;
  }
  return out;
}

}  // namespace

double unique_rows(double R, double zipf, double lookups, const AccessHistogram& h) {
  if (lookups <= 0 || R <= 0) return 0;
  if (!h.empty()) {
    double unique = 0;
    for (const auto& [rows, share] : h)
      if (rows > 0) unique += R * rows * -std::expm1(-lookups * share / (R * rows));
    return std::min(unique, R);
  }
  if (zipf <= 0) return R * -std::expm1(-lookups / R);
  // Each of a bucket's n rows drawn with probability p, seen at least once with probability
  // 1 - exp(-lookups p).
  const Buckets all = buckets(R, zipf);
  double unique = 0;
  for (const auto& [n, last, w] : all.b) unique += n * -std::expm1(-lookups * w / all.norm);
  return std::min(unique, R);
}

double top_mass(double R, double zipf, double k, const AccessHistogram& h) {
  if (R <= 0 || k <= 0) return 0;
  if (k >= R) return 1;
  if (!h.empty()) {
    double mass = 0, left = k;
    for (const auto& [rows, share] : h) {
      const double n = R * rows;
      if (n <= 0) continue;
      mass += share * std::min(1.0, left / n);
      left -= n;
      if (left <= 0) break;
    }
    return std::min(1.0, mass);
  }
  if (zipf <= 0) return k / R;
  const Buckets all = buckets(R, zipf);
  double mass = 0, first = 1;
  for (const auto& [n, last, w] : all.b) {
    if (last <= k) {
      mass += n * w;
    } else {
      mass += std::max(0.0, k - first + 1) * w;  // the part of the bucket within the top k
      break;
    }
    first = last + 1;
  }
  return std::min(1.0, mass / all.norm);
}

double state_bytes(std::string_view optimizer, double dim) {
  return optimizer == "rowwise_adagrad" ? 4.0 : optimizer == "adam" ? 2 * 4.0 * dim : 0.0;
}

double pass_bytes(const EmbeddingPass& p) {
  const double row = p.dim * p.dtype_bytes, lookups = p.batch * p.pooling;
  if (!p.backward) return lookups * sectors(row) + p.batch * row;
  const double unique = unique_rows(p.rows, p.zipf, lookups, p.histogram);
  return p.batch * row + lookups * sectors(p.dim * 4.0) +
         unique * (2 * sectors(row) + 2 * state_bytes(p.optimizer, p.dim));
}

}  // namespace shardcost::embedding_bytes
