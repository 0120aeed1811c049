// Parsers of the /proc text the in-job sampler re-reads (proc_sampler.h):
// a task's stat line and schedstat, /proc/stat's per-CPU lines, a status
// file's counter. Pure and allocation-free, exposed for tests and fuzzing.
// Anything garbled is "no data" (nullopt), never an error.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace corenoise {

// The fields of /proc/PID/task/TID/stat the sampler needs.
struct TaskStat {
  std::string_view comm;  // between the parentheses (a view into the text)
  std::uint64_t minor_faults = 0;
  std::uint64_t major_faults = 0;
  std::uint64_t user_ticks = 0;
  std::uint64_t system_ticks = 0;
  int processor = -1;  // the CPU it last ran on
};
// comm may itself hold ')' and blanks: it ends at the LAST ')'.
std::optional<TaskStat> parse_task_stat(std::string_view text);

// /proc/.../schedstat: time on the CPU, time runnable but waiting, in ns.
struct SchedStat {
  std::uint64_t run_ns = 0;
  std::uint64_t wait_ns = 0;
};
std::optional<SchedStat> parse_schedstat(std::string_view text);

// The ticks of a set of CPUs in /proc/stat, summed over the cpuN lines
// whose N is in `cpus`: busy (user, nice, system), irq + softirq, steal.
struct CpuTicks {
  std::uint64_t busy = 0;
  std::uint64_t interrupts = 0;
  std::uint64_t steal = 0;
  int cpus_found = 0;
};
CpuTicks parse_cpu_ticks(std::string_view stat_text, std::span<const unsigned> cpus);

// "name:\tvalue" of a /proc status file (nonvoluntary_ctxt_switches).
std::optional<std::uint64_t> parse_status_counter(std::string_view status_text,
                                                  std::string_view name);

}  // namespace corenoise
