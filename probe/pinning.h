// Pinning threads to CPUs. sched_setaffinity rather than hwloc binding
// because binding is a no-op on XML/synthetic topologies, and a probe must
// never silently run unpinned.
#pragma once

#include <vector>

namespace corenoise {

// Pins the calling thread to `cpu`. Throws std::system_error naming the CPU
// if the kernel refuses (CPU offline or outside the allowed set).
void pin_current_thread(unsigned cpu);
// The calling thread's affinity, sorted.
std::vector<unsigned> current_affinity();
// Restricts the calling thread to `cpus`; returns false if the set is empty
// or the kernel refuses (the affinity is then unchanged).
bool set_current_affinity(const std::vector<unsigned>& cpus);

}  // namespace corenoise
