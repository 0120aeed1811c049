// How busy each CPU was between two readings of /proc/stat, so that the
// daemon leaves a CPU alone while a job runs on it. Readings are taken at
// the end of a round and at the start of the next, so the daemon's own
// probes never count as "busy".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace corenoise {

struct CpuTimes {
  std::uint64_t busy = 0;   // user+nice+system+irq+softirq+steal ticks
  std::uint64_t total = 0;  // all of them plus idle and iowait
};

// The "cpuN" lines of /proc/stat; CPUs whose line is malformed (fewer than
// eight whole decimal numbers, or sums beyond 64 bits) are left out.
std::map<unsigned, CpuTimes> parse_cpu_times(std::string_view stat_text);
std::map<unsigned, CpuTimes> read_cpu_times(const std::string& proc_root);
// Busy share of `cpu` between two readings, within [0, 1]; nullopt if either
// lacks it, no time passed or its busy ticks went backwards.
std::optional<double> busy_fraction(const std::map<unsigned, CpuTimes>& before,
                                    const std::map<unsigned, CpuTimes>& after, unsigned cpu);

}  // namespace corenoise
