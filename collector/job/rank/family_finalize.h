// What differs between the MPI families at the program's MPI_Finalize,
// after the library's reduction and around the MPI library's own finalize
// (pmpi_wrappers.cpp: before_finalize, after_finalize). Each family's in-job
// library links exactly one of family_finalize_mpich.cpp and
// family_finalize_openmpi.cpp, as the sweep's plugins link one of
// collector/mpi/family_mpich.cpp and family_openmpi.cpp.
#pragma once

#include <mpi.h>

#include "collector/mpi/mpi_deadline.h"

namespace corenoise {

// Readies the MPI library's finalize, which the program's call reaches next:
// MPICH before 4.2 on UCX gets collector/mpi/mpich_ucx_finalize.h's way
// round, armed once every rank of `comm` (the library's duplicate of
// MPI_COMM_WORLD) has reached it, by `deadline`. False when an operation it
// posted is left pending: a rank late or gone, whose finalize is then the
// MPI library's own, with no way round.
bool before_family_finalize(MPI_Comm comm, MpiDeadline deadline);

// Once the MPI library's finalize has returned: the way round disarmed, so
// that nothing else in the process (a UCX user of its own) gets it.
void after_family_finalize();

}  // namespace corenoise
