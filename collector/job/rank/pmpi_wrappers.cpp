// The MPI profiling interface of `corenoise job`: MPI_Init starts the
// rank's JobSession, MPI_Finalize reduces and reports (job_reduction.cpp);
// the blocking calls, listed once in mpi_calls.key, are wrapped by code
// the build writes from that list (mpi_calls.cmake, pmpi_records.h), each
// recording its entry and exit and calling the PMPI_ entry point. Loaded
// with LD_PRELOAD, these definitions come before the program's libmpi in
// the symbol search, so a program (or mpi4py) calling MPI_Allreduce
// reaches this one.
//
// A process that never calls MPI_Init (the launcher's helpers, a shell, a
// compiler subprocess inheriting LD_PRELOAD) only pays for the loading:
// there is no constructor, and every wrapper passes straight through while
// no session exists.
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "collector/job/rank/family_finalize.h"
#include "collector/job/rank/job_daemon.h"
#include "collector/job/rank/live_reduction.h"
#include "collector/job/rank/pmpi_state.h"
#include "collector/job/rank/program_mpi.h"

namespace corenoise {

JobProcess process;
thread_local bool is_main __attribute__((tls_model("initial-exec"))) = false;
thread_local int depth __attribute__((tls_model("initial-exec"))) = 0;

namespace {

// Open MPI's and MPICH's libmpi by soname: the program may have loaded
// the other family's (mpi4py built for Open MPI under mpiexec.mpich), and
// calling this library's PMPI_ with its handles would crash later, obscurely.
bool other_family_loaded() {
  const std::string_view family = CORENOISE_JOB_FAMILY;
  struct Search {
    std::string_view family;
    bool found;
  } search{family, false};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        const std::string_view name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        const bool openmpi = name.find("/libmpi.so.40") != std::string_view::npos;
        const bool mpich = name.find("/libmpich.so") != std::string_view::npos ||
                           name.find("/libmpi.so.12") != std::string_view::npos;
        if ((s->family == "mpich" && openmpi) || (s->family == "openmpi" && mpich)) s->found = true;
        return 0;
      },
      &search);
  return search.found;
}

// Before PMPI_Init: a program that loaded the other family's libmpi would
// reach this library's PMPI_Init with its own handles.
bool family_matches() {
  if (!other_family_loaded()) return true;
  std::fprintf(stderr,
               "corenoise job: this program uses the other MPI family's library than the %s "
               "launcher that started it; not measuring (run it with its own family's launcher)\n",
               CORENOISE_JOB_FAMILY);
  return false;
}

// The live reduction (live_reduction.h), only where someone reads its
// epochs: a live file, a page, a spill folder or a node's daemon. From the
// options alone, the same on every rank: making it is collective.
void start_live(const JobOptions& options) {
  const bool read = !options.live_path.empty() || !options.html_path.empty() ||
                    !options.spill_dir.empty() || !options.socket_path.empty();
  if (options.live_interval_seconds <= 0 || !read) return;
  process.live = new LiveReduction(process, options.live_interval_seconds);
  process.live->attach();
}

void start() {
  std::string warnings;
  JobOptions options = job_options_from(std::getenv, &warnings);
  PMPI_Comm_dup(MPI_COMM_WORLD, &process.comm);
  PMPI_Comm_rank(process.comm, &process.rank);
  PMPI_Comm_size(process.comm, &process.size);
  PMPI_Comm_split_type(process.comm, MPI_COMM_TYPE_SHARED, process.rank, MPI_INFO_NULL,
                       &process.node);
  PMPI_Comm_rank(process.node, &process.node_rank);
  // The library's own failures are returned to it, never fatal to the job
  // (a duplicate inherits MPI_COMM_WORLD's MPI_ERRORS_ARE_FATAL).
  PMPI_Comm_set_errhandler(process.comm, MPI_ERRORS_RETURN);
  PMPI_Comm_set_errhandler(process.node, MPI_ERRORS_RETURN);
  process.mpi_library_version = mpi_library_version();
  if (!warnings.empty() && process.rank == 0)
    std::fprintf(stderr, "corenoise job: %s\n", warnings.c_str());
  // The node's tasks before the first step, for naming what ran beside
  // the job (node_tasks.h); one rank per node pays for the scan.
  if (process.node_rank == 0) {
    process.tasks_at_start = scan_tasks(options.proc_root);
    process.interrupts_at_start = read_interrupt_tables(options.proc_root);
  }
  // Before the session's clock starts: the daemon will take no report of
  // more time than it saw this rank run (docs/control.md, "Threat model").
  // Its answer matters only at the end, where a refusal is said once a node.
  if (!options.socket_path.empty()) {
    send_job_line(options.socket_path, job_start_request(job_id(::getpid())));
  }
  process.session = new JobSession(std::move(options), process.size);
  const JobOptions& kept = process.session->options();
  if (!kept.spill_dir.empty()) {
    try {
      process.session->attach_spill(std::make_unique<SpillWriter>(
          kept.spill_dir, process.rank, process.size, CORENOISE_JOB_FAMILY, kept.program,
          process.session->cpus(), process.session->started_unix_seconds(),
          IntervalRecorder::kMaxStepBins));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "corenoise job: rank %d keeps no spill file: %s\n", process.rank,
                   e.what());
    }
  }
  start_live(kept);
  is_main = true;
  // A child of fork() is not the rank: it must neither sample into the
  // rank's spill file (a shared mapping) nor report at an MPI_Finalize of
  // its own. Its copy of the session is dropped, never used.
  static const bool registered = [] {
    ::pthread_atfork(nullptr, nullptr, [] {
      process.retired = process.session;
      process.session = nullptr;
      is_main = false;
    });
    return true;
  }();
  (void)registered;
  // Start together, so that set-up skew is not read as the first step's.
  PMPI_Barrier(process.comm);
}

// start() without letting an exception into the program's MPI_Init.
void start_safely() {
  try {
    start();
  } catch (const std::exception& e) {
    is_main = false;
    std::fprintf(stderr, "corenoise job: rank %d: not measuring: %s\n", process.rank, e.what());
  }
}

}  // namespace

bool measure_this_program() {
  // First, so that this library's PMPI_ calls (PMPI_Init the next) bind to
  // the program's MPI, wherever it was loaded.
  if (process.mpi_library.empty()) process.mpi_library = bind_program_mpi().value_or("");
  return family_matches();
}

void mpi_started() {
  // Once: a Fortran binding's MPI_Init may reach the C one (MPICH's does).
  if (process.session == nullptr && !is_main) start_safely();
}

void before_finalize() {
  if (process.session == nullptr || !is_main) return;
  bool settled = false;
  const double timeout = process.session->options().finalize_timeout_seconds;
  // Nothing may escape into the program's MPI_Finalize (mpi4py calls it
  // from an exit handler): a failure costs the report, never the job.
  try {
    // The live reduction's epoch under way first, on its own communicators,
    // then the final reduction, each within the timeout: a live reduction
    // that failed costs its wait, never the final report.
    if (process.live != nullptr) process.live->stop(MpiDeadline::after(timeout));
    settled = finish_job(process, MpiDeadline::after(timeout));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "corenoise job: rank %d: no report: %s\n", process.rank, e.what());
  }
  process.retired = process.session;
  process.session = nullptr;
  // The family's way round its MPI library's own finalize (MPICH's on UCX),
  // over the library's communicator, once every rank got this far; where
  // one did not, the finalize is the MPI library's own, as without corenoise.
  if (settled) settled = before_family_finalize(process.comm, MpiDeadline::after(timeout));
  // Freed before MPI's finalize, as a program's own should be, unless a
  // collective abandoned at the timeout is pending on them: Open MPI's
  // MPI_Finalize then progresses it on the freed communicator and crashes.
  if (settled) {
    PMPI_Comm_free(&process.node);
    PMPI_Comm_free(&process.comm);
  }
}

void after_finalize() { after_family_finalize(); }

}  // namespace corenoise

extern "C" {

CORENOISE_EXPORT int MPI_Init(int* argc, char*** argv) {
  const bool measure = corenoise::measure_this_program();
  const int result = PMPI_Init(argc, argv);
  if (result == MPI_SUCCESS && measure) corenoise::mpi_started();
  return result;
}

CORENOISE_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const bool measure = corenoise::measure_this_program();
  const int result = PMPI_Init_thread(argc, argv, required, provided);
  if (result == MPI_SUCCESS && measure) corenoise::mpi_started();
  return result;
}

CORENOISE_EXPORT int MPI_Finalize() {
  corenoise::before_finalize();
  const int result = PMPI_Finalize();
  corenoise::after_finalize();
  return result;
}

}  // extern "C"
