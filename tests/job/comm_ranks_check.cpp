// CommRanks (collector/job/rank/comm_ranks.h) against a real MPI, on 2 ranks:
// ranks of a reordered communicator translated to the job's, and a freed
// communicator's handle, when MPI hands it out again, never answered from
// the freed one's table, however it was freed. Run by ctest under
// mpiexec.mpich and mpirun.openmpi (tests/job/CMakeLists.txt); each rank
// prints its failures and exits 1 on any.
#include <mpi.h>

#include <cstdio>

#include "collector/job/rank/comm_ranks.h"

namespace {

int failures = 0;
int world_rank = -1;

void expect(bool ok, const char* what) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", world_rank, what);
}

// The job's ranks in reverse order: rank r of it is job rank size-1-r.
MPI_Comm reversed(int size) {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - world_rank, &comm);
  return comm;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  corenoise::CommRanks ranks;

  MPI_Comm back = reversed(size);
  expect(ranks.job_rank(back, 0) == size - 1,
         "rank 0 of a reversed communicator is the last job rank");
  expect(ranks.job_rank(back, size - 1) == 0, "its last rank is job rank 0");
  expect(ranks.spans_job(back), "a reordered communicator of every rank spans the job");
  expect(!ranks.same_ranks_as_job(back), "a reordered communicator's ranks are not the job's");
  expect(ranks.job_rank(back, size) == -1, "a rank past the communicator's size is unknown");
  expect(ranks.job_rank(back, MPI_ANY_SOURCE) == -1, "MPI_ANY_SOURCE is unknown");

  // Freed, then a new communicator of the same ranks in the job's order:
  // the MPI libraries tested hand the freed handle out again at once.
  MPI_Comm freed = back;
  MPI_Comm_free(&back);
  MPI_Comm same = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &same);
  if (world_rank == 0)
    std::printf("the dup %s the freed communicator's handle\n",
                same == freed ? "reused" : "did not reuse");
  expect(ranks.job_rank(same, 0) == 0,
         "after MPI_Comm_free, a new communicator's rank 0 is job rank 0");
  expect(ranks.same_ranks_as_job(same), "the dup has the job's ranks");

  // Freed by MPI_Comm_disconnect, which no wrapper of MPI_Comm_free sees.
  MPI_Comm_disconnect(&same);
  MPI_Comm again = reversed(size);
  expect(ranks.job_rank(again, 0) == size - 1, "after MPI_Comm_disconnect, the new table is used");

  // A communicator of this rank alone.
  MPI_Comm self = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank, 0, &self);
  expect(ranks.job_rank(self, 0) == world_rank, "rank 0 of a one-rank communicator is this rank");
  expect(!ranks.spans_job(self) || size == 1, "a one-rank communicator does not span the job");

  // More communicators than the cache holds: evicted ones come back right.
  MPI_Comm many[12];
  for (MPI_Comm& c : many) c = reversed(size);
  for (MPI_Comm& c : many)
    expect(ranks.job_rank(c, 0) == size - 1, "a communicator beyond the cache");
  expect(ranks.job_rank(again, 0) == size - 1, "an evicted communicator, looked up again");
  for (MPI_Comm& c : many) MPI_Comm_free(&c);
  MPI_Comm world_copy = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &world_copy);
  expect(ranks.job_rank(world_copy, 0) == 0, "a dup after twelve frees");
  expect(ranks.job_rank(MPI_COMM_NULL, 0) == -1, "MPI_COMM_NULL translates nothing");

  MPI_Comm_free(&world_copy);
  MPI_Comm_free(&self);
  MPI_Comm_free(&again);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (world_rank == 0) std::printf("%d failures on %d ranks\n", total, size);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
