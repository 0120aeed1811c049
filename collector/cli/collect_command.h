// `corenoise collect`: reduce the latest results of every node's corenoised
// across nodes over MPI and publish the cluster reference back to each daemon.
#pragma once

#include <string>
#include <vector>

namespace corenoise {

int run_collect_command(const std::vector<std::string>& args);

}  // namespace corenoise
