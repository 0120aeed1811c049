// Ranks of the program's communicators as ranks of the job (of
// MPI_COMM_WORLD), for the exchange waits charged to a peer
// (peer_waits.h), and whether a communicator spans the whole job (its
// collectives are steps). Compiled per family, with that family's <mpi.h>.
//
// A small cache of the communicators seen last: a halo code exchanges on
// one or two (MPI_COMM_WORLD, a Cartesian one). A communicator's table is
// built on its first use (one PMPI_Group_translate_ranks over its group);
// after that a lookup is a compare and an index. An inter-communicator's
// peers are not translated (its ranks are the remote group's): unknown.
//
// The recording thread's only (pmpi_wrappers.cpp); not thread-safe.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <vector>

namespace corenoise {

class CommRanks {
 public:
  // `rank` of `comm` as a rank of the job; -1 for MPI_PROC_NULL,
  // MPI_ANY_SOURCE and what cannot be translated.
  int job_rank(MPI_Comm comm, int rank);
  // A communicator of every rank of the job, in any order (MPI_IDENT,
  // MPI_CONGRUENT or MPI_SIMILAR to MPI_COMM_WORLD).
  bool spans_job(MPI_Comm comm);
  // A communicator whose ranks are the job's, rank for rank: its ranks
  // need no translation, now or after it is freed.
  bool same_ranks_as_job(MPI_Comm comm);

 private:
  struct Entry {
    MPI_Comm comm = MPI_COMM_NULL;
    bool spans_job = false;
    bool identity = false;    // the same ranks as MPI_COMM_WORLD's
    std::vector<int> to_job;  // else each rank's, or empty (inter-communicator)
  };
  Entry& entry(MPI_Comm comm);
  void build(std::size_t index, MPI_Comm comm);
  static int on_free(MPI_Comm comm, int keyval, void* value, void* self);

  static constexpr std::size_t kEntries = 8;
  std::array<Entry, kEntries> entries_{};
  std::array<std::atomic<bool>, kEntries> stale_{};  // its communicator was freed
  int keyval_ = MPI_KEYVAL_INVALID;
  std::size_t last_ = 0;
  std::size_t next_victim_ = 0;
};

}  // namespace corenoise
