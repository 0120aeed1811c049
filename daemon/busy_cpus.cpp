#include "daemon/busy_cpus.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "probe/proc_text.h"

namespace corenoise {
namespace {

using proc_text::next_line;
using proc_text::next_token;
using proc_text::to_number;

// a + b, or nullopt where it would wrap (and make busy exceed total).
std::optional<std::uint64_t> add(std::optional<std::uint64_t> a, std::uint64_t b) {
  if (!a || b > std::numeric_limits<std::uint64_t>::max() - *a) return std::nullopt;
  return *a + b;
}

}  // namespace

std::map<unsigned, CpuTimes> parse_cpu_times(std::string_view text) {
  std::map<unsigned, CpuTimes> result;
  while (!text.empty()) {
    std::string_view line = next_line(text);
    const std::string_view name = next_token(line);
    if (!name.starts_with("cpu")) continue;
    const auto cpu = to_number(name.substr(3));  // the "cpu" line (all CPUs) has none
    if (!cpu || *cpu > std::numeric_limits<unsigned>::max()) continue;
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    std::uint64_t v[8];
    bool whole = true;
    for (std::uint64_t& value : v) {
      const auto n = to_number(next_token(line));
      if (!n) {
        whole = false;
        break;
      }
      value = *n;
    }
    if (!whole) continue;
    std::optional<std::uint64_t> busy = v[0];
    for (int i : {1, 2, 5, 6, 7}) busy = add(busy, v[i]);
    const auto total = add(add(busy, v[3]), v[4]);
    if (!total) continue;
    result[static_cast<unsigned>(*cpu)] = CpuTimes{*busy, *total};
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
  // Idle and iowait ticks may go backwards (Documentation/filesystems/proc.rst:
  // "the iowait field in /proc/stat will decrease in certain conditions"),
  // so the busy ticks gained can exceed the total gained: a share, not more.
  return std::min(1.0, static_cast<double>(a->second.busy - b->second.busy) /
                           static_cast<double>(a->second.total - b->second.total));
}

}  // namespace corenoise
