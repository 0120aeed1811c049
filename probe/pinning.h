// Pinning threads to CPUs. sched_setaffinity rather than hwloc binding
// because binding is a no-op on XML/synthetic topologies, and a probe must
// never silently run unpinned.
#pragma once

#include <sys/types.h>

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
// The same for every thread of the process (/proc/self/task), as a
// launcher's binding set it; true if the calling thread's succeeded.
bool set_process_affinity(const std::vector<unsigned>& cpus);

// While alive, keeps every thread of this process (the event loop, the
// exporter's HTTP threads, the caller) off `measured`: each thread's
// affinity loses those CPUs unless nothing would be left, in which case that
// thread keeps its affinity (it can only sleep there). Restores each
// thread's affinity on destruction. Threads started meanwhile inherit their
// creator's affinity; probe threads pin themselves afterwards.
class ProcessOffCpus {
 public:
  explicit ProcessOffCpus(const std::vector<unsigned>& measured);
  ~ProcessOffCpus();
  // Moves the same threads off `measured` instead (each from its original
  // affinity). Not thread-safe: one caller at a time.
  void move_off(const std::vector<unsigned>& measured);
  ProcessOffCpus(const ProcessOffCpus&) = delete;
  ProcessOffCpus& operator=(const ProcessOffCpus&) = delete;

 private:
  struct Saved;
  std::vector<Saved> saved_;
};

}  // namespace corenoise
