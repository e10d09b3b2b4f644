#pragma once
// Where a benchmark loop asks whether to stop (Ctrl-C): before each measurement, never while
// timing. profiler.h's request_stop() sets the flag.
#include "shardcost/profiler.h"

namespace shardcost::bench {

// True when a stop was requested: c.interrupted is set, and the caller returns what it has.
// across_mpi_ranks: every rank of the MPI world asks at the same point and they agree (one
// small all-reduce), so no rank waits in a collective the others have left.
bool stop_before_next(Completion& c, bool across_mpi_ranks);
// Forgets a request (tests, which run several benchmarks in one process).
void clear_stop_request();

}  // namespace shardcost::bench
