// A small MPI program calling MPI-4's large-count collectives
// (MPI_Allreduce_c, MPI_Bcast_c) and MPI_Sendrecv_c, as mpi4py >= 4 does
// whenever the library has them: `corenoise job` must see them as the
// same calls and steps as their int-count forms (tests/job/job_test.cpp).
// Built against MPICH, whose Debian 12 version (4.0) is MPI-4.
//
//   large_count_app STEPS
#include <mpi.h>

#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int steps = argc > 1 ? std::atoi(argv[1]) : 10;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<double> send(16, rank), receive(16);
  for (int step = 0; step < steps; ++step) {
    MPI_Allreduce_c(send.data(), receive.data(), MPI_Count{16}, MPI_DOUBLE, MPI_SUM,
                    MPI_COMM_WORLD);
    MPI_Bcast_c(receive.data(), MPI_Count{16}, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    const int next = (rank + 1) % size, previous = (rank + size - 1) % size;
    MPI_Sendrecv_c(send.data(), MPI_Count{16}, MPI_DOUBLE, next, 0, receive.data(), MPI_Count{16},
                   MPI_DOUBLE, previous, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Finalize();
  return 0;
}
