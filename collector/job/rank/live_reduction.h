// The job's figures reduced while it runs (docs/job.md, "Live"): every
// --live-interval seconds an epoch runs the finalize's own reduction
// (job_reduction.h) over the ranks' figures as they stand, and rank 0
// publishes the report so far. The job never waits for its MPI operations
// (the epoch's own work on a rank, its record and on rank 0 the report,
// does delay that rank's next call, which the others may wait for: see
// "Its cost" below):
//
// - It runs on a fiber of the recording thread, never a thread of its own
//   (the program may have asked MPI for no threads). Its waits for MPI
//   (poll_until's pauses, mpi_deadline.h) hand the thread back to the
//   program, and the fiber goes on at a later recorded call's exit
//   (JobSession::run_between_calls), so its MPI operations progress inside
//   the program's own calls. A rank that stops calling MPI delays only the
//   epoch, never the others' steps.
// - Its operations are nonblocking, on communicators of its own (duplicates
//   of the library's), so that they match neither the program's nor the
//   final reduction's.
// - An epoch starts when rank 0's broadcast of its number reaches a rank;
//   each rank freezes its figures then (frozen_session.h), and the steps
//   every rank had finished are compared. A barrier ends it: no rank's next
//   epoch can send into one still taking this one's messages.
// - At MPI_Finalize rank 0 broadcasts a stop instead of a number, and every
//   rank runs its fiber to the end, an epoch under way included, by the
//   finalize's deadline; what is left pending then is abandoned with its
//   buffers, as the final reduction's are (finalize_state.h).
//
// Its cost: a fiber switch and a test of a request or two every
// kEpochPoll while an epoch runs, one every kStartPoll while a rank waits
// for the next, and the reduction's own work (on rank 0, its judging of the
// ranks over the job, 0.03 s at 3,840 ranks in job_reduction_sim, and
// once more over the epoch's window) per epoch.
//
// Compiled per family; one per process, the recording thread's.
#pragma once

#include <mpi.h>
#include <ucontext.h>

#include <chrono>

#include "collector/job/rank/finalize_state.h"
#include "collector/job/rank/job_mpi.h"
#include "collector/job/rank/job_reduction.h"
#include "collector/mpi/mpi_deadline.h"

namespace corenoise {

class LiveReduction {
 public:
  // Collective over the job (the communicators' duplication): every rank
  // makes one at MPI_Init, or none does.
  LiveReduction(JobProcess& process, double interval_seconds);
  LiveReduction(const LiveReduction&) = delete;
  LiveReduction& operator=(const LiveReduction&) = delete;

  // Installs it on the process's session (JobSession::run_between_calls).
  void attach();
  // At MPI_Finalize, before the final reduction: rank 0 says stop, and
  // every rank runs its fiber to its end or `deadline`. True when nothing
  // of the live reduction is left pending: its communicators are freed.
  bool stop(MpiDeadline deadline);

  static constexpr double kEpochPoll = 0.005;  // s between polls in an epoch
  static constexpr double kStartPoll = 0.05;   // s between polls for the next epoch's start

 private:
  static double resume_between_calls(void* self, double now);
  static bool pause_on_fiber(std::chrono::microseconds);
  static void fiber_entry();
  void resume();
  void run();
  void run_epoch(long epoch);
  bool broadcast_start(long& word);
  // Rank 0: the report so far, to --live's file.
  void publish(long epoch, JobReduced& reduced) const;

  JobProcess& process_;
  double interval_;
  MPI_Comm comm_ = MPI_COMM_NULL, node_ = MPI_COMM_NULL;
  ucontext_t fiber_{}, caller_{};
  char* stack_ = nullptr;  // kStackBytes, its lowest page a guard
  bool started_ = false, finished_ = false;
  bool stopping_ = false;   // rank 0: MPI_Finalize came
  bool give_up_ = false;    // the finalize's deadline passed: every wait ends
  bool in_epoch_ = false;   // polls at kEpochPoll, else kStartPoll
  bool settled_ = true;     // no operation left pending
  double due_ = 0;          // rank 0: when the next epoch starts
  double next_resume_ = 0;  // when the fiber wants the thread next
  long start_word_ = 0;     // the start broadcast's buffer, MPI's while pending
  long epochs_ = 0;         // rank 0: the epochs started
  LiveBaseline baseline_;   // the last reduced epoch's measures (live_window.h)
};

}  // namespace corenoise
