#pragma once
// Device placement as an integer program (Tarnawski et al., NeurIPS'20, Sec. 5's formulation
// for pipelines), for graphs with more ideals than the dynamic program takes: each operator on
// one of p stages, every edge going to the same or a later stage (so the stages are
// differences of nested ideals, as the program over ideals places them), each stage on a
// device of some group, the slowest stage minimised; one program per stage count p.
#include <string>
#include <utility>
#include <vector>

#include "devplace/stage_costs.h"

namespace shardcost {

// A placement: each stage's operators and the group of the device it runs on, in order.
using Stages = std::vector<std::pair<OpSet, size_t>>;

struct ProgramPlacement {
  bool found = false;
  bool optimal = false;  // every stage count solved to optimality or bounded out
  std::string why;       // nothing found: why
  double step_s = 0, stage_s = 0;
  int micro_batches = 0;
  Stages stages;
  int programs = 0;  // integer programs solved
};

// time_limit_s: for all stage counts together. `incumbent_step_s` (0: none): a placement known
// already, which stage counts that cannot beat it skip. starts[p] (where given and not empty):
// a placement into p stages known to fit, branch and cut's first incumbent for that count.
ProgramPlacement place_by_program(const StageCosts&, const Cluster&, int micro_batches,
                                  double time_limit_s, double incumbent_step_s = 0,
                                  const std::vector<Stages>* starts = nullptr);

}  // namespace shardcost
