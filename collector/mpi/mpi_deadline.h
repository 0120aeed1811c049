// Waiting for MPI with a deadline: the one mechanism by which corenoise
// completes its own nonblocking MPI operations, in the sweep's plugins
// (library_environment.cpp: no deadline, the command's watchdog ends a job
// that hangs) and in the in-job library (job/rank/job_reduction.cpp: the
// finalize timeout, past which an operation is abandoned with the job and
// the rank that did not come is named missing).
//
// A wait polls, sleeping between polls: MPICH's blocking waits busy-poll,
// and a rank with nothing to do must not take CPU time from a core being
// measured (the sweep) or from the program's own ranks (the job). A
// collective cannot be cancelled: one that timed out stays pending, and
// its buffers must outlive it (the callers keep them).
//
// Header-only, compiled against whichever family's <mpi.h> includes it
// (the plugins', and each family's in-job library: a header, so that
// neither links the other's code). Not thread-safe per request, as MPI.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace corenoise {

// A moment on the monotonic clock by which an MPI operation must be done,
// or none.
class MpiDeadline {
 public:
  using Clock = std::chrono::steady_clock;
  static MpiDeadline never() { return MpiDeadline(Clock::time_point::max()); }
  static MpiDeadline after(double seconds) {
    return MpiDeadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(seconds)));
  }
  // The later of two: a window that does not end before `other` does.
  MpiDeadline or_later(MpiDeadline other) const { return MpiDeadline(std::max(at_, other.at_)); }
  bool passed() const { return Clock::now() > at_; }

 private:
  explicit MpiDeadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

// How the calling thread spends the pause between two polls. Unset, it
// sleeps. The in-job library's live reduction (job/rank/live_reduction.h)
// runs the finalize's own code on a fiber while the program runs, and sets
// it there: a pause hands the thread back to the program, and the poll goes
// on at the program's next MPI call. It returns false to give the wait up,
// as a passed deadline does.
using PollPause = bool (*)(std::chrono::microseconds pause);
inline thread_local PollPause poll_pause = nullptr;

// Calls `ready()` until it returns true (then true), pausing `pause`
// between calls (poll_pause), or until `deadline` passes (then false).
template <typename Ready>
bool poll_until(MpiDeadline deadline, std::chrono::microseconds pause, Ready&& ready) {
  for (;;) {
    if (ready()) return true;
    if (deadline.passed()) return false;
    if (poll_pause == nullptr)
      std::this_thread::sleep_for(pause);
    else if (!poll_pause(pause))
      return false;
  }
}

enum class MpiCompletion { complete, failed, timed_out };

// Polls `request` with `test(request, &done)` until it completes, fails
// (the test returned an error: on a communicator that returns errors, a
// peer's process is gone; its code in `*code` where given) or `deadline`
// passes. `test` calls MPI_Test, or PMPI_Test in a library that wraps
// MPI_Test and must not see its own polls: a call, not a pointer to the
// function, because a library bound to its MPI only at run time (-z lazy:
// the MPICH family's plugin and in-job library) cannot take an MPI
// function's address at load time.
template <typename Test>
MpiCompletion complete_by(MPI_Request& request, MpiDeadline deadline,
                          std::chrono::microseconds pause, Test&& test, int* code = nullptr) {
  int result = MPI_SUCCESS;
  const bool finished = poll_until(deadline, pause, [&] {
    int done = 0;
    result = test(request, done);
    return result != MPI_SUCCESS || done != 0;
  });
  if (code != nullptr) *code = result;
  if (result != MPI_SUCCESS) return MpiCompletion::failed;
  return finished ? MpiCompletion::complete : MpiCompletion::timed_out;
}

}  // namespace corenoise
