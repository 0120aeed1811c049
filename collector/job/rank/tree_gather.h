// Every rank's bytes to rank 0 of a communicator along a binomial tree:
// each rank receives its subtree's from its children, adds its own and
// sends them on to its parent, so that rank 0 hears from log2(P) ranks.
// A linear gather, which MPI's non-blocking MPI_Igather is in Open MPI 4.1
// (libnbc), has rank 0 hear from every rank, and each peer it hears from
// over shared memory costs it about 36 KB of MPI's own memory: 408 bytes
// gathered from 512 ranks added 18.8 MB to rank 0, MPI_Gather's binomial
// tree nothing (docs/scaling.md). Non-blocking like the library's other
// operations at MPI_Finalize: polled to a deadline, a child that never
// sends costs its subtree, never a hang. Compiled per family.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

#include "collector/mpi/mpi_deadline.h"

namespace corenoise {

// What a rank's part of a gather holds, kept by the caller (FinalizeBuffers)
// so that a send or receive left pending at the deadline never writes into
// freed memory.
struct TreeBuffers {
  std::string up;        // what this rank sends its parent
  std::string incoming;  // a child's, being received
};

struct TreeGathered {
  bool complete = false;  // every child's subtree came, and this rank's parent took it
  bool pending = false;   // a send or receive is left that MPI may still touch
};

// Fixed-size blocks, one per rank, in rank order: a subtree of the binomial
// tree is a run of consecutive ranks, so each child's blocks land in
// place. On rank 0 `all` (P × `block` bytes) receives every rank's, its
// own first; a block whose rank's subtree did not come stays as it was.
// Elsewhere `all` is unused.
TreeGathered tree_gather_blocks(MPI_Comm comm, int tag, const void* mine, std::size_t block,
                                void* all, TreeBuffers& buffers, MpiDeadline deadline);

// Variable-size texts: on rank 0, `texts` gets every rank's that came,
// `ranks` their ranks (in no set order); elsewhere both are left empty.
TreeGathered tree_gather_texts(MPI_Comm comm, int tag, const std::string& mine,
                               std::vector<std::string>& texts, std::vector<int>& ranks,
                               TreeBuffers& buffers, MpiDeadline deadline);

}  // namespace corenoise
