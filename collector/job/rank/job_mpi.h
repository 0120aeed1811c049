// The MPI side of the in-job library, compiled once per family with that
// family's <mpi.h> (like collector/mpi/'s plugins): the process-wide state
// the wrappers share, and the reduction at MPI_Finalize.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "collector/job/rank/comm_ranks.h"
#include "collector/job/rank/interrupt_lines.h"
#include "collector/job/rank/job_session.h"
#include "collector/job/rank/node_tasks.h"
#include "collector/mpi/mpi_deadline.h"

namespace corenoise {

struct FinalizeBuffers;  // finalize_state.h
class LiveReduction;     // live_reduction.h

struct JobProcess {
  JobSession* session = nullptr;  // null: not recording
  // The session once recording stopped (MPI_Finalize, a fork's child): never
  // deleted, as a thread of the program may still be inside a wrapper that
  // read `session`; held here so that it stays reachable, not a leak.
  JobSession* retired = nullptr;
  // Buffers of MPI_Finalize's operations that did not all complete, which
  // MPI may still write (job_reduction.cpp); kept, never freed.
  FinalizeBuffers* kept = nullptr;
  // The reduction while the job runs; null where --live-interval is 0.
  // Never deleted (its buffers may be MPI's).
  LiveReduction* live = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;  // a duplicate of MPI_COMM_WORLD, for the library's own traffic
  MPI_Comm node = MPI_COMM_NULL;  // the ranks of this node
  int rank = 0, size = 1;
  int node_rank = 0;
  std::vector<TaskTime> tasks_at_start;  // the node's tasks, on its reporting rank
  InterruptTables interrupts_at_start;   // its interrupt counts (interrupt_lines.h), the same
  CommRanks comms;                       // the program's communicators, the recording thread's
  std::string mpi_library;               // the object defining PMPI_Init (program_mpi.h)
  std::string mpi_library_version;       // MPI_Get_library_version's first line
};

// Called by MPI_Finalize's wrapper before PMPI_Finalize: gathers, reports,
// and never waits longer than the session's finalize timeout for a rank
// that does not come. PMPI_Finalize follows whatever it found. Skipping it
// when a rank was missing changed the job's end: under Open MPI a rank that
// exits without it makes mpirun abort the job, killing a rank that was only
// late (rank 0 still writing its output); MPICH's hydra killed the ranks of
// a job whose missing rank had exited cleanly. True when every collective
// it posted completed: none is left pending on the library's communicators.
bool finish_job(JobProcess& process, MpiDeadline deadline);

}  // namespace corenoise
