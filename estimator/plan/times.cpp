#include "times.h"

namespace shardcost {

const char* const kPartNames[kPartCount] = {
    "compute_forward", "compute_backward", "compute_recompute", "host_launch",
    "tp_comm",         "cp_comm",          "ep_comm",           "pp_p2p",
    "reshard",         "pipeline_bubble",  "dp_comm",           "optimizer"};

CostOrigin Cost::main_origin() const {
  size_t best = 0;
  for (size_t i = 1; i < kOriginCount; ++i)
    if (by[i] > by[best]) best = i;
  return by[best] > 0 ? static_cast<CostOrigin>(best) : CostOrigin::catalog;
}

Cost Times::part(int p) const {
  Cost c;
  for (int i = 0; i < kPartCount; ++i) {
    if (p != kPartCount && i != p) continue;
    c.seconds += s[i];
    if (tracking())
      for (size_t k = 0; k < kOriginCount; ++k) c.by[k] += by[i][k];
  }
  return c;
}

}  // namespace shardcost
