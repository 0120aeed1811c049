// The terminal view of a NodeReport: one row per PU, the causes of every
// unhealthy core below, and one summary line.
#pragma once

#include <ostream>
#include <string>

#include "probe/report.h"

namespace corenoise {

// Rows for every PU except those skipped only because they were not
// selected (on a 240-PU node, `--cpus 3` should print one row, not 240).
void print_table(std::ostream& out, const NodeReport& report);
// "2 CPUs probed (isolated; f64 n=128 reps=32 avx512): 1 ok, 1 noisy; worst: ..."
std::string summary_line(const NodeReport& report);

}  // namespace corenoise
