// The blocking MPI calls the in-job library wraps (pmpi_wrappers.cpp), as
// a small enum so that the per-call path indexes tables instead of
// comparing strings. One list, CORENOISE_MPI_CALLS, gives each call its
// enumerator, its name and its role; the wrappers' signatures stay with
// the wrappers, which name their call by its enumerator.
#pragma once

#include <cstdint>
#include <string_view>

namespace corenoise {

// What a call's wait means for the job:
//   collective  every rank of the communicator waits for the last to
//               arrive (barrier, all-reduce, all-gather, all-to-all,
//               reduce-scatter): over the whole job it is a step;
//   rooted      a rooted or prefix collective (reduce, gather, scatter,
//               bcast, scan): ranks may leave before the last arrives, so
//               "waited least" does not mean "arrived last": a wait, never
//               a step;
//   exchange    point to point (a receive, a blocking send, a request's
//               completion): the wait is charged to the peer waited for.
enum class MpiCallRole : std::uint8_t { collective, rooted, exchange };

// X(enumerator, role)
// clang-format off
#define CORENOISE_MPI_CALLS(X)                                                                 \
  X(Barrier, collective) X(Bcast, rooted) X(Reduce, rooted) X(Allreduce, collective)           \
  X(Gather, rooted) X(Gatherv, rooted) X(Allgather, collective) X(Allgatherv, collective)      \
  X(Scatter, rooted) X(Scatterv, rooted) X(Alltoall, collective) X(Alltoallv, collective)      \
  X(Alltoallw, collective) X(Reduce_scatter, collective) X(Reduce_scatter_block, collective)   \
  X(Scan, rooted) X(Exscan, rooted)                                                            \
  X(Wait, exchange) X(Waitall, exchange) X(Waitany, exchange) X(Waitsome, exchange)            \
  X(Sendrecv, exchange) X(Sendrecv_replace, exchange) X(Recv, exchange) X(Probe, exchange)     \
  X(Send, exchange) X(Ssend, exchange) X(Rsend, exchange) X(Bsend, exchange)                   \
  X(Mprobe, exchange) X(Mrecv, exchange)
// clang-format on

// MpiCall::Allreduce is MPI_Allreduce (and MPI_Allreduce_c).
enum class MpiCall : std::uint8_t {
#define CORENOISE_MPI_CALL_ENUMERATOR(name, role) name,
  CORENOISE_MPI_CALLS(CORENOISE_MPI_CALL_ENUMERATOR)
#undef CORENOISE_MPI_CALL_ENUMERATOR
      count  // not a call
};

// "MPI_Barrier", ...; a large-count form reports the name without "_c".
std::string_view mpi_call_name(MpiCall call);
MpiCallRole mpi_call_role(MpiCall call);

}  // namespace corenoise
