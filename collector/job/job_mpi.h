// The MPI side of the in-job library, compiled once per family with that
// family's <mpi.h> (like collector/mpi/'s plugins): the process-wide state
// the wrappers share, and the reduction at MPI_Finalize.
#pragma once

#include <mpi.h>

#include <vector>

#include "collector/job/comm_ranks.h"
#include "collector/job/job_session.h"
#include "collector/job/node_tasks.h"

namespace corenoise {

struct JobProcess {
  JobSession* session = nullptr;  // null: not recording (never deleted: see pmpi_wrappers.cpp)
  MPI_Comm comm = MPI_COMM_NULL;  // a duplicate of MPI_COMM_WORLD, for the library's own traffic
  MPI_Comm node = MPI_COMM_NULL;  // the ranks of this node
  int rank = 0, size = 1;
  int node_rank = 0;
  std::vector<TaskTime> tasks_at_start;  // the node's tasks, on its reporting rank
  CommRanks comms;                       // the program's communicators, the recording thread's
};

// Called by MPI_Finalize's wrapper before PMPI_Finalize: gathers, reports,
// and never waits longer than the session's finalize timeout for a rank
// that does not come. False when a rank did not come: PMPI_Finalize would
// then wait for it forever (MPICH does), so the wrapper leaves MPI as is.
bool finish_job(JobProcess& process);

}  // namespace corenoise
