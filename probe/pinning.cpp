#include "probe/pinning.h"

#include <sched.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace corenoise {

void pin_current_thread(unsigned cpu) {
  if (cpu >= CPU_SETSIZE) {
    throw std::system_error(EINVAL, std::generic_category(),
                            "cannot pin to CPU " + std::to_string(cpu));
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    // EINVAL is what the kernel says for both causes; name them, since the
    // message ends up as a skipped CPU's cause.
    const int error = errno;
    throw std::system_error(
        error, std::generic_category(),
        "cannot pin to CPU " + std::to_string(cpu) +
            (error == EINVAL ? " (offline, or outside the cgroup's cpuset)" : ""));
  }
}

std::vector<unsigned> current_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<unsigned> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

bool set_current_affinity(const std::vector<unsigned>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  bool any = false;
  for (unsigned cpu : cpus) {
    if (cpu < CPU_SETSIZE) {
      CPU_SET(cpu, &set);
      any = true;
    }
  }
  return any && sched_setaffinity(0, sizeof set, &set) == 0;
}

bool set_process_affinity(const std::vector<unsigned>& cpus) {
  if (!set_current_affinity(cpus)) return false;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return true;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const auto tid = static_cast<pid_t>(std::atoi(entry.path().filename().c_str()));
    if (tid > 0) sched_setaffinity(tid, sizeof set, &set);  // one that exited just fails
  }
  return true;
}

struct ProcessOffCpus::Saved {
  pid_t tid;
  cpu_set_t affinity;  // what the thread had: the CPUs to move it among
  cpu_set_t restore;   // what to give back (see below)
};

namespace {

// What to hand a thread back after a round so that it keeps what it had.
// The kernel remembers the mask of a thread's last sched_setaffinity and
// applies it, intersected with the cgroup's cpuset, whenever that cpuset
// changes. Restoring the mask we read would make a cpuset's narrowing stick:
// once the cpuset grew again, the thread (and the threads it starts) would
// stay on the old CPUs, and the daemon would skip the returned CPUs as
// outside its affinity until restarted. So a thread whose mask is all its
// cpuset allows gets "every CPU" back, which the kernel cuts to the cpuset
// and widens with it; one narrowed further (taskset) gets its mask back.
cpu_set_t restore_mask(pid_t tid, const cpu_set_t& affinity) {
  cpu_set_t every;
  CPU_ZERO(&every);
  for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &every);
  cpu_set_t widened;
  if (sched_setaffinity(tid, sizeof every, &every) == 0 &&
      sched_getaffinity(tid, sizeof widened, &widened) == 0 && CPU_EQUAL(&widened, &affinity)) {
    return every;
  }
  sched_setaffinity(tid, sizeof affinity, &affinity);
  return affinity;
}

}  // namespace

ProcessOffCpus::ProcessOffCpus(const std::vector<unsigned>& measured) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    Saved saved{static_cast<pid_t>(std::atoi(entry.path().filename().c_str())), {}, {}};
    if (saved.tid > 0 &&
        sched_getaffinity(saved.tid, sizeof saved.affinity, &saved.affinity) == 0) {
      saved.restore = restore_mask(saved.tid, saved.affinity);
      saved_.push_back(saved);
    }
  }
  move_off(measured);
}

void ProcessOffCpus::move_off(const std::vector<unsigned>& measured) {
  for (const auto& s : saved_) {
    cpu_set_t reduced = s.affinity;
    for (unsigned cpu : measured) {
      if (cpu < CPU_SETSIZE) CPU_CLR(cpu, &reduced);
    }
    // Nowhere else to go, or nothing to leave: the thread keeps its
    // affinity (it only sleeps). A thread that exited meanwhile just fails.
    const bool reduce = CPU_COUNT(&reduced) > 0 && !CPU_EQUAL(&reduced, &s.affinity);
    sched_setaffinity(s.tid, sizeof reduced, reduce ? &reduced : &s.restore);
  }
}

ProcessOffCpus::~ProcessOffCpus() {
  for (const auto& s : saved_) sched_setaffinity(s.tid, sizeof s.restore, &s.restore);
}

}  // namespace corenoise
