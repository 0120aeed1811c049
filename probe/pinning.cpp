#include "probe/pinning.h"

#include <sched.h>

#include <cerrno>
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
    throw std::system_error(errno, std::generic_category(),
                            "cannot pin to CPU " + std::to_string(cpu));
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

}  // namespace corenoise
