// `corenoise sweep`: a synchronized probe of a whole allocation, run as an
// MPI job with one rank per node (docs/sweep.md).
#pragma once

#include <string>
#include <vector>

namespace corenoise {

// Initializes MPI itself (a singleton without mpiexec). Exit codes (rtla's
// scheme), the same on every leader rank: 0 every core and node healthy,
// 1 error or bad input, 2 unhealthy cores or outlier nodes found.
int run_sweep_command(const std::vector<std::string>& args);

}  // namespace corenoise
