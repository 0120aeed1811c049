// The MPI profiling interface of `corenoise job`: each wrapped call records
// its entry and exit in the rank's JobSession and calls the PMPI_ entry
// point. Loaded with LD_PRELOAD, these definitions come before the
// program's libmpi in the symbol search, so a program (or mpi4py) calling
// MPI_Allreduce reaches this one.
//
// A process that never calls MPI_Init (the launcher's helpers, a shell, a
// compiler subprocess inheriting LD_PRELOAD) only pays for the loading:
// there is no constructor, and every wrapper passes straight through while
// no session exists.
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "collector/job/job_mpi.h"

namespace corenoise {
namespace {

// Never deleted: mpi4py calls MPI_Finalize from an exit handler, and the
// program's threads may still call MPI after static destructors ran.
JobProcess process;
// Only the thread that called MPI_Init records; `depth` keeps a wrapped
// call that the library implements with another wrapped call (an MPI
// library calling its own MPI_ names) from counting twice.
thread_local bool is_main __attribute__((tls_model("initial-exec"))) = false;
thread_local int depth __attribute__((tls_model("initial-exec"))) = 0;

JobSession* recording() { return is_main && depth == 0 ? process.session : nullptr; }

// Whether a collective on `comm` is a step: over all of the job's ranks.
MPI_Comm last_comm = MPI_COMM_NULL;
bool last_spans = false;
bool spans_job(MPI_Comm comm) {
  if (comm == MPI_COMM_WORLD) return true;
  if (comm != last_comm) {
    int result = MPI_UNEQUAL;
    PMPI_Comm_compare(comm, MPI_COMM_WORLD, &result);
    last_comm = comm;
    last_spans = result == MPI_IDENT || result == MPI_CONGRUENT;
  }
  return last_spans;
}

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

void start() {
  std::string warnings;
  JobOptions options = job_options_from(std::getenv, &warnings);
  PMPI_Comm_dup(MPI_COMM_WORLD, &process.comm);
  PMPI_Comm_rank(process.comm, &process.rank);
  PMPI_Comm_size(process.comm, &process.size);
  PMPI_Comm_split_type(process.comm, MPI_COMM_TYPE_SHARED, process.rank, MPI_INFO_NULL, &process.node);
  PMPI_Comm_rank(process.node, &process.node_rank);
  if (!warnings.empty() && process.rank == 0) std::fprintf(stderr, "corenoise job: %s\n", warnings.c_str());
  // The node's tasks before the first step, for naming what ran beside
  // the job (node_tasks.h); one rank per node pays for the scan.
  if (process.node_rank == 0) process.tasks_at_start = scan_tasks(options.proc_root);
  process.session = new JobSession(std::move(options));
  const JobOptions& kept = process.session->options();
  if (!kept.spill_dir.empty()) {
    try {
      process.session->attach_spill(std::make_unique<SpillWriter>(
          kept.spill_dir, process.rank, process.size, CORENOISE_JOB_FAMILY, kept.program,
          process.session->cpus(), process.session->started_unix_seconds(),
          IntervalRecorder::kMaxStepBins));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "corenoise job: rank %d keeps no spill file: %s\n", process.rank, e.what());
    }
  }
  is_main = true;
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

// The wrapped call between the session's enter and exit. `session` is
// recording(), checked by the caller so that a call that is not recorded
// (another thread, before MPI_Init) costs one test and touches nothing.
template <typename Call>
int recorded(JobSession& session, MpiCall which, void* return_address, bool step, Call&& call) {
  ++depth;
  session.enter();
  const int result = call();
  session.exit(which, reinterpret_cast<std::uintptr_t>(return_address), step);
  --depth;
  return result;
}

}  // namespace
}  // namespace corenoise

using corenoise::MpiCall;
using corenoise::recorded;
using corenoise::recording;
using corenoise::spans_job;

// The wrappers are the library's only exported symbols.
#define CORENOISE_EXPORT __attribute__((visibility("default")))

extern "C" {

CORENOISE_EXPORT int MPI_Init(int* argc, char*** argv) {
  const bool measure = corenoise::family_matches();
  const int result = PMPI_Init(argc, argv);
  if (result == MPI_SUCCESS && measure) corenoise::start_safely();
  return result;
}

CORENOISE_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const bool measure = corenoise::family_matches();
  const int result = PMPI_Init_thread(argc, argv, required, provided);
  if (result == MPI_SUCCESS && measure) corenoise::start_safely();
  return result;
}

CORENOISE_EXPORT int MPI_Finalize() {
  if (corenoise::process.session != nullptr && corenoise::is_main) {
    bool everyone = true;
    // Nothing may escape into the program's MPI_Finalize (mpi4py calls it
    // from an exit handler): a failure costs the report, never the job.
    try {
      everyone = corenoise::finish_job(corenoise::process);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "corenoise job: rank %d: no report: %s\n", corenoise::process.rank, e.what());
    }
    corenoise::process.session = nullptr;
    if (!everyone) {
      // A rank is gone: MPI_Finalize is collective and would wait for it
      // forever. The job's figures are written; let the process end.
      std::fprintf(stderr,
                   "corenoise job: rank %d: not every rank reached MPI_Finalize; returning "
                   "without finalizing MPI, which would wait for them forever\n",
                   corenoise::process.rank);
      return MPI_SUCCESS;
    }
  }
  return PMPI_Finalize();
}

CORENOISE_EXPORT int MPI_Comm_free(MPI_Comm* comm) {
  // The cache is the main thread's (spans_job runs there only).
  if (corenoise::is_main && comm != nullptr && *comm == corenoise::last_comm) {
    corenoise::last_comm = MPI_COMM_NULL;
  }
  return PMPI_Comm_free(comm);
}

// One wrapper per blocking call: NAME, whether it can be a step (a
// collective: its communicator), its parameters and its arguments.
#define CORENOISE_WRAP(kind, Name, params, args, step)                                 \
  CORENOISE_EXPORT int Name params {                                                   \
    corenoise::JobSession* session = recording();                                      \
    if (session == nullptr) return P##Name args;                                       \
    return recorded(*session, MpiCall::kind, __builtin_return_address(0), step,        \
                    [&] { return P##Name args; });                                     \
  }
// A step is a collective that makes every rank wait for the last to arrive
// (barrier, all-reduce, all-gather, all-to-all, reduce-scatter), over the
// whole job. A rooted or prefix collective (reduce, gather, scatter, bcast,
// scan) lets ranks leave before the last arrives, so "waited least"
// does not mean "arrived last" there: it is recorded as a wait, not a step.
#define CORENOISE_COLLECTIVE(kind, Name, params, args) CORENOISE_WRAP(kind, Name, params, args, spans_job(comm))
#define CORENOISE_ROOTED(kind, Name, params, args) CORENOISE_WRAP(kind, Name, params, args, false)
#define CORENOISE_BLOCKING(kind, Name, params, args) CORENOISE_WRAP(kind, Name, params, args, false)

CORENOISE_COLLECTIVE(barrier, MPI_Barrier, (MPI_Comm comm), (comm))
CORENOISE_ROOTED(bcast, MPI_Bcast, (void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm),
                     (buffer, count, type, root, comm))
CORENOISE_ROOTED(reduce, MPI_Reduce,
                     (const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm),
                     (send, recv, count, type, op, root, comm))
CORENOISE_COLLECTIVE(allreduce, MPI_Allreduce,
                     (const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm),
                     (send, recv, count, type, op, comm))
CORENOISE_ROOTED(gather, MPI_Gather,
                     (const void* send, int scount, MPI_Datatype stype, void* recv, int rcount, MPI_Datatype rtype,
                      int root, MPI_Comm comm),
                     (send, scount, stype, recv, rcount, rtype, root, comm))
CORENOISE_ROOTED(gatherv, MPI_Gatherv,
                     (const void* send, int scount, MPI_Datatype stype, void* recv, const int rcounts[],
                      const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm),
                     (send, scount, stype, recv, rcounts, displs, rtype, root, comm))
CORENOISE_COLLECTIVE(allgather, MPI_Allgather,
                     (const void* send, int scount, MPI_Datatype stype, void* recv, int rcount, MPI_Datatype rtype,
                      MPI_Comm comm),
                     (send, scount, stype, recv, rcount, rtype, comm))
CORENOISE_COLLECTIVE(allgatherv, MPI_Allgatherv,
                     (const void* send, int scount, MPI_Datatype stype, void* recv, const int rcounts[],
                      const int displs[], MPI_Datatype rtype, MPI_Comm comm),
                     (send, scount, stype, recv, rcounts, displs, rtype, comm))
CORENOISE_ROOTED(scatter, MPI_Scatter,
                     (const void* send, int scount, MPI_Datatype stype, void* recv, int rcount, MPI_Datatype rtype,
                      int root, MPI_Comm comm),
                     (send, scount, stype, recv, rcount, rtype, root, comm))
CORENOISE_ROOTED(scatterv, MPI_Scatterv,
                     (const void* send, const int scounts[], const int displs[], MPI_Datatype stype, void* recv,
                      int rcount, MPI_Datatype rtype, int root, MPI_Comm comm),
                     (send, scounts, displs, stype, recv, rcount, rtype, root, comm))
CORENOISE_COLLECTIVE(alltoall, MPI_Alltoall,
                     (const void* send, int scount, MPI_Datatype stype, void* recv, int rcount, MPI_Datatype rtype,
                      MPI_Comm comm),
                     (send, scount, stype, recv, rcount, rtype, comm))
CORENOISE_COLLECTIVE(alltoallv, MPI_Alltoallv,
                     (const void* send, const int scounts[], const int sdispls[], MPI_Datatype stype, void* recv,
                      const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm),
                     (send, scounts, sdispls, stype, recv, rcounts, rdispls, rtype, comm))
CORENOISE_COLLECTIVE(alltoallw, MPI_Alltoallw,
                     (const void* send, const int scounts[], const int sdispls[], const MPI_Datatype stypes[],
                      void* recv, const int rcounts[], const int rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm),
                     (send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, comm))
CORENOISE_COLLECTIVE(reduce_scatter, MPI_Reduce_scatter,
                     (const void* send, void* recv, const int rcounts[], MPI_Datatype type, MPI_Op op, MPI_Comm comm),
                     (send, recv, rcounts, type, op, comm))
CORENOISE_COLLECTIVE(reduce_scatter_block, MPI_Reduce_scatter_block,
                     (const void* send, void* recv, int rcount, MPI_Datatype type, MPI_Op op, MPI_Comm comm),
                     (send, recv, rcount, type, op, comm))
CORENOISE_ROOTED(scan, MPI_Scan,
                     (const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm),
                     (send, recv, count, type, op, comm))
CORENOISE_ROOTED(exscan, MPI_Exscan,
                     (const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm),
                     (send, recv, count, type, op, comm))

CORENOISE_BLOCKING(wait, MPI_Wait, (MPI_Request* request, MPI_Status* status), (request, status))
CORENOISE_BLOCKING(waitall, MPI_Waitall, (int count, MPI_Request requests[], MPI_Status statuses[]),
                   (count, requests, statuses))
CORENOISE_BLOCKING(waitany, MPI_Waitany, (int count, MPI_Request requests[], int* index, MPI_Status* status),
                   (count, requests, index, status))
CORENOISE_BLOCKING(waitsome, MPI_Waitsome,
                   (int count, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]),
                   (count, requests, outcount, indices, statuses))
CORENOISE_BLOCKING(sendrecv, MPI_Sendrecv,
                   (const void* send, int scount, MPI_Datatype stype, int dest, int stag, void* recv, int rcount,
                    MPI_Datatype rtype, int source, int rtag, MPI_Comm comm, MPI_Status* status),
                   (send, scount, stype, dest, stag, recv, rcount, rtype, source, rtag, comm, status))
CORENOISE_BLOCKING(sendrecv_replace, MPI_Sendrecv_replace,
                   (void* buffer, int count, MPI_Datatype type, int dest, int stag, int source, int rtag,
                    MPI_Comm comm, MPI_Status* status),
                   (buffer, count, type, dest, stag, source, rtag, comm, status))
CORENOISE_BLOCKING(recv, MPI_Recv,
                   (void* buffer, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status),
                   (buffer, count, type, source, tag, comm, status))
CORENOISE_BLOCKING(probe, MPI_Probe, (int source, int tag, MPI_Comm comm, MPI_Status* status),
                   (source, tag, comm, status))

#if MPI_VERSION >= 4
// MPI-4's large-count forms (mpi4py >= 4 calls MPI_Allreduce_c and friends
// whenever the library has them).
CORENOISE_ROOTED(bcast, MPI_Bcast_c, (void* buffer, MPI_Count count, MPI_Datatype type, int root, MPI_Comm comm),
                     (buffer, count, type, root, comm))
CORENOISE_ROOTED(reduce, MPI_Reduce_c,
                     (const void* send, void* recv, MPI_Count count, MPI_Datatype type, MPI_Op op, int root,
                      MPI_Comm comm),
                     (send, recv, count, type, op, root, comm))
CORENOISE_COLLECTIVE(allreduce, MPI_Allreduce_c,
                     (const void* send, void* recv, MPI_Count count, MPI_Datatype type, MPI_Op op, MPI_Comm comm),
                     (send, recv, count, type, op, comm))
CORENOISE_ROOTED(gather, MPI_Gather_c,
                     (const void* send, MPI_Count scount, MPI_Datatype stype, void* recv, MPI_Count rcount,
                      MPI_Datatype rtype, int root, MPI_Comm comm),
                     (send, scount, stype, recv, rcount, rtype, root, comm))
CORENOISE_ROOTED(gatherv, MPI_Gatherv_c,
                     (const void* send, MPI_Count scount, MPI_Datatype stype, void* recv, const MPI_Count rcounts[],
                      const MPI_Aint displs[], MPI_Datatype rtype, int root, MPI_Comm comm),
                     (send, scount, stype, recv, rcounts, displs, rtype, root, comm))
CORENOISE_COLLECTIVE(allgather, MPI_Allgather_c,
                     (const void* send, MPI_Count scount, MPI_Datatype stype, void* recv, MPI_Count rcount,
                      MPI_Datatype rtype, MPI_Comm comm),
                     (send, scount, stype, recv, rcount, rtype, comm))
CORENOISE_COLLECTIVE(allgatherv, MPI_Allgatherv_c,
                     (const void* send, MPI_Count scount, MPI_Datatype stype, void* recv, const MPI_Count rcounts[],
                      const MPI_Aint displs[], MPI_Datatype rtype, MPI_Comm comm),
                     (send, scount, stype, recv, rcounts, displs, rtype, comm))
CORENOISE_ROOTED(scatter, MPI_Scatter_c,
                     (const void* send, MPI_Count scount, MPI_Datatype stype, void* recv, MPI_Count rcount,
                      MPI_Datatype rtype, int root, MPI_Comm comm),
                     (send, scount, stype, recv, rcount, rtype, root, comm))
CORENOISE_ROOTED(scatterv, MPI_Scatterv_c,
                     (const void* send, const MPI_Count scounts[], const MPI_Aint displs[], MPI_Datatype stype,
                      void* recv, MPI_Count rcount, MPI_Datatype rtype, int root, MPI_Comm comm),
                     (send, scounts, displs, stype, recv, rcount, rtype, root, comm))
CORENOISE_COLLECTIVE(alltoall, MPI_Alltoall_c,
                     (const void* send, MPI_Count scount, MPI_Datatype stype, void* recv, MPI_Count rcount,
                      MPI_Datatype rtype, MPI_Comm comm),
                     (send, scount, stype, recv, rcount, rtype, comm))
CORENOISE_COLLECTIVE(alltoallv, MPI_Alltoallv_c,
                     (const void* send, const MPI_Count scounts[], const MPI_Aint sdispls[], MPI_Datatype stype,
                      void* recv, const MPI_Count rcounts[], const MPI_Aint rdispls[], MPI_Datatype rtype,
                      MPI_Comm comm),
                     (send, scounts, sdispls, stype, recv, rcounts, rdispls, rtype, comm))
CORENOISE_COLLECTIVE(alltoallw, MPI_Alltoallw_c,
                     (const void* send, const MPI_Count scounts[], const MPI_Aint sdispls[],
                      const MPI_Datatype stypes[], void* recv, const MPI_Count rcounts[], const MPI_Aint rdispls[],
                      const MPI_Datatype rtypes[], MPI_Comm comm),
                     (send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, comm))
CORENOISE_COLLECTIVE(reduce_scatter, MPI_Reduce_scatter_c,
                     (const void* send, void* recv, const MPI_Count rcounts[], MPI_Datatype type, MPI_Op op,
                      MPI_Comm comm),
                     (send, recv, rcounts, type, op, comm))
CORENOISE_COLLECTIVE(reduce_scatter_block, MPI_Reduce_scatter_block_c,
                     (const void* send, void* recv, MPI_Count rcount, MPI_Datatype type, MPI_Op op, MPI_Comm comm),
                     (send, recv, rcount, type, op, comm))
CORENOISE_ROOTED(scan, MPI_Scan_c,
                     (const void* send, void* recv, MPI_Count count, MPI_Datatype type, MPI_Op op, MPI_Comm comm),
                     (send, recv, count, type, op, comm))
CORENOISE_ROOTED(exscan, MPI_Exscan_c,
                     (const void* send, void* recv, MPI_Count count, MPI_Datatype type, MPI_Op op, MPI_Comm comm),
                     (send, recv, count, type, op, comm))
CORENOISE_BLOCKING(sendrecv, MPI_Sendrecv_c,
                   (const void* send, MPI_Count scount, MPI_Datatype stype, int dest, int stag, void* recv,
                    MPI_Count rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm, MPI_Status* status),
                   (send, scount, stype, dest, stag, recv, rcount, rtype, source, rtag, comm, status))
CORENOISE_BLOCKING(sendrecv_replace, MPI_Sendrecv_replace_c,
                   (void* buffer, MPI_Count count, MPI_Datatype type, int dest, int stag, int source, int rtag,
                    MPI_Comm comm, MPI_Status* status),
                   (buffer, count, type, dest, stag, source, rtag, comm, status))
CORENOISE_BLOCKING(recv, MPI_Recv_c,
                   (void* buffer, MPI_Count count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                    MPI_Status* status),
                   (buffer, count, type, source, tag, comm, status))
#endif

}  // extern "C"
