#pragma once
// Learned size curves: collectives (per op and fabric level, a curve per rank count) and
// memory operations (per kind), bytes -> seconds. docs/learned-models.md has the choice and
// its figures.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "records.h"
#include "shardcost/hardware.h"

namespace shardcost::learned {

// A monotone piecewise alpha-beta curve: the measured means made non-decreasing in bytes
// (pool-adjacent-violators), time linear in bytes between knots (latency plus bytes over a
// bandwidth, per stretch), and beyond the knots the end stretches' lines, never faster than
// the first knot's throughput below it.
struct SizeCurve {
  std::vector<double> bytes, seconds;  // ascending bytes, non-decreasing seconds
  // points: (bytes, seconds), any order; one mean per size.
  static SizeCurve fit(std::vector<std::pair<double, double>> points);
  // The mean time per size, ascending in bytes (what fit makes monotone).
  static std::vector<std::pair<double, double>> means(
      std::vector<std::pair<double, double>> points);
  double at(double bytes) const;  // needs two knots or more
  bool covers(double b) const { return !bytes.empty() && b >= bytes.front() && b <= bytes.back(); }
};

// Sizes a curve needs (fewer: no curve; fit says so).
inline constexpr size_t kMinCurveSizes = 4;
inline constexpr const char* kCurveFitterVersion = "curve-ab-1";

// Seconds and whether the answer lies inside what the model was validated on.
struct CurveAnswer {
  double seconds = 0;
  bool inside = false;
};

struct CollectiveFit {
  std::string device;  // catalog device
  CollectiveOp op = CollectiveOp::all_reduce;
  FabricLevel level = FabricLevel::intra_node;
  // Curves carry across rank counts (time linear in the rank count, per size) only where
  // every set of ranks sees the same links: a network, or an NVSwitch node.
  bool uniform = false;
  // Between nodes: the ranks each node held in every measurement (a model per layout: a
  // group of 16 over 2 nodes drives 8 NICs a node, one over 16 nodes one). 0: not known (a
  // model fitted before it was recorded), which prices no group across nodes.
  int per_node = 0;
  std::vector<std::pair<int, SizeCurve>> curves;  // ascending rank counts
  size_t rows = 0;
  std::vector<CrossValidation> cv;
  std::vector<std::string> dropped;  // curves with too few sizes, said once by fit
  // nullopt: the model cannot say (an unmeasured rank count on a non-uniform fabric).
  std::optional<CurveAnswer> predict(double bytes, int ranks) const;
  // What predict(bytes, ranks) rests on, in a sentence, and the start of the name of the cv
  // split that measured that kind of answer (empty: none did).
  struct Basis {
    std::string how, split;
  };
  std::optional<Basis> basis(double bytes, int ranks) const;
  std::string to_json() const;
  static CollectiveFit from_json(const std::string&);  // throws InputError on a bad record
};

// by_ranks: rank count -> (bytes, seconds) points. Throws InputError when no rank count has
// kMinCurveSizes sizes.
CollectiveFit fit_collective(
    const Device&, CollectiveOp, FabricLevel,
    const std::vector<std::pair<int, std::vector<std::pair<double, double>>>>& by_ranks);

struct MemoryFit {
  std::string device;  // catalog device, or the stored name
  std::string kind;    // copy_d2d, read, ... as bench memory names them
  SizeCurve curve;
  size_t rows = 0;
  std::vector<CrossValidation> cv;
  CurveAnswer predict(double bytes) const;
  std::string to_json() const;
  static MemoryFit from_json(const std::string&);
};

// device: the catalog device, or the store's name for one the catalog lacks (a host CPU): a
// memory curve needs no specs.
MemoryFit fit_memory(const std::string& device, const std::string& kind,
                     const std::vector<std::pair<double, double>>& points);

}  // namespace shardcost::learned
