// The in-job library's own MPI operations at MPI_Finalize, polled to a
// deadline (mpi_deadline.h) with PMPI_Test: the library must not see its
// own polls. Shared by the reduction (job_reduction.cpp) and the exchange
// of charges (sparse_charges.cpp). Compiled per family.
#pragma once

#include <mpi.h>

#include <chrono>

#include "collector/mpi/mpi_deadline.h"

namespace corenoise {

// Between two polls of the library's own operations: short, as the
// program's ranks are waiting in MPI_Finalize; a sleep, not a spin, as a
// rank may share its CPU with another.
inline constexpr std::chrono::microseconds kLibraryPollPause{200};

// Polls `request` until it completes or `deadline` passes. One left
// pending is abandoned with the job (a collective cannot be cancelled).
// One that failed (the library's communicators return errors: a peer's
// process is gone) is not complete either: its buffers hold nothing to use.
inline bool pmpi_complete(MPI_Request& request, MpiDeadline deadline) {
  const auto test = [](MPI_Request& r, int& done) {
    return PMPI_Test(&r, &done, MPI_STATUS_IGNORE);
  };
  return complete_by(request, deadline, kLibraryPollPause, test) == MpiCompletion::complete;
}

}  // namespace corenoise
