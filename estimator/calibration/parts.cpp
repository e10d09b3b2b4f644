#include "calibration/parts.h"

#include <set>

#include "shardcost/calibration.h"

namespace shardcost {

std::string calibration_part(const std::string& time_part, std::string_view precision) {
  // The bubble is compute the pipeline waits for: it runs at compute's pace.
  if (time_part.rfind("compute_", 0) == 0 || time_part == "pipeline_bubble")
    return "compute_" + std::string(precision);
  if (time_part == "reshard") return "pp_p2p";
  return time_part;
}

std::map<std::string, double> calibration_parts(const Estimate& e, std::string_view precision) {
  std::map<std::string, double> out;
  for (const TimePart& p : e.time)  // input_wait is the user's loader, not a priced part
    if (p.seconds > 0 && !p.given) out[calibration_part(p.name, precision)] += p.seconds;
  return out;
}

std::string calibration_devices(const Cluster& c) {
  std::set<std::string> names;
  for (const NodeGroup& g : c.groups) names.insert(g.device.name);
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : " + ") + n;
  return out;
}

double memory_part(const Estimate& e, std::string_view name) {
  for (const MemoryPart& p : e.memory)
    if (p.name == name) return p.bytes;
  return 0;
}

}  // namespace shardcost
