#include "collector/report/cause_advice.h"

namespace corenoise {

// One sentence each, from docs/guide.md's "Causes and fixes", so that the
// banner a user reads at the end of a job says what to change.
std::string_view cause_advice(JobCause cause) {
  switch (cause) {
    case JobCause::own_threads:
      // XLA sizes its CPU pools from PJRT_NPROC (else NPROC, else the CPUs
      // the process may use: DefaultThreadPoolSize in xla/pjrt/utils.cc),
      // and XLA_FLAGS is parsed only up to its first word that does not
      // begin with '-' (ParseArgvFromString, xla/parse_flags_from_env.cc),
      // so a word like intra_op_parallelism_threads=1 is dropped, with
      // every flag after it.
      return "one thread per rank on a bound core: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "
             "MKL_NUM_THREADS=1, for JAX/XLA on CPU PJRT_NPROC=1 (XLA_FLAGS takes only "
             "--flags: a word without '-' ends it); or bind each rank to as many cores as it "
             "runs threads";
    case JobCause::other_processes:
      return "keep other work off the job's cores: give the OS a core (Slurm CoreSpecCount, "
             "CpuSpecList) and leave it out of the binding";
    case JobCause::interrupts:
      return "steer device interrupts away from the job's cores (/proc/irq/N/smp_affinity_list, "
             "IRQBALANCE_BANNED_CPULIST); for timer ticks, nohz_full on the job's cores";
    case JobCause::steal:
      return "the hypervisor ran another guest on this vCPU: dedicated hosts or pinned vCPUs; "
             "nothing inside the guest removes it";
    case JobCause::page_faults:
      return "touch memory before the timed steps (allocate and fill once, reuse buffers), "
             "or use huge pages (THP, MALLOC_HUGE_PAGES)";
    case JobCause::slower_clock:
      return "the same power settings on every node (BIOS profile, RAPL limits, cpupower "
             "frequency-set -g performance); check cooling; run corenoise sweep to see the clocks";
    case JobCause::more_work:
      return "this rank ran longer at the same clock: more work (the decomposition's imbalance) "
             "or slower memory (contention, remote NUMA memory); rebalance or check the binding";
  }
  return "";
}

std::string_view cause_words(JobCause cause) {
  switch (cause) {
    case JobCause::own_threads:
      return "waited for its CPU behind its own threads";
    case JobCause::other_processes:
      return "waited for its CPU behind other processes";
    case JobCause::interrupts:
      return "its CPU served interrupts";
    case JobCause::steal:
      return "the hypervisor took its vCPU (steal)";
    case JobCause::page_faults:
      return "faulted pages in";
    case JobCause::slower_clock:
      return "ran at a slower clock";
    case JobCause::more_work:
      return "did more work at the same clock";
  }
  return "";
}

}  // namespace corenoise
