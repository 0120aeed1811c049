#include "daemon/sys_counters.h"

#include <charconv>
#include <fstream>
#include <sstream>

namespace corenoise {
namespace {

std::optional<std::uint64_t> read_number(const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  std::stringstream text;
  text << file.rdbuf();
  return parse_sys_number(text.str());
}

}  // namespace

std::optional<std::uint64_t> parse_sys_number(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

CpuSysInfo read_sys_info(const std::string& sys_root, unsigned cpu) {
  const std::string dir = sys_root + "/devices/system/cpu/cpu" + std::to_string(cpu);
  CpuSysInfo info;
  info.core_throttle_count = read_number(dir + "/thermal_throttle/core_throttle_count");
  info.package_throttle_count = read_number(dir + "/thermal_throttle/package_throttle_count");
  if (const auto khz = read_number(dir + "/cpufreq/scaling_cur_freq")) info.cur_hertz = *khz * 1e3;
  if (const auto khz = read_number(dir + "/cpufreq/cpuinfo_max_freq")) info.max_hertz = *khz * 1e3;
  return info;
}

}  // namespace corenoise
