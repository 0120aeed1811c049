#include "collector/job/mpi_calls.h"

#include <array>
#include <cstddef>

namespace corenoise {

std::string_view mpi_call_name(MpiCall call) {
  static constexpr std::array<std::string_view, static_cast<std::size_t>(MpiCall::count)> names = {
      "MPI_Barrier",   "MPI_Bcast",          "MPI_Reduce",
      "MPI_Allreduce", "MPI_Gather",         "MPI_Gatherv",
      "MPI_Allgather", "MPI_Allgatherv",     "MPI_Scatter",
      "MPI_Scatterv",  "MPI_Alltoall",       "MPI_Alltoallv",
      "MPI_Alltoallw", "MPI_Reduce_scatter", "MPI_Reduce_scatter_block",
      "MPI_Scan",      "MPI_Exscan",         "MPI_Wait",
      "MPI_Waitall",   "MPI_Waitany",        "MPI_Waitsome",
      "MPI_Sendrecv",  "MPI_Sendrecv_replace", "MPI_Recv",
      "MPI_Probe"};
  const auto index = static_cast<std::size_t>(call);
  return index < names.size() ? names[index] : "MPI_?";
}

}  // namespace corenoise
