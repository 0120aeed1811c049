// A small MPI program that says which MPI libraries its process mapped:
// ten barrier-separated steps of 20 ms, then, on each rank, one line
// "maps: PATH" per mapped file whose name holds "libmpi" (libmpi.so.12,
// libmpich.so.12, libmpi.so.40 and their Fortran and C++ companions), read
// from /proc/self/maps before MPI_Finalize. Linked against Debian's MPICH,
// then made a program of another MPICH-ABI library by tests/job/
// mpich_abi_test.sh.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int step = 0; step < 10; ++step) {
    ::usleep(20000);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  std::set<std::string> mapped;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path.find("libmpi") != std::string::npos) mapped.insert(path);
  }
  for (const std::string& path : mapped) std::printf("rank %d maps: %s\n", rank, path.c_str());
  MPI_Finalize();
  return 0;
}
