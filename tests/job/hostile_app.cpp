// hostile_app: MPI programs that do what `corenoise job`'s library must
// survive unharmed (docs/job.md, "Unusual programs"), one per mode. Each
// prints what it computed, so a run under the library can be compared with
// one without, and exits with the status its mode says.
//
//   hostile_app MODE
//
//   init-thread-elsewhere  MPI_Init_thread called from a second thread,
//                          which then runs the steps and MPI_Finalize
//   threads-multiple       MPI_THREAD_MULTIPLE, 4 threads each running
//                          allreduces on its own duplicate communicator
//   fork-exit              fork() after MPI_Init; the child computes,
//                          prints and exit()s; fork-exec: the child execs
//                          /bin/echo
//   affinity               changes its own CPU affinity after MPI_Init
//   thousand-threads       starts and joins 1,000 threads mid-job
//   abort                  rank 1 calls MPI_Abort(.., 3) mid-job
//   no-finalize            returns from main without MPI_Finalize
//   outside                MPI calls allowed before MPI_Init and after
//                          MPI_Finalize (MPI_Initialized, MPI_Get_version;
//                          MPI_Finalized, MPI_Get_library_version)
//   sleep                  the steps, then 30 s of sleep before
//                          MPI_Finalize (for a signal from outside)
//   late-finalize          rank 1 reaches MPI_Finalize 8 s after rank 0
//                          (later than the 5 s finalize timeout the tests
//                          give)
#include <mpi.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// Ten steps of a small allreduce on `comm`; the sum, which is the output.
double steps(MPI_Comm comm, int rank) {
  double total = 0;
  for (int step = 0; step < 10; ++step) {
    double mine = rank + step, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
    total += sum;
  }
  return total;
}

int rank_of(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: hostile_app MODE\n");
    return 1;
  }
  const std::string mode = argv[1];
  if (mode == "init-thread-elsewhere") {
    int status = 0;
    std::thread t([&] {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      const int rank = rank_of(MPI_COMM_WORLD);
      const double total = steps(MPI_COMM_WORLD, rank);
      if (rank == 0) std::printf("hostile_app %s: %.1f\n", mode.c_str(), total);
      status = MPI_Finalize();
    });
    t.join();
    return status;
  }
  int initialized_before = -1, version = 0, subversion = 0;
  if (mode == "outside") {
    MPI_Initialized(&initialized_before);
    MPI_Get_version(&version, &subversion);
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv,
                  mode == "threads-multiple" ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  const int rank = rank_of(MPI_COMM_WORLD);
  double total = steps(MPI_COMM_WORLD, rank);
  if (mode == "outside" && rank == 0) {
    std::printf("before: initialized %d, MPI %d.%d\n", initialized_before, version, subversion);
  }

  if (mode == "threads-multiple") {
    if (provided < MPI_THREAD_MULTIPLE) {
      if (rank == 0) std::printf("hostile_app %s: not provided (%d)\n", mode.c_str(), provided);
    } else {
      std::vector<MPI_Comm> comms(4);
      for (auto& c : comms) MPI_Comm_dup(MPI_COMM_WORLD, &c);
      std::vector<double> sums(comms.size());
      std::vector<std::thread> threads;
      for (std::size_t i = 0; i < comms.size(); ++i) {
        threads.emplace_back([&, i] { sums[i] = steps(comms[i], rank); });
      }
      for (auto& t : threads) t.join();
      for (auto& c : comms) MPI_Comm_free(&c);
      for (double s : sums) total += s;
    }
  } else if (mode == "fork-exit" || mode == "fork-exec") {
    std::fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      if (mode == "fork-exec") {
        execl("/bin/echo", "echo", "hostile_app child exec'd", static_cast<char*>(nullptr));
        _exit(127);
      }
      if (rank == 0) std::printf("hostile_app child of rank 0: %.1f\n", total * 2);
      std::exit(0);  // runs the child's exit handlers, as a library's would
    }
    int status = 0;
    waitpid(child, &status, 0);
    total += WIFEXITED(status) ? WEXITSTATUS(status) : 100;
  } else if (mode == "affinity") {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    sched_setaffinity(0, sizeof(set), &set);
  } else if (mode == "thousand-threads") {
    std::atomic<long> work{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 1000; ++i) threads.emplace_back([&work, i] { work += i; });
    for (auto& t : threads) t.join();
    total += static_cast<double>(work.load());
  } else if (mode == "abort") {
    if (rank == 1) MPI_Abort(MPI_COMM_WORLD, 3);
    total += steps(MPI_COMM_WORLD, rank);  // rank 0 waits here until the abort ends it
  } else if (mode == "no-finalize") {
    if (rank == 0) std::printf("hostile_app %s: %.1f\n", mode.c_str(), total);
    return 0;
  } else if (mode == "sleep") {
    if (rank == 0) std::printf("hostile_app %s: ready\n", mode.c_str());
    std::fflush(stdout);
    sleep(30);
  }
  total += steps(MPI_COMM_WORLD, rank);
  if (rank == 0) std::printf("hostile_app %s: %.1f\n", mode.c_str(), total);
  std::fflush(stdout);
  if (mode == "late-finalize" && rank == 1) sleep(8);
  const int status = MPI_Finalize();
  if (mode == "outside") {
    int finalized = -1, length = 0;
    MPI_Finalized(&finalized);
    char library[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(library, &length);
    if (rank == 0)
      std::printf("after: finalized %d, library named: %s\n", finalized, length > 0 ? "yes" : "no");
  }
  return status;
}
