// The in-job library's one tie to the views: rank 0's report, built by the
// rank runtime (rank/job_reduction.cpp), is written by the job's views
// (collector/report/job_output.h: the JSON, the page, the banner). The
// layers under collector/job/ (model/, rank/, rebuild/) include and link
// no view; this file, compiled into each family's in-job library only,
// is where the two meet (docs/architecture.md, "The job library").
#include "collector/job/rank/job_publisher.h"
#include "collector/report/job_output.h"

namespace corenoise {
namespace {

// As the library loads (LD_PRELOAD), before the program's main and so
// before its MPI_Init.
[[gnu::constructor]] void wire_job_views() { set_job_publisher(&write_job_outputs); }

}  // namespace
}  // namespace corenoise
