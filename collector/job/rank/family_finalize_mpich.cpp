// MPICH (and the libraries sharing its ABI): the way round MPICH 4.0/4.1's
// deadlock in MPI_Finalize on UCX (collector/mpi/mpich_ucx_finalize.h),
// armed for the program's own finalize as the sweep's plugin arms it for its
// (collector/mpi/family_mpich.cpp). Without it, a 2-rank job across two
// hosts hung after its report far more often under the library than
// without (docs/reliability.md, "MPICH's finalize across hosts").
//
// This library links mpich_ucx_finalize.cpp, so it defines
// ucp_disconnect_nb; preloaded, it comes before libucp in the search order,
// and libmpich binds its one call of it, in its finalize, to this one.
#include <mpi.h>

#include <string_view>

#include "collector/job/rank/family_finalize.h"
#include "collector/job/rank/pmpi_completion.h"
#include "collector/mpi/mpich_ucx_finalize.h"

namespace corenoise {

bool before_family_finalize(MPI_Comm comm, MpiDeadline deadline) {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (PMPI_Get_library_version(version, &length) != MPI_SUCCESS ||
      !mpi_finalize_needs_unflushed_disconnect(std::string_view(version, length))) {
    return true;
  }
  // Every rank has received every other rank's last messages, the
  // program's and the library's, before any leaves its endpoints unflushed
  // (mpich_ucx_finalize.h): the sweep's barrier, polled to the deadline as
  // the reduction's operations are.
  MPI_Request request = MPI_REQUEST_NULL;
  if (PMPI_Ibarrier(comm, &request) != MPI_SUCCESS) return true;
  if (!pmpi_complete(request, deadline)) return false;
  set_unflushed_ucx_disconnect(true);
  return true;
}

void after_family_finalize() { set_unflushed_ucx_disconnect(false); }

}  // namespace corenoise
