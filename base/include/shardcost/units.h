#pragma once
// Units shared by every part of shardcost: quantities are kept in base units (seconds,
// bytes, FLOPs, bytes per second); these convert at the edges.
#include <cmath>

namespace shardcost::units {

inline constexpr double kGB = 1e9;                        // decimal gigabyte (bandwidths)
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;  // binary gibibyte (memory)
inline constexpr double kTera = 1e12;                     // TFLOP/s -> FLOP/s
inline constexpr double kMicro = 1e-6;                    // microseconds -> seconds
inline constexpr double kNano = 1e-9;                     // nanoseconds -> seconds

}  // namespace shardcost::units

namespace shardcost {

// Rounds to 6 significant digits so that JSON output is stable and readable.
inline double round6(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, 5 - static_cast<int>(std::floor(std::log10(std::abs(v)))));
  return std::round(v * scale) / scale;
}

}  // namespace shardcost
