// The blocking MPI calls the in-job library wraps (pmpi_wrappers.cpp), as
// a small enum so that the per-call path indexes tables instead of
// comparing strings.
#pragma once

#include <cstdint>
#include <string_view>

namespace corenoise {

enum class MpiCall : std::uint8_t {
  barrier, bcast, reduce, allreduce, gather, gatherv, allgather, allgatherv, scatter, scatterv,
  alltoall, alltoallv, alltoallw, reduce_scatter, reduce_scatter_block, scan, exscan,
  wait, waitall, waitany, waitsome, sendrecv, sendrecv_replace, recv, probe,
  count  // not a call
};

// "MPI_Barrier", ...; a large-count form reports the name without "_c".
std::string_view mpi_call_name(MpiCall call);

}  // namespace corenoise
