// One reduction of the job's figures (job_reduction.cpp): the ranks' steps
// and exchanges reduced, every rank's summary and the named ranks' records
// gathered to rank 0, which judges them. Run once at MPI_Finalize
// (finish_job, job_mpi.h) and, while the program runs, at every epoch of
// the live reduction (live_reduction.h): the same code on the same
// figures, so that a live report and the final one can only differ by
// what happened in between. Compiled per family.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "collector/job/model/job_report.h"
#include "collector/job/rank/finalize_state.h"
#include "collector/job/rank/job_mpi.h"
#include "collector/job/rank/record_collection.h"
#include "collector/mpi/mpi_deadline.h"

namespace corenoise {

// What a reduction gave. On rank 0, the report's facts and what it gathered
// (empty elsewhere, or where the reduction found nothing to report).
struct JobReduced {
  bool settled = false;  // no operation left pending: `b` may be freed
  bool reduced = false;  // every rank came and was reduced
  JobFacts facts;
  GatheredRecords gathered;
};

// `timeout`: how long a rank may be missing before the others go on
// without it (the finalize timeout; a live epoch waits as long as it takes).
// `b` holds every buffer MPI may touch, and must outlive an unsettled
// reduction.
JobReduced reduce_job(const RankView& view, FinalizeBuffers& b, MpiDeadline deadline,
                      double timeout);

}  // namespace corenoise
