// Open MPI: its MPI_Finalize needs no way round.
#include <mpi.h>

#include "collector/mpi/family_hooks.h"

namespace corenoise {

void finalize_family() { MPI_Finalize(); }

}  // namespace corenoise
