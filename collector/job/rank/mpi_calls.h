// The blocking MPI calls the in-job library records, as a small enum so
// that the per-call path indexes tables instead of comparing strings.
// Pure and MPI-free; the functions are thread-safe (constant tables).
//
// The calls are listed once, in collector/job/rank/mpi_calls.key: each line
// gives a call's prototype and what its wrapper records, from which the
// build (mpi_calls.cmake) writes CORENOISE_MPI_CALLS (mpi_calls.gen.h in
// the build tree: X(enumerator, role) per recorded call, in the key
// file's order) and the wrappers themselves (pmpi_calls.gen.cpp).
#pragma once

#include <cstdint>
#include <string_view>

#include "collector/job/rank/mpi_calls.gen.h"

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
