// The other processes that ran on a node's CPUs during a job, named by
// their command: every task's CPU time (schedstat) and last CPU, scanned
// from /proc by one rank per node at MPI_Init and again at MPI_Finalize.
// Two scans and no sampling in between, because a scan of a busy node's
// thousands of tasks costs milliseconds: it runs before the first step and
// after the last. A task's time is put on the CPU it last ran on, which is
// exact for the pinned kind that hurts a bound rank (a stress test, a
// per-CPU kworker) and an estimate for a task that wanders.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace corenoise {

struct TaskTime {
  long pid = 0;
  long tid = 0;
  std::string command;  // the process's comm
  std::uint64_t run_ns = 0;
  int cpu = -1;
};

// Every task of every process under `proc_root` (kernel threads included).
std::vector<TaskTime> scan_tasks(const std::string& proc_root);

// What ran on one CPU between two scans, by process, most first.
struct CpuCulprit {
  int cpu = -1;
  long pid = 0;
  std::string command;
  double seconds = 0;
};

// The CPU time between `before` and `after` of every process but
// `excluded_pids` (the job's own ranks), put on each task's last CPU, the
// `per_cpu` busiest processes of each CPU with at least `min_seconds`.
// A task new in `after` counts its whole run time.
std::vector<CpuCulprit> culprits_between(std::span<const TaskTime> before,
                                         std::span<const TaskTime> after,
                                         std::span<const long> excluded_pids, int per_cpu,
                                         double min_seconds);

}  // namespace corenoise
