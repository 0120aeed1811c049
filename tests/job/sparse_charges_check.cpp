// exchange_charges (collector/job/rank/sparse_charges.h) against a real
// MPI, on any number of ranks: what each rank learns from the sparse
// exchange is, bit for bit, what a dense MPI_Alltoall of the same charges
// gives it, and so is the net wait caused that MPI_Finalize computes from
// it (net_wait_caused, peer_waits.h). Several rounds run back to back on
// one communicator, the ranks entering each at different moments, before
// any dense exchange: a charge taken by the wrong round shows as a
// difference. Then a round that one rank never joins must end at its
// deadline on the others. Run by ctest under mpiexec.mpich and
// mpirun.openmpi on 2 and 16 ranks (tests/job/CMakeLists.txt); each rank
// prints its failures and exits 1 on any.
#include <mpi.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "collector/job/rank/peer_waits.h"
#include "collector/job/rank/sparse_charges.h"

namespace {

constexpr int kRounds = 8;
// Consecutive rounds on one communicator alternate two tags
// (sparse_charges.h); a third for the round a rank does not join.
constexpr int kTags[2] = {7412, 7413};
constexpr int kAbandonedTag = 7414;

int failures = 0;
int world_rank = -1;

void expect(bool ok, const char* what, int round) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "rank %d, round %d: FAILED: %s\n", world_rank, round, what);
}

std::mt19937_64 random_of(int rank, int round) {
  return std::mt19937_64(static_cast<std::uint64_t>(rank) * 1000003u +
                         static_cast<std::uint64_t>(round));
}

// What `rank` charged each rank in `round`: nobody in a third of the
// (rank, round) pairs; else its next rank, as a halo would, and a quarter
// of the others (itself among them), each a value of 53 random mantissa
// bits scaled over nine orders of magnitude.
std::vector<double> charges(int rank, int size, int round) {
  std::vector<double> charged(static_cast<std::size_t>(size), 0.0);
  if ((rank + round) % 3 == 1) return charged;
  std::mt19937_64 random = random_of(rank, round);
  for (int peer = 0; peer < size; ++peer) {
    const bool neighbour = peer == (rank + 1) % size;
    if (!neighbour && random() % 4 != 0) continue;
    const double unit = static_cast<double>(random() >> 11) * 0x1p-53;
    const int exponent = static_cast<int>(random() % 30) - 20;
    charged[static_cast<std::size_t>(peer)] = std::ldexp(unit, exponent);
  }
  return charged;
}

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

// The rounds back to back, no rank waiting for another between them but
// in the exchange itself; each rank sleeps a while of its own before each.
std::vector<std::vector<double>> sparse_rounds(MPI_Comm comm, int size) {
  std::vector<std::vector<double>> tables;
  for (int round = 0; round < kRounds; ++round) {
    std::mt19937_64 random = random_of(world_rank, round + 1000);
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 3000));
    const std::vector<double> charged = charges(world_rank, size, round);
    std::vector<double> table(static_cast<std::size_t>(size), -1.0);
    const bool done = corenoise::exchange_charges(comm, kTags[round % 2], charged, table,
                                                  corenoise::MpiDeadline::after(60));
    expect(done, "the exchange completed", round);
    tables.push_back(std::move(table));
  }
  return tables;
}

// Each round's table and net wait caused against the dense exchange's.
// Returns in how many rounds this rank caused net waiting (the sum is
// not trivially zero).
int compare_with_dense(const std::vector<std::vector<double>>& tables, int size) {
  int causing = 0;
  for (int round = 0; round < kRounds; ++round) {
    const std::vector<double> charged = charges(world_rank, size, round);
    std::vector<double> dense(static_cast<std::size_t>(size), -1.0);
    PMPI_Alltoall(charged.data(), 1, MPI_DOUBLE, dense.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
    const std::vector<double>& sparse = tables[static_cast<std::size_t>(round)];
    expect(std::memcmp(sparse.data(), dense.data(), dense.size() * sizeof(double)) == 0,
           "the table is the dense exchange's, bit for bit", round);
    const double from_dense = corenoise::net_wait_caused(dense, charged);
    const double from_sparse = corenoise::net_wait_caused(sparse, charged);
    expect(same_bits(from_sparse, from_dense), "the net wait caused is the dense one's", round);
    causing += from_dense > 0 ? 1 : 0;
  }
  return causing;
}

// No charge is left unreceived on either tag once every rank is done.
void expect_nothing_left(MPI_Comm comm) {
  PMPI_Barrier(comm);
  for (int tag : kTags) {
    int flag = 0;
    PMPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &flag, MPI_STATUS_IGNORE);
    expect(flag == 0, "no charge left unreceived after the rounds", kRounds);
  }
}

// Every rank charges the last, which never joins: the others give up at
// their deadline, not later; their sends to it stay pending into
// MPI_Finalize, as the in-job library's do when a rank is gone, and the
// finalize must still end (Debian's MPICH, over UCX, then prints "UCX
// WARN ... was not returned to mpool" on the senders and "unexpected
// tag-receive descriptor ... was not matched" on the last rank).
void abandoned_round(int size) {
  MPI_Comm comm = MPI_COMM_NULL;
  PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (world_rank == size - 1) return;
  // Kept to the end of the process, as sparse_charges.h asks: the sends
  // left pending may still read `charged`, and MPI write into `table`.
  static std::vector<double> charged, table;
  charged.assign(static_cast<std::size_t>(size), 0.0);
  charged.back() = 1.0 + world_rank;
  table.assign(charged.size(), 0.0);
  const auto start = std::chrono::steady_clock::now();
  const bool done = corenoise::exchange_charges(comm, kAbandonedTag, charged, table,
                                                corenoise::MpiDeadline::after(0.5));
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  expect(!done, "a round a rank never joins does not complete", kRounds + 1);
  expect(took.count() >= 0.5 && took.count() < 5, "it ends at its deadline", kRounds + 1);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm comm = MPI_COMM_NULL;
  PMPI_Comm_dup(MPI_COMM_WORLD, &comm);

  const std::vector<std::vector<double>> tables = sparse_rounds(comm, size);
  const int causing = compare_with_dense(tables, size);
  int all_causing = 0;
  MPI_Allreduce(&causing, &all_causing, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  expect(all_causing > 0, "some rank caused net waiting in some round", kRounds);
  if (world_rank == 0)
    std::printf("%d of %d rank-rounds caused net waiting\n", all_causing, size * kRounds);
  expect_nothing_left(comm);
  PMPI_Comm_free(&comm);
  if (size > 1) abandoned_round(size);

  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (world_rank == 0) std::printf("%d failures on %d ranks\n", total, size);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
