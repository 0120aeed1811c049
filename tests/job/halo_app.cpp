// halo_app: a stencil code's skeleton, as `corenoise job`'s ground truth
// for jobs that synchronise by point-to-point exchanges (docs/job.md,
// "Ground truth"): every step each rank computes a fixed amount of work,
// then exchanges halos with its neighbours on a periodic Cartesian grid
// (MPI_Cart_create over MPI_COMM_WORLD), and only every --allreduce-every
// steps joins a collective (the residual norm), as real stencil and
// molecular-dynamics codes do.
//
//   halo_app [--steps N] [--step-ms T] [--exchange nonblocking|irecv-send|blocking|none]
//            [--dims 1|2] [--halo-bytes B] [--allreduce-every K] [--larger RANK:FACTOR]
//            [--passes P] [--median-step]
//
//   nonblocking  MPI_Irecv and MPI_Isend to every neighbour, one MPI_Waitall;
//   irecv-send   MPI_Irecv, then a blocking MPI_Send, then MPI_Wait, per
//                neighbour (the shape of many Fortran codes);
//   blocking     MPI_Send and MPI_Recv, even ranks of each dimension
//                sending first (a 1-D ring with an even number of ranks);
//   none         no halo: each step is the work and the collective (with
//                --allreduce-every 1, a bulk-synchronous code whose only
//                waits are its steps).
//
// The step's work is calibrated on every rank (passes of a vector update
// taking --step-ms) and the least taken, so every rank does the same work; rank
// RANK of --larger does FACTOR times as much. --passes fixes the work
// instead (the checksum then depends on nothing but the arguments). Rank 0 prints a checksum of
// the final field, so a run under `corenoise job` can be compared with one
// without; --median-step also prints rank 0's median step (its work and
// exchange, seconds), for the overhead benchmark. It stands in for a user's code, so it calls MPI
// directly.
//
// Exit status: 0 done, 1 bad arguments.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  int steps = 300;
  double step_ms = 3.0;
  std::string exchange = "nonblocking";
  int dims = 1;
  int halo_bytes = 128 * 1024;  // past both families' eager limits on shared memory: a rendezvous
  int allreduce_every = 50;
  int larger_rank = -1;
  double larger_factor = 1.0;
  long passes = 0;  // 0: calibrated
  bool median_step = false;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr, "halo_app: %s\n", problem.c_str());
  std::exit(1);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--steps")
      o.steps = std::atoi(value().c_str());
    else if (arg == "--step-ms")
      o.step_ms = std::atof(value().c_str());
    else if (arg == "--exchange")
      o.exchange = value();
    else if (arg == "--dims")
      o.dims = std::atoi(value().c_str());
    else if (arg == "--halo-bytes")
      o.halo_bytes = std::atoi(value().c_str());
    else if (arg == "--median-step")
      o.median_step = true;
    else if (arg == "--passes")
      o.passes = std::atol(value().c_str());
    else if (arg == "--allreduce-every")
      o.allreduce_every = std::atoi(value().c_str());
    else if (arg == "--larger") {
      const std::string v = value();
      const auto colon = v.find(':');
      if (colon == std::string::npos) usage("--larger takes RANK:FACTOR");
      o.larger_rank = std::atoi(v.substr(0, colon).c_str());
      o.larger_factor = std::atof(v.substr(colon + 1).c_str());
    } else {
      usage("unknown argument '" + arg + "'");
    }
  }
  if (o.exchange != "nonblocking" && o.exchange != "irecv-send" && o.exchange != "blocking" &&
      o.exchange != "none") {
    usage("--exchange is nonblocking, irecv-send, blocking or none, not '" + o.exchange + "'");
  }
  if (o.dims != 1 && o.dims != 2) usage("--dims is 1 or 2");
  if (o.steps < 1 || o.step_ms <= 0 || o.halo_bytes < 8 || o.allreduce_every < 1)
    usage("bad value");
  return o;
}

// One pass of the step's work over the field: memory-resident, vectorisable.
double work_pass(std::vector<double>& field) {
  double sum = 0;
  for (std::size_t i = 1; i + 1 < field.size(); ++i) {
    field[i] = 0.25 * field[i - 1] + 0.5 * field[i] + 0.25 * field[i + 1] + 1e-9;
    sum += field[i];
  }
  return sum;
}

long calibrate(double step_ms, std::vector<double>& field) {
  std::vector<double> scratch = field;
  long passes = 0;
  const auto start = std::chrono::steady_clock::now();
  double sink = 0;
  while (
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() <
      200.0) {
    sink += work_pass(scratch);
    ++passes;
  }
  if (sink == 12345.678) std::puts("");  // keeps the loop
  return std::max(1L, static_cast<long>(std::lround(passes * step_ms / 200.0)));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const Options o = parse(argc, argv);
  int size = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int dims[2] = {0, 0}, periods[2] = {1, 1};
  MPI_Dims_create(size, o.dims, dims);
  MPI_Comm grid;
  MPI_Cart_create(MPI_COMM_WORLD, o.dims, dims, periods, 0, &grid);
  MPI_Comm_rank(grid, &rank);
  int coords[2] = {0, 0};
  MPI_Cart_coords(grid, rank, o.dims, coords);

  std::vector<double> field(4096);
  for (std::size_t i = 0; i < field.size(); ++i)
    field[i] = std::sin(0.001 * static_cast<double>(i + rank));
  // Every rank calibrates (so that set-up is alike) and all take the least.
  const long mine = o.passes > 0 ? o.passes : calibrate(o.step_ms, field);
  long passes = 0;
  MPI_Allreduce(&mine, &passes, 1, MPI_LONG, MPI_MIN, grid);
  if (rank == o.larger_rank) passes = std::lround(passes * o.larger_factor);

  const int halo = o.halo_bytes / 8;
  std::vector<std::vector<double>> send(4, std::vector<double>(halo)),
      receive(4, std::vector<double>(halo));
  std::vector<int> neighbours;
  for (int d = 0; d < o.dims; ++d) {
    int lower = 0, upper = 0;
    MPI_Cart_shift(grid, d, 1, &lower, &upper);
    neighbours.push_back(lower);
    neighbours.push_back(upper);
  }
  const int n = static_cast<int>(neighbours.size());
  double residual = 0;
  std::vector<double> step_seconds;
  step_seconds.reserve(static_cast<std::size_t>(o.steps));
  for (int step = 0; step < o.steps; ++step) {
    const auto step_start = std::chrono::steady_clock::now();
    double sum = 0;
    for (long p = 0; p < passes; ++p) sum += work_pass(field);
    for (int k = 0; k < n; ++k)
      std::fill(send[k].begin(), send[k].end(), field[static_cast<std::size_t>(k + 1)]);
    // Tag by direction, so that with two ranks (both neighbours the same
    // rank) the halo from the lower side is not taken for the upper one.
    const auto tag_to = [](int k) { return k ^ 1; };  // what I send upward arrives as "from lower"
    if (o.exchange == "nonblocking") {
      MPI_Request requests[8];
      for (int k = 0; k < n; ++k)
        MPI_Irecv(receive[k].data(), halo, MPI_DOUBLE, neighbours[k], k, grid, &requests[k]);
      for (int k = 0; k < n; ++k)
        MPI_Isend(send[k].data(), halo, MPI_DOUBLE, neighbours[k], tag_to(k), grid,
                  &requests[n + k]);
      MPI_Waitall(2 * n, requests, MPI_STATUSES_IGNORE);
    } else if (o.exchange == "irecv-send") {
      for (int k = 0; k < n; ++k) {
        MPI_Request request;
        MPI_Irecv(receive[k].data(), halo, MPI_DOUBLE, neighbours[k], k, grid, &request);
        MPI_Send(send[k ^ 1].data(), halo, MPI_DOUBLE, neighbours[k ^ 1], tag_to(k ^ 1), grid);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
      }
    } else if (o.exchange == "blocking") {
      for (int k = 0; k < n; ++k) {
        const bool first = coords[k / 2] % 2 == 0;
        if (first) {
          MPI_Send(send[k ^ 1].data(), halo, MPI_DOUBLE, neighbours[k ^ 1], tag_to(k ^ 1), grid);
          MPI_Recv(receive[k].data(), halo, MPI_DOUBLE, neighbours[k], k, grid, MPI_STATUS_IGNORE);
        } else {
          MPI_Recv(receive[k].data(), halo, MPI_DOUBLE, neighbours[k], k, grid, MPI_STATUS_IGNORE);
          MPI_Send(send[k ^ 1].data(), halo, MPI_DOUBLE, neighbours[k ^ 1], tag_to(k ^ 1), grid);
        }
      }
    }
    if (o.exchange != "none")
      for (int k = 0; k < n; ++k) field[static_cast<std::size_t>(k)] = receive[k][0];
    if ((step + 1) % o.allreduce_every == 0)
      MPI_Allreduce(&sum, &residual, 1, MPI_DOUBLE, MPI_SUM, grid);
    step_seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count());
  }
  double checksum = 0, local = 0;
  for (double v : field) local += v;
  MPI_Reduce(&local, &checksum, 1, MPI_DOUBLE, MPI_SUM, 0, grid);
  if (rank == 0)
    std::printf("halo_app: %d ranks, %d steps, checksum %.12e\n", size, o.steps, checksum);
  if (rank == 0 && o.median_step) {
    std::nth_element(step_seconds.begin(), step_seconds.begin() + step_seconds.size() / 2,
                     step_seconds.end());
    std::printf("halo_app: median step %.9f s\n", step_seconds[step_seconds.size() / 2]);
  }
  MPI_Comm_free(&grid);
  MPI_Finalize();
  return 0;
}
