// Open MPI: its MPI_Finalize needs no way round.
#include <mpi.h>

#include "collector/mpi/mpi_family.h"

namespace corenoise {

void finalize_family() { MPI_Finalize(); }

}  // namespace corenoise
