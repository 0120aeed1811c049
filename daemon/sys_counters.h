// Bare-metal facts from /sys that explain a slow core: thermal throttle
// event counters (Intel: thermal_throttle/{core,package}_throttle_count)
// and cpufreq (scaling_cur_freq, cpuinfo_max_freq, in kHz). VMs and
// containers have none of them: a missing file is "no data", never an error.
// The /sys root is a parameter so tests use fixture trees.
#pragma once

#include <string>
#include <string_view>

#include "daemon/snapshot.h"
#include "probe/sys_file.h"  // parse_sys_number

namespace corenoise {

CpuSysInfo read_sys_info(const std::string& sys_root, unsigned cpu);

}  // namespace corenoise
