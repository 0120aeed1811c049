// Per-CPU kernel counters that attribute a detour: interrupts
// (/proc/interrupts), softirqs (/proc/softirqs) and steal time (/proc/stat).
// The /proc root is a constructor argument so tests can use fixture trees.
// A missing or unparsable file is "no data" (std::nullopt), never an error:
// containers and VMs hide some of these files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace corenoise {

struct CpuCounters {
  std::optional<std::uint64_t> interrupts;  // all hardware interrupt lines, this CPU's column
  std::optional<std::uint64_t> softirqs;    // all softirq kinds, this CPU's column
  std::optional<double> steal_seconds;      // /proc/stat cpuN steal, in seconds
  // Time the *calling thread* spent runnable but waiting for a CPU
  // (/proc/thread-self/schedstat, second field): exactly the time other
  // threads took from a pinned probe.
  std::optional<double> run_queue_wait_seconds;
};

// Pure parsers, exposed for tests and fuzzing.
// Sum of the column for `cpu` over every row of /proc/interrupts or
// /proc/softirqs (both have a "CPU0 CPU1 ..." header naming the columns,
// which skips offline CPUs). Rows with fewer columns (ERR:, MIS:) are skipped.
std::optional<std::uint64_t> sum_cpu_column(std::string_view text, unsigned cpu);
// Field `steal` (the 8th value) of the "cpuN" line of /proc/stat, in clock ticks.
std::optional<std::uint64_t> steal_ticks(std::string_view stat_text, unsigned cpu);

// The run-queue wait (second field, ns) of a /proc/.../schedstat line.
std::optional<std::uint64_t> run_queue_wait_ns(std::string_view schedstat_text);

class ProcCounterReader {
 public:
  explicit ProcCounterReader(std::string proc_root = "/proc");
  // Reads the four files; safe to call from several threads at once.
  CpuCounters read(unsigned cpu) const;
  const std::string& proc_root() const { return root_; }

 private:
  std::string root_;
};

}  // namespace corenoise
