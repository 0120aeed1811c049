// How rank 0 hands the job's report on at MPI_Finalize (job_reduction.cpp):
// through the function the library's wiring (collector/job/job_wiring.cpp)
// sets as the library loads. The rank runtime builds the report's model
// and knows nothing of how it is drawn, so it links no view: only the
// wiring, above every layer of the job, reaches collector/report/.
//
// Thread-safety: set once at load, before the program's main (so before
// its MPI_Init), read at MPI_Finalize; an atomic, so either order is safe.
#pragma once

#include "collector/job/model/job_options.h"
#include "collector/job/model/job_report.h"

namespace corenoise {

using JobPublisher = void (*)(const JobReport& report, const JobOptions& options);

void set_job_publisher(JobPublisher publisher);

// The one set; null in a build without the wiring (tests of the runtime),
// where the report is built and not published.
JobPublisher job_publisher();

}  // namespace corenoise
