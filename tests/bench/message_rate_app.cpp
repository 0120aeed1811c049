// A message-rate-bound MPI program, the worst case for a wrapper: nothing
// but small calls, as many a second as MPI allows. Three phases, each
// timed on rank 0 and printed as nanoseconds per call:
//   barrier:   MPI_Barrier, back to back;
//   allreduce: MPI_Allreduce of one double;
//   polled:    a ring exchange of one double with each neighbour, MPI_Irecv
//              and MPI_Isend, completed by polling MPI_Testany (a random
//              update code's pattern, which a wrapper sees as many polls
//              that complete nothing); per exchange.
// job_call_rate_bench.py runs it with and without `corenoise job`.
//
//   message_rate_app [--calls N]   (default 200000 of each)
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

double per_call_ns(double seconds, long calls) {
  return seconds / static_cast<double>(calls) * 1e9;
}

double barriers(long calls) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (long i = 0; i < calls; ++i) MPI_Barrier(MPI_COMM_WORLD);
  return MPI_Wtime() - start;
}

double allreduces(long calls) {
  double in = 1, out = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (long i = 0; i < calls; ++i) {
    MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    in = out / 2;
  }
  return MPI_Wtime() - start;
}

// Each exchange: receive from both neighbours, send to both, then poll
// the four requests with MPI_Testany until all are done. Returns the
// seconds and, in `polls`, the polls made.
double polled_exchanges(long calls, long& polls) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  double out[2] = {static_cast<double>(rank), 0}, in[2] = {};
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (long i = 0; i < calls; ++i) {
    MPI_Request requests[4];
    MPI_Irecv(&in[0], 1, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &requests[0]);
    MPI_Irecv(&in[1], 1, MPI_DOUBLE, right, 8, MPI_COMM_WORLD, &requests[1]);
    MPI_Isend(&out[0], 1, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &requests[2]);
    MPI_Isend(&out[1], 1, MPI_DOUBLE, left, 8, MPI_COMM_WORLD, &requests[3]);
    for (int done = 0; done < 4;) {
      int index = MPI_UNDEFINED, flag = 0;
      MPI_Testany(4, requests, &index, &flag, MPI_STATUS_IGNORE);
      ++polls;
      if (flag != 0 && index != MPI_UNDEFINED) ++done;
    }
    out[1] = in[0] + in[1];
  }
  return MPI_Wtime() - start;
}

}  // namespace

int main(int argc, char** argv) {
  long calls = 200000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
      calls = std::atol(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: message_rate_app [--calls N]\n");
      return 2;
    }
  }
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long polls = 0;
  const double barrier = barriers(calls);
  const double allreduce = allreduces(calls);
  const double polled = polled_exchanges(calls, polls);
  if (rank == 0) {
    std::printf("barrier_ns %.1f\n", per_call_ns(barrier, calls));
    std::printf("allreduce_ns %.1f\n", per_call_ns(allreduce, calls));
    std::printf("polled_exchange_ns %.1f\n", per_call_ns(polled, calls));
    std::printf("polls_per_exchange %.1f\n",
                static_cast<double>(polls) / static_cast<double>(calls));
  }
  MPI_Finalize();
  return 0;
}
