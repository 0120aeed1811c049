// Linux cpulist syntax ("0-3,8,10-11"), as in /sys/devices/system/cpu/online
// and taskset -c. Pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace corenoise {

// Sorted, de-duplicated CPU numbers. Throws std::invalid_argument with a
// message quoting the list and the offending part ("expected N or N-M")
// for empty items, non-numbers, reversed ranges or numbers above 65535.
std::vector<unsigned> parse_cpu_list(std::string_view text);
// Compact form: {0,1,2,3,8} -> "0-3,8".
std::string format_cpu_list(const std::vector<unsigned>& cpus);

}  // namespace corenoise
