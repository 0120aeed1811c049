// Bare-metal facts from /sys that explain a slow core: thermal throttle
// event counters (Intel: thermal_throttle/{core,package}_throttle_count)
// and cpufreq (scaling_cur_freq, cpuinfo_max_freq, in kHz). VMs and
// containers have none of them: a missing file is "no data", never an error.
// The /sys root is a parameter so tests use fixture trees.
#pragma once

#include <string>
#include <string_view>

#include "daemon/snapshot.h"

namespace corenoise {

CpuSysInfo read_sys_info(const std::string& sys_root, unsigned cpu);
// A whole decimal number, as the one-value files in /sys hold (a trailing
// newline allowed); nullopt for anything else.
std::optional<std::uint64_t> parse_sys_number(std::string_view text);

}  // namespace corenoise
