#include "daemon/sys_counters.h"

#include "probe/sys_file.h"

namespace corenoise {

CpuSysInfo read_sys_info(const std::string& sys_root, unsigned cpu) {
  const std::string dir = sys_root + "/devices/system/cpu/cpu" + std::to_string(cpu);
  CpuSysInfo info;
  info.core_throttle_count = read_sys_number(dir + "/thermal_throttle/core_throttle_count");
  info.package_throttle_count = read_sys_number(dir + "/thermal_throttle/package_throttle_count");
  if (const auto khz = read_sys_number(dir + "/cpufreq/scaling_cur_freq"))
    info.cur_hertz = *khz * 1e3;
  if (const auto khz = read_sys_number(dir + "/cpufreq/cpuinfo_max_freq"))
    info.max_hertz = *khz * 1e3;
  return info;
}

}  // namespace corenoise
