#include "times.h"

namespace shardcost {

const char* const kPartNames[kPartCount] = {
    "compute_forward", "compute_backward", "compute_recompute", "tp_comm",    "cp_comm",
    "ep_comm",         "pp_p2p",           "pipeline_bubble",   "dp_comm",    "optimizer"};

CostOrigin weakest_origin(const Times& t) {
  int o = Times::kNone;
  for (int x : t.origin) o = std::min(o, x);
  return static_cast<CostOrigin>(o == Times::kNone ? 0 : o);
}

}  // namespace shardcost
