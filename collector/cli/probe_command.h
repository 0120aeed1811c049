// `corenoise probe`: one round on this node, no mpiexec.
#pragma once

#include <string>
#include <vector>

namespace corenoise {

// Exit codes (rtla's scheme): 0 all healthy, 1 the tool failed or the input
// was bad, 2 it ran and found unhealthy cores.
int run_probe_command(const std::vector<std::string>& args);

}  // namespace corenoise
