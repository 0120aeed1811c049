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

struct ProcessOffCpus::Saved {
  pid_t tid;
  cpu_set_t affinity;
};

ProcessOffCpus::ProcessOffCpus(const std::vector<unsigned>& measured) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    Saved saved{static_cast<pid_t>(std::atoi(entry.path().filename().c_str())), {}};
    if (saved.tid > 0 &&
        sched_getaffinity(saved.tid, sizeof saved.affinity, &saved.affinity) == 0) {
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
    // Nowhere else to go: the thread keeps its affinity (it only sleeps).
    // A thread that exited meanwhile just fails.
    sched_setaffinity(s.tid, sizeof reduced, CPU_COUNT(&reduced) > 0 ? &reduced : &s.affinity);
  }
}

ProcessOffCpus::~ProcessOffCpus() {
  for (const auto& s : saved_) sched_setaffinity(s.tid, sizeof s.affinity, &s.affinity);
}

}  // namespace corenoise
