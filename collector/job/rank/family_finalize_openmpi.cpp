// Open MPI: its MPI_Finalize needs no way round (family_finalize.h).
#include "collector/job/rank/family_finalize.h"

namespace corenoise {

bool before_family_finalize(MPI_Comm, MpiDeadline) { return true; }

void after_family_finalize() {}

}  // namespace corenoise
