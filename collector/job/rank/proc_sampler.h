// What the kernel says about one rank, re-read at the sampling cadence
// (job_session.h): its own threads (schedstat run and run-queue time, last
// CPU, names), its CPUs (busy, interrupt and steal ticks from /proc/stat),
// the process's page faults and the main thread's involuntary switches.
//
// The files stay open and are re-read with pread into buffers sized at
// start, and the thread list is re-read with getdents64 into a fixed
// buffer: a sample allocates nothing, so it cannot disturb the allocator of
// the program it measures. The /proc root is an argument for fixture trees.
//
// Not thread-safe: one sampler per rank, called from the MPI thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "collector/job/rank/proc_parse.h"

namespace corenoise {

// Deltas over one window (between two samples), in seconds and counts.
struct ProcWindow {
  double own_threads_seconds = 0;  // the process's OTHER threads, on the rank's CPUs
  double own_process_seconds = 0;  // all its threads (main included), on the rank's CPUs
  double cpu_busy_seconds = 0;     // user+nice+system of the rank's CPUs, from ticks
  double interrupt_seconds = 0;    // irq+softirq of the rank's CPUs
  double steal_seconds = 0;
  double main_run_queue_seconds = 0;  // the main thread runnable, not running
  std::uint64_t minor_faults = 0;     // the main thread's
  std::uint64_t major_faults = 0;
  std::uint64_t involuntary_switches = 0;  // the main thread
};

// One of the rank's threads, with its CPU time on the rank's CPUs so far.
struct OwnThread {
  int tid = 0;
  std::string name;
  double seconds_on_rank_cpus = 0;
};

class ProcSampler {
 public:
  static constexpr std::size_t kMaxThreads = 512;

  // `cpus`: the rank's CPUs (its affinity at MPI_Init); `main_tid`: the
  // thread that called MPI_Init. Opens the files and takes the baseline.
  ProcSampler(std::string proc_root, std::vector<unsigned> cpus, int main_tid);
  ~ProcSampler();
  ProcSampler(const ProcSampler&) = delete;
  ProcSampler& operator=(const ProcSampler&) = delete;

  // Re-reads everything; returns the deltas since the last call (or the
  // constructor).
  ProcWindow sample();
  // The threads seen, busiest on the rank's CPUs first (the main thread
  // excluded); allocates, so for MPI_Finalize only.
  std::vector<OwnThread> threads() const;
  // Whether /proc/stat had the rank's CPUs (a container may hide it).
  bool has_cpu_ticks() const { return cpu_ticks_known_; }
  // The most of the process's threads (the main one included) that were
  // busy in one window: each ran for at least kBusyShare of it. Idle
  // helpers (an MPI library's progress threads, a runtime's sleeping
  // pools) wake briefly and do not count.
  static constexpr double kBusyShare = 0.25;
  int peak_busy_threads() const { return peak_busy_threads_; }

 private:
  struct Task {
    int tid = 0;  // 0: free slot
    int stat_fd = -1;
    int schedstat_fd = -1;
    bool seen = false;  // found in the latest listing
    SchedStat last{};
    double seconds_on_rank_cpus = 0;
    std::array<char, 16> comm{};
  };
  void list_tasks();
  // sample()'s steps: the window's length (0 at the first), one task's
  // times and faults (counting it in `busy` when it was), the CPUs' ticks
  // and the main thread's involuntary switches.
  double seconds_since_last_sample();
  void sample_task(Task& task, double window_seconds, ProcWindow& window, int& busy);
  void sample_cpus(ProcWindow& window);
  void sample_switches(ProcWindow& window);
  void open_task(Task& task, int tid);
  void close_task(Task& task);
  bool on_rank_cpu(int processor) const;

  std::string proc_root_;
  std::vector<unsigned> cpus_;
  int main_tid_;
  double ticks_per_second_;
  int task_dir_fd_ = -1;
  int proc_stat_fd_ = -1;
  int main_status_fd_ = -1;
  std::vector<char> buffer_;        // for /proc/stat and status files
  std::array<char, 4096> small_{};  // for stat and schedstat lines
  std::array<char, 8192> dents_{};  // getdents64
  std::vector<Task> tasks_;
  std::size_t max_threads_ = kMaxThreads;  // from RLIMIT_NOFILE
  std::size_t open_tasks_ = 0;
  // Threads that exited, kept for threads() (reserved: no allocation).
  std::vector<Task> departed_;
  CpuTicks last_ticks_{};
  bool cpu_ticks_known_ = false;
  std::uint64_t last_minor_ = 0, last_major_ = 0, last_switches_ = 0;
  std::uint64_t last_sample_ns_ = 0;  // CLOCK_MONOTONIC; 0 before the baseline
  int peak_busy_threads_ = 0;
};

}  // namespace corenoise
