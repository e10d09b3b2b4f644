#pragma once
// Regression checks: match the measurements of two runs (or two stores) by identity and judge
// each pair against its own noise. Records only; cli/ prints them.
//
// A pair is a regression only when both hold:
//  - the median time grew by more than the threshold (a change too small to matter), and
//  - the growth is significant against the spread: Mann-Whitney U on per-iteration samples
//    when both sides have them, else a z-test on the medians with the spread read from
//    p10/p90 and the iteration count. p-values are Holm-corrected over all tested pairs, so
//    the chance that pure noise fails a comparison of many rows stays at alpha.
// Rows without any spread (one iteration, no p10/p90) are judged by the threshold alone and
// say so. docs/compare-and-report.md explains the choices.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardcost/measures.h"
#include "shardcost/quantiles.h"

namespace shardcost::regress {

using db::Measure;

enum class Verdict { regressed, improved, unchanged };
std::string_view to_string(Verdict);

enum class Method {
  mann_whitney,  // per-iteration samples on both sides
  median_z,      // medians with spread from p10/p90 and iterations
  threshold,     // no spread recorded: the threshold alone
};
std::string_view to_string(Method);

struct CompareOptions {
  double threshold = 0.05;  // relative change of the median that matters
  double alpha = 0.01;      // family-wise false-alarm rate over all pairs
};

struct PairResult {
  Measure base, next;
  double change = 0;  // next median / base median - 1 (+: slower)
  Method method = Method::threshold;
  std::optional<double> p_value;     // raw two-sided p; nullopt with Method::threshold
  std::optional<double> p_adjusted;  // Holm-adjusted
  bool significant = false;          // against the noise (always true for Method::threshold)
  Verdict verdict = Verdict::unchanged;
};

struct Comparison {
  CompareOptions options;
  std::vector<PairResult> pairs;   // by table, then identity
  std::vector<Measure> only_base;  // no match in next
  std::vector<Measure> only_next;  // no match in base
  int64_t superseded = 0;          // older duplicates of an identity, replaced by the newest
  int64_t count(Verdict) const;
};

// Within each side the newest run's row of an identity wins (a store that accumulates runs
// is compared by its latest figures); older duplicates are counted in superseded.
Comparison compare(std::vector<Measure> base, std::vector<Measure> next, const CompareOptions&);

// ---- statistics, exposed for tests --------------------------------------------------------
namespace stats {
double normal_cdf(double z);
// Two-sided p of Mann-Whitney U with the normal approximation, tie and continuity corrected.
double mann_whitney_p(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
// Two-sided p of a z-test on two medians, each with a spread (p90 - p10) from n iterations:
// sigma = (p90 - p10) / 2.563 (normal), standard error of a median = 1.2533 sigma / sqrt(n).
// nullopt when neither side has any spread.
std::optional<double> median_z_p(double median_a, double spread_a, int64_t n_a, double median_b,
                                 double spread_b, int64_t n_b);
// Holm's step-down adjustment; same order as the input.
std::vector<double> holm(const std::vector<double>& p);
using shardcost::median;
using shardcost::percentile;
}  // namespace stats

}  // namespace shardcost::regress
