// The collective wrappers of `corenoise job` (pmpi_state.h): one per
// blocking collective, with its large-count (_c) form. A collective over
// a communicator spanning the whole job is a step (mpi_calls.h's roles).
#include "collector/job/pmpi_state.h"

using corenoise::MpiCall;
using corenoise::recorded;
using corenoise::recording;

namespace {
bool spans_job(MPI_Comm comm) { return corenoise::process.comms.spans_job(comm); }
}  // namespace

extern "C" {

// NAME's wrapper; `step`: whether this call is a step.
#define CORENOISE_WRAP(kind, Name, params, args, step)                                            \
  CORENOISE_EXPORT int Name params {                                                              \
    corenoise::JobSession* session = recording();                                                 \
    if (session == nullptr) return P##Name args;                                                  \
    return recorded(                                                                              \
        *session, MpiCall::kind, __builtin_return_address(0), step, [&] { return P##Name args; }, \
        corenoise::kNoPeers);                                                                     \
  }
#define CORENOISE_COLLECTIVE(kind, Name, params, args) \
  CORENOISE_WRAP(kind, Name, params, args, spans_job(comm))
#define CORENOISE_ROOTED(kind, Name, params, args) CORENOISE_WRAP(kind, Name, params, args, false)

CORENOISE_COLLECTIVE(Barrier, MPI_Barrier, (MPI_Comm comm), (comm))
CORENOISE_ROOTED(Bcast, MPI_Bcast,
                 (void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm),
                 (buffer, count, type, root, comm))
CORENOISE_ROOTED(Reduce, MPI_Reduce,
                 (const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, int root,
                  MPI_Comm comm),
                 (send, recv, count, type, op, root, comm))
CORENOISE_COLLECTIVE(Allreduce, MPI_Allreduce,
                     (const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                      MPI_Comm comm),
                     (send, recv, count, type, op, comm))
CORENOISE_ROOTED(Gather, MPI_Gather,
                 (const void* send, int scount, MPI_Datatype stype, void* recv, int rcount,
                  MPI_Datatype rtype, int root, MPI_Comm comm),
                 (send, scount, stype, recv, rcount, rtype, root, comm))
CORENOISE_ROOTED(Gatherv, MPI_Gatherv,
                 (const void* send, int scount, MPI_Datatype stype, void* recv, const int rcounts[],
                  const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm),
                 (send, scount, stype, recv, rcounts, displs, rtype, root, comm))
CORENOISE_COLLECTIVE(Allgather, MPI_Allgather,
                     (const void* send, int scount, MPI_Datatype stype, void* recv, int rcount,
                      MPI_Datatype rtype, MPI_Comm comm),
                     (send, scount, stype, recv, rcount, rtype, comm))
CORENOISE_COLLECTIVE(Allgatherv, MPI_Allgatherv,
                     (const void* send, int scount, MPI_Datatype stype, void* recv,
                      const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm),
                     (send, scount, stype, recv, rcounts, displs, rtype, comm))
CORENOISE_ROOTED(Scatter, MPI_Scatter,
                 (const void* send, int scount, MPI_Datatype stype, void* recv, int rcount,
                  MPI_Datatype rtype, int root, MPI_Comm comm),
                 (send, scount, stype, recv, rcount, rtype, root, comm))
CORENOISE_ROOTED(Scatterv, MPI_Scatterv,
                 (const void* send, const int scounts[], const int displs[], MPI_Datatype stype,
                  void* recv, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm),
                 (send, scounts, displs, stype, recv, rcount, rtype, root, comm))
CORENOISE_COLLECTIVE(Alltoall, MPI_Alltoall,
                     (const void* send, int scount, MPI_Datatype stype, void* recv, int rcount,
                      MPI_Datatype rtype, MPI_Comm comm),
                     (send, scount, stype, recv, rcount, rtype, comm))
CORENOISE_COLLECTIVE(Alltoallv, MPI_Alltoallv,
                     (const void* send, const int scounts[], const int sdispls[],
                      MPI_Datatype stype, void* recv, const int rcounts[], const int rdispls[],
                      MPI_Datatype rtype, MPI_Comm comm),
                     (send, scounts, sdispls, stype, recv, rcounts, rdispls, rtype, comm))
CORENOISE_COLLECTIVE(Alltoallw, MPI_Alltoallw,
                     (const void* send, const int scounts[], const int sdispls[],
                      const MPI_Datatype stypes[], void* recv, const int rcounts[],
                      const int rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm),
                     (send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, comm))
CORENOISE_COLLECTIVE(Reduce_scatter, MPI_Reduce_scatter,
                     (const void* send, void* recv, const int rcounts[], MPI_Datatype type,
                      MPI_Op op, MPI_Comm comm),
                     (send, recv, rcounts, type, op, comm))
CORENOISE_COLLECTIVE(Reduce_scatter_block, MPI_Reduce_scatter_block,
                     (const void* send, void* recv, int rcount, MPI_Datatype type, MPI_Op op,
                      MPI_Comm comm),
                     (send, recv, rcount, type, op, comm))
CORENOISE_ROOTED(Scan, MPI_Scan,
                 (const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm),
                 (send, recv, count, type, op, comm))
CORENOISE_ROOTED(Exscan, MPI_Exscan,
                 (const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm),
                 (send, recv, count, type, op, comm))

#if MPI_VERSION >= 4
// MPI-4's large-count forms (mpi4py >= 4 calls MPI_Allreduce_c and friends
// whenever the library has them).
CORENOISE_ROOTED(Bcast, MPI_Bcast_c,
                 (void* buffer, MPI_Count count, MPI_Datatype type, int root, MPI_Comm comm),
                 (buffer, count, type, root, comm))
CORENOISE_ROOTED(Reduce, MPI_Reduce_c,
                 (const void* send, void* recv, MPI_Count count, MPI_Datatype type, MPI_Op op,
                  int root, MPI_Comm comm),
                 (send, recv, count, type, op, root, comm))
CORENOISE_COLLECTIVE(Allreduce, MPI_Allreduce_c,
                     (const void* send, void* recv, MPI_Count count, MPI_Datatype type, MPI_Op op,
                      MPI_Comm comm),
                     (send, recv, count, type, op, comm))
CORENOISE_ROOTED(Gather, MPI_Gather_c,
                 (const void* send, MPI_Count scount, MPI_Datatype stype, void* recv,
                  MPI_Count rcount, MPI_Datatype rtype, int root, MPI_Comm comm),
                 (send, scount, stype, recv, rcount, rtype, root, comm))
CORENOISE_ROOTED(Gatherv, MPI_Gatherv_c,
                 (const void* send, MPI_Count scount, MPI_Datatype stype, void* recv,
                  const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype, int root,
                  MPI_Comm comm),
                 (send, scount, stype, recv, rcounts, displs, rtype, root, comm))
CORENOISE_COLLECTIVE(Allgather, MPI_Allgather_c,
                     (const void* send, MPI_Count scount, MPI_Datatype stype, void* recv,
                      MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm),
                     (send, scount, stype, recv, rcount, rtype, comm))
CORENOISE_COLLECTIVE(Allgatherv, MPI_Allgatherv_c,
                     (const void* send, MPI_Count scount, MPI_Datatype stype, void* recv,
                      const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype,
                      MPI_Comm comm),
                     (send, scount, stype, recv, rcounts, displs, rtype, comm))
CORENOISE_ROOTED(Scatter, MPI_Scatter_c,
                 (const void* send, MPI_Count scount, MPI_Datatype stype, void* recv,
                  MPI_Count rcount, MPI_Datatype rtype, int root, MPI_Comm comm),
                 (send, scount, stype, recv, rcount, rtype, root, comm))
CORENOISE_ROOTED(Scatterv, MPI_Scatterv_c,
                 (const void* send, const MPI_Count scounts[], const MPI_Aint displs[],
                  MPI_Datatype stype, void* recv, MPI_Count rcount, MPI_Datatype rtype, int root,
                  MPI_Comm comm),
                 (send, scounts, displs, stype, recv, rcount, rtype, root, comm))
CORENOISE_COLLECTIVE(Alltoall, MPI_Alltoall_c,
                     (const void* send, MPI_Count scount, MPI_Datatype stype, void* recv,
                      MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm),
                     (send, scount, stype, recv, rcount, rtype, comm))
CORENOISE_COLLECTIVE(Alltoallv, MPI_Alltoallv_c,
                     (const void* send, const MPI_Count scounts[], const MPI_Aint sdispls[],
                      MPI_Datatype stype, void* recv, const MPI_Count rcounts[],
                      const MPI_Aint rdispls[], MPI_Datatype rtype, MPI_Comm comm),
                     (send, scounts, sdispls, stype, recv, rcounts, rdispls, rtype, comm))
CORENOISE_COLLECTIVE(Alltoallw, MPI_Alltoallw_c,
                     (const void* send, const MPI_Count scounts[], const MPI_Aint sdispls[],
                      const MPI_Datatype stypes[], void* recv, const MPI_Count rcounts[],
                      const MPI_Aint rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm),
                     (send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, comm))
CORENOISE_COLLECTIVE(Reduce_scatter, MPI_Reduce_scatter_c,
                     (const void* send, void* recv, const MPI_Count rcounts[], MPI_Datatype type,
                      MPI_Op op, MPI_Comm comm),
                     (send, recv, rcounts, type, op, comm))
CORENOISE_COLLECTIVE(Reduce_scatter_block, MPI_Reduce_scatter_block_c,
                     (const void* send, void* recv, MPI_Count rcount, MPI_Datatype type, MPI_Op op,
                      MPI_Comm comm),
                     (send, recv, rcount, type, op, comm))
CORENOISE_ROOTED(Scan, MPI_Scan_c,
                 (const void* send, void* recv, MPI_Count count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm),
                 (send, recv, count, type, op, comm))
CORENOISE_ROOTED(Exscan, MPI_Exscan_c,
                 (const void* send, void* recv, MPI_Count count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm),
                 (send, recv, count, type, op, comm))
#endif

}  // extern "C"
