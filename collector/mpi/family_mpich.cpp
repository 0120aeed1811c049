// MPICH (and the libraries sharing its ABI): MPI_Finalize with the way round
// MPICH 4.0/4.1's deadlock on UCX armed where the library has it
// (mpich_ucx_finalize.h).
#include <mpi.h>

#include <string_view>

#include "collector/mpi/family_hooks.h"
#include "collector/mpi/mpich_ucx_finalize.h"

namespace corenoise {

void finalize_family() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(version, &length) == MPI_SUCCESS) {
    set_unflushed_ucx_disconnect(
        mpi_finalize_needs_unflushed_disconnect(std::string_view(version, length)));
  }
  MPI_Finalize();
  set_unflushed_ucx_disconnect(false);
}

}  // namespace corenoise
