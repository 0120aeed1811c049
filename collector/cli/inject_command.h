// `corenoise inject`: controlled interference on given CPUs for a given time
// (probe/noise_injection.h), for self-tests and demonstrations.
#pragma once

#include <string>
#include <vector>

#include "probe/noise_injection.h"

namespace corenoise {

// The plan that `args` ask for. Pure: the CPUs are checked against this
// process's affinity only when it runs. Throws UsageError naming the option.
InjectionPlan parse_inject_options(const std::vector<std::string>& args);

// Prints one "ready: …" line once every thread runs, then returns 0 after
// --seconds or on SIGTERM/SIGINT; 1 on bad input or if a thread cannot start.
int run_inject_command(const std::vector<std::string>& args);

}  // namespace corenoise
