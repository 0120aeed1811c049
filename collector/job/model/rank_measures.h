// What one rank measured over the job, as a flat record of doubles: the
// measures of the record each rank sends rank 0 at MPI_Finalize, and what a
// spill file holds as is. Times are seconds; the OS-level figures cover the
// whole job, waits included. What makes a rank late is what it did, or
// what kept it off its CPU, between its waits: off-CPU time inside a wait
// (an MPI library that yields or sleeps, an oversubscribed node) is not
// lateness.
#pragma once

#include <array>
#include <cstddef>

namespace corenoise {

struct RankMeasures {
  double elapsed_seconds = 0;      // MPI_Init's return to MPI_Finalize
  double compute_seconds = 0;      // wall time between blocking MPI calls
  double compute_cpu_seconds = 0;  // the main thread's CPU time then
  double wait_seconds = 0;         // wall time inside blocking MPI calls
  double wait_cpu_seconds = 0;     // the main thread's CPU time in them
  // Kept off its CPU while computing: off_cpu() of the fields above, kept
  // as a figure of its own so that the reference rank's (attribution.h) is
  // one rank's, not a difference of medians of different ranks.
  double off_cpu_seconds = 0;
  double calls = 0;
  double steps = 0;             // blocking collectives over the whole job
  double overhead_seconds = 0;  // the library's own sampling
  double samples = 0;
  double own_threads_seconds = 0;      // CPU time of its other threads on its CPUs
  double other_processes_seconds = 0;  // its CPUs busy with other processes' tasks
  double interrupt_seconds = 0;        // its CPUs in irq and softirq
  double steal_seconds = 0;            // its vCPUs stolen by the hypervisor
  double run_queue_seconds = 0;        // the main thread runnable but not running
  double minor_faults = 0;
  double major_faults = 0;
  double involuntary_switches = 0;
  double fault_seconds = 0;  // minor faults × the measured cost of one
  double clock_hz = 0;       // median effective clock of the main thread
  // The others' waiting its lateness caused: at steps (step_math.h) and,
  // of that, in point-to-point exchanges (peer_waits.h).
  double wait_caused_seconds = 0;
  double exchange_wait_seconds = 0;  // of wait_seconds, in point-to-point calls
  double exchange_wait_caused_seconds =
      0;  // of wait_caused_seconds, the others' exchange waits for it
  double exchange_uncharged_seconds = 0;  // its exchange waits whose peer is not known
};

inline constexpr std::size_t kRankMeasureCount = sizeof(RankMeasures) / sizeof(double);
static_assert(sizeof(RankMeasures) == kRankMeasureCount * sizeof(double));

// Time kept off its CPU while computing (between blocking calls).
inline double off_cpu(const RankMeasures& m) { return m.compute_seconds - m.compute_cpu_seconds; }

inline const double* as_array(const RankMeasures& m) { return &m.elapsed_seconds; }
inline double* as_array(RankMeasures& m) { return &m.elapsed_seconds; }

}  // namespace corenoise
