#pragma once
// The parts of an estimate a step calibration scales: compute by the run's precision, exposed
// communication by axis, the pipeline's sends and bubble, the optimizer.
#include <map>
#include <string>
#include <string_view>

#include "shardcost/estimator.h"

namespace shardcost {

// The calibration part a time part belongs to.
std::string calibration_part(const std::string& time_part, std::string_view precision);
// Seconds per calibration part (zero parts left out): compute_<precision> (forward, backward,
// recomputation and the pipeline bubble, the compute the pipeline waits for), tp_comm,
// cp_comm, ep_comm, pp_p2p (with resharding), dp_comm, optimizer, host_launch.
std::map<std::string, double> calibration_parts(const Estimate&, std::string_view precision);
// The bytes of one named memory part (weights, ..., buffers: the allowance); 0 when absent.
double memory_part(const Estimate&, std::string_view name);

}  // namespace shardcost
