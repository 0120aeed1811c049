#include "daemon/busy_cpus.h"

#include <charconv>
#include <fstream>
#include <sstream>
#include <vector>

namespace corenoise {

std::map<unsigned, CpuTimes> parse_cpu_times(std::string_view text) {
  std::map<unsigned, CpuTimes> result;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("cpu") || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream fields(line.substr(3));
    unsigned cpu = 0;
    if (!(fields >> cpu)) continue;
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    std::vector<std::uint64_t> v;
    std::uint64_t value = 0;
    while (v.size() < 8 && fields >> value) v.push_back(value);
    if (v.size() < 8) continue;
    CpuTimes t;
    t.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    t.total = t.busy + v[3] + v[4];
    result[cpu] = t;
  }
  return result;
}

std::map<unsigned, CpuTimes> read_cpu_times(const std::string& proc_root) {
  std::ifstream file(proc_root + "/stat");
  if (!file) return {};
  std::stringstream text;
  text << file.rdbuf();
  return parse_cpu_times(text.str());
}

std::optional<double> busy_fraction(const std::map<unsigned, CpuTimes>& before,
                                    const std::map<unsigned, CpuTimes>& after, unsigned cpu) {
  const auto b = before.find(cpu);
  const auto a = after.find(cpu);
  if (b == before.end() || a == after.end()) return std::nullopt;
  if (a->second.total <= b->second.total || a->second.busy < b->second.busy) return std::nullopt;
  return static_cast<double>(a->second.busy - b->second.busy) /
         static_cast<double>(a->second.total - b->second.total);
}

}  // namespace corenoise
