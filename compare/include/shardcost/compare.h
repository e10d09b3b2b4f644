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
// say so.
//
// Within-run spread does not see run-to-run noise (clocks, neighbours, placement), which on a
// shared machine is often larger than the threshold. compare sees it two ways:
//  - repeats (CompareOptions::repeats): every run of a side is a measurement of the same build;
//    each identity's run medians are compared with Student's t on their logarithms, so the
//    noise is what the runs themselves show;
//  - one run a side: the changes of the rows of one device scatter around their common shift;
//    that scatter (1.4826 MAD of the log changes) is the run-to-run noise the comparison can
//    see, and a row must also stand out of it (a z-test of its change beyond the common shift).
// A row that moved past the threshold but not past a noise that is itself wider than the
// threshold is inconclusive: the measurements cannot support a verdict at that threshold.
// docs/compare-and-report.md explains the choices.
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

enum class Verdict { regressed, improved, unchanged, inconclusive };
std::string_view to_string(Verdict);

enum class Method {
  mann_whitney,  // per-iteration samples on both sides
  median_z,      // medians with spread from p10/p90 and iterations
  threshold,     // no spread recorded: the threshold alone
  runs_t,        // repeats: Student's t on the log medians of each side's runs
};
std::string_view to_string(Method);

struct CompareOptions {
  double threshold = 0.05;  // relative change of the median that matters
  double alpha = 0.01;      // family-wise false-alarm rate over all pairs
  bool repeats = false;     // every run of a side measured the same build (else newest wins)
};

// The run-to-run noise compare saw among the rows of one device.
struct NoiseNote {
  std::string device;
  int64_t pairs = 0;
  double shift = 0;    // the rows' common change (median), relative
  double scatter = 0;  // relative noise of one row's change: 1.4826 MAD of log changes, or
                       // with repeats the median over rows of the runs' own deviation
  int64_t base_runs = 1, next_runs = 1;  // most runs of an identity on each side
  bool estimated = false;                // enough rows (or runs) to estimate it
};

// With repeats: a table's rows of one device moving together. Each run's mean log median over
// the table's rows is one value; the sides' runs are compared with Student's t (rows whose
// run-to-run noise is their own, such as one bimodal size, average out; a machine that runs
// slower in one run moves every row and stays in the runs' spread).
struct TableShift {
  std::string table, device;
  int64_t rows = 0, base_runs = 0, next_runs = 0;
  double change = 0;  // relative, the runs' means
  double p_value = 1;
  bool significant = false;  // at alpha over all tables (Bonferroni) and past the threshold
};

struct PairResult {
  Measure base, next;
  double change = 0;  // next median / base median - 1 (+: slower)
  Method method = Method::threshold;
  std::optional<double> p_value;     // raw two-sided p; nullopt with Method::threshold
  std::optional<double> p_adjusted;  // Holm-adjusted
  bool significant = false;          // against the noise (always true for Method::threshold)
  bool by_table = false;             // called with its table's shift (TableShift), not alone
  // The smallest change this pair's noise lets the comparison resolve at alpha (relative);
  // 0: unknown. Past the threshold, an insignificant change is inconclusive.
  double noise = 0;
  // One run a side, rows enough to see their common shift: the change beyond it (what a
  // regression must show past the threshold); else the change itself.
  double excess = 0;
  int64_t base_runs = 1, next_runs = 1;  // runs behind each side's median
  Verdict verdict = Verdict::unchanged;
};

struct Comparison {
  CompareOptions options;
  std::vector<PairResult> pairs;   // by table, then identity
  std::vector<Measure> only_base;  // no match in next
  std::vector<Measure> only_next;  // no match in base
  int64_t superseded = 0;          // older duplicates of an identity, replaced by the newest
  std::vector<NoiseNote> noise;    // by device
  std::vector<TableShift> tables;  // with repeats
  int64_t count(Verdict) const;
  // Inconclusive pairs on the slow side: what fails a gate besides regressions.
  int64_t inconclusive_slower() const;
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
// Two-sided p of Student's t with df degrees of freedom; the |t| with two-sided p = alpha.
double student_t_p(double t, double df);
double student_t_critical(double alpha, double df);
// 1.4826 x the median absolute deviation (a normal sigma, robust to a minority of outliers).
double robust_scatter(std::vector<double> x);
double median_of(std::vector<double> x);
using shardcost::median;
using shardcost::percentile;
}  // namespace stats

}  // namespace shardcost::regress
