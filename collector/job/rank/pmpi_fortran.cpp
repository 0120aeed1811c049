// The Fortran entry points of `corenoise job` (pmpi_state.h). MPICH's
// Fortran binding (libmpichfort) calls the C MPI_ functions, which the C
// wrappers already record; Open MPI's (libmpi_mpifh, libmpi_usempif08)
// calls PMPI_ directly, so a Fortran program under Open MPI would be seen
// making no MPI call at all. These wrap what a Fortran program calls:
//   mpi_NAME_      gfortran's and ifort's name for `call MPI_NAME` with
//                  mpif.h or `use mpi`;
//   ompi_NAME_f    what Open MPI's `use mpi_f08` module calls, by name,
//                  from libmpi_usempif08 (Open MPI only).
// Each records the call and calls the definition it displaced, found at
// the first call (program_mpi.h): the MPI library's own, whichever family;
// nothing is linked against a Fortran library. Under MPICH the C
// function it reaches is a nested call (pmpi_state.h's depth) and is not
// recorded twice.
//
// The blocking calls most codes use are wrapped (the collectives that are
// steps, bcast and reduce, blocking sends and receives, Sendrecv, Wait,
// Waitall) and the nonblocking sends and receives, for their peers. A
// Fortran MPI_ANY_SOURCE receive's sender is read from its status unless
// the status is ignored (then uncharged); a Fortran Waitall's
// MPI_ANY_SOURCE requests are uncharged.
#include "collector/job/rank/pmpi_state.h"
#include "collector/job/rank/program_mpi.h"

namespace corenoise {
namespace {

MPI_Comm comm_of(const MPI_Fint* comm) { return PMPI_Comm_f2c(*comm); }

int job_rank(const MPI_Fint* comm, int rank) { return process.comms.job_rank(comm_of(comm), rank); }

bool spans_job(const MPI_Fint* comm) { return process.comms.spans_job(comm_of(comm)); }

// MPI_F_STATUS_IGNORE is a variable of the MPI library, in both families.
// Read through the dynamic linker: the MPICH-family library is bound to
// its MPI only at run time (program_mpi.h), where a load-time reference to
// a variable would stop every process it is preloaded into from starting.
MPI_Fint* f_status_ignore() {
  static MPI_Fint* const* variable =
      static_cast<MPI_Fint* const*>(displaced("MPI_F_STATUS_IGNORE"));
  return variable != nullptr ? *variable : nullptr;
}

// A Fortran receive's sender, in the job's ranks.
int receive_peer(const MPI_Fint* comm, const MPI_Fint* source, MPI_Fint* status) {
  if (*source != MPI_ANY_SOURCE) return job_rank(comm, *source);
  if (status == nullptr || status == f_status_ignore()) return -1;
  MPI_Status c;
  if (PMPI_Status_f2c(status, &c) != MPI_SUCCESS) return -1;
  return job_rank(comm, c.MPI_SOURCE);
}

// The call, recorded; Fortran reports its error in *ierr.
template <typename Call, typename Peers>
void recorded_fortran(MpiCall which, void* return_address, bool step, const MPI_Fint* ierr,
                      Call&& call, Peers&& peers) {
  JobSession* session = recording();
  if (session == nullptr) {
    call();
    return;
  }
  recorded(
      *session, which, return_address, step,
      [&] {
        call();
        return ierr != nullptr ? static_cast<int>(*ierr) : MPI_SUCCESS;
      },
      std::forward<Peers>(peers));
}

}  // namespace
}  // namespace corenoise

using corenoise::MpiCall;
using corenoise::PeerList;
using corenoise::recorded_fortran;

// Declares `next`, the definition that `name` (a string) displaced, of type
// void(*)`params`; when none is found, MPI_ERR_INTERN in *ierr and a return.
// Looked up again while not found: never a null cached for good.
#define CORENOISE_FORTRAN_NEXT(name, params)                                                     \
  using Fn = void(*) params;                                                                     \
  static const Fn cached = reinterpret_cast<Fn>(corenoise::displaced(name));                     \
  const Fn next = cached != nullptr ? cached : reinterpret_cast<Fn>(corenoise::displaced(name)); \
  if (next == nullptr) {                                                                         \
    *ierr = MPI_ERR_INTERN;                                                                      \
    return;                                                                                      \
  }                                                                                              \
  static_assert(true)

// NAME's two Fortran entry points; `Kind` its MpiCall, `step` and `peers`
// expressions of the parameters, evaluated only while recording.
#define CORENOISE_FORTRAN_ONE(symbol, Kind, params, args, step, peers)                      \
  CORENOISE_EXPORT void symbol params {                                                     \
    CORENOISE_FORTRAN_NEXT(#symbol, params);                                                \
    const bool on = corenoise::recording() != nullptr;                                      \
    recorded_fortran(                                                                       \
        MpiCall::Kind, __builtin_return_address(0), on && (step), ierr, [&] { next args; }, \
        peers);                                                                             \
  }
#if defined(OPEN_MPI)
#define CORENOISE_FORTRAN(name, Kind, params, args, step, peers)        \
  CORENOISE_FORTRAN_ONE(mpi_##name##_, Kind, params, args, step, peers) \
  CORENOISE_FORTRAN_ONE(ompi_##name##_f, Kind, params, args, step, peers)
#else
#define CORENOISE_FORTRAN(name, Kind, params, args, step, peers) \
  CORENOISE_FORTRAN_ONE(mpi_##name##_, Kind, params, args, step, peers)
#endif

#define CORENOISE_NO_PEERS corenoise::kNoPeers
#define CORENOISE_TO(rank_param) \
  [&](PeerList& peers) { peers.add(corenoise::job_rank(comm, *rank_param)); }

extern "C" {

CORENOISE_FORTRAN(barrier, Barrier, (MPI_Fint * comm, MPI_Fint* ierr), (comm, ierr),
                  corenoise::spans_job(comm), CORENOISE_NO_PEERS)
CORENOISE_FORTRAN(allreduce, Allreduce,
                  (void* send, void* recv, MPI_Fint* count, MPI_Fint* type, MPI_Fint* op,
                   MPI_Fint* comm, MPI_Fint* ierr),
                  (send, recv, count, type, op, comm, ierr), corenoise::spans_job(comm),
                  CORENOISE_NO_PEERS)
CORENOISE_FORTRAN(allgather, Allgather,
                  (void* send, MPI_Fint* scount, MPI_Fint* stype, void* recv, MPI_Fint* rcount,
                   MPI_Fint* rtype, MPI_Fint* comm, MPI_Fint* ierr),
                  (send, scount, stype, recv, rcount, rtype, comm, ierr),
                  corenoise::spans_job(comm), CORENOISE_NO_PEERS)
CORENOISE_FORTRAN(alltoall, Alltoall,
                  (void* send, MPI_Fint* scount, MPI_Fint* stype, void* recv, MPI_Fint* rcount,
                   MPI_Fint* rtype, MPI_Fint* comm, MPI_Fint* ierr),
                  (send, scount, stype, recv, rcount, rtype, comm, ierr),
                  corenoise::spans_job(comm), CORENOISE_NO_PEERS)
CORENOISE_FORTRAN(bcast, Bcast,
                  (void* buffer, MPI_Fint* count, MPI_Fint* type, MPI_Fint* root, MPI_Fint* comm,
                   MPI_Fint* ierr),
                  (buffer, count, type, root, comm, ierr), false, CORENOISE_NO_PEERS)
CORENOISE_FORTRAN(reduce, Reduce,
                  (void* send, void* recv, MPI_Fint* count, MPI_Fint* type, MPI_Fint* op,
                   MPI_Fint* root, MPI_Fint* comm, MPI_Fint* ierr),
                  (send, recv, count, type, op, root, comm, ierr), false, CORENOISE_NO_PEERS)
CORENOISE_FORTRAN(send, Send,
                  (void* buf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* dest, MPI_Fint* tag,
                   MPI_Fint* comm, MPI_Fint* ierr),
                  (buf, count, type, dest, tag, comm, ierr), false, CORENOISE_TO(dest))
CORENOISE_FORTRAN(ssend, Ssend,
                  (void* buf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* dest, MPI_Fint* tag,
                   MPI_Fint* comm, MPI_Fint* ierr),
                  (buf, count, type, dest, tag, comm, ierr), false, CORENOISE_TO(dest))
CORENOISE_FORTRAN(recv, Recv,
                  (void* buf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* source, MPI_Fint* tag,
                   MPI_Fint* comm, MPI_Fint* status, MPI_Fint* ierr),
                  (buf, count, type, source, tag, comm, status, ierr), false, [&](PeerList& peers) {
                    peers.add(corenoise::receive_peer(comm, source, status));
                  })
CORENOISE_FORTRAN(sendrecv, Sendrecv,
                  (void* send, MPI_Fint* scount, MPI_Fint* stype, MPI_Fint* dest, MPI_Fint* stag,
                   void* recv, MPI_Fint* rcount, MPI_Fint* rtype, MPI_Fint* source, MPI_Fint* rtag,
                   MPI_Fint* comm, MPI_Fint* status, MPI_Fint* ierr),
                  (send, scount, stype, dest, stag, recv, rcount, rtype, source, rtag, comm, status,
                   ierr),
                  false, [&](PeerList& peers) {
                    peers.add(corenoise::receive_peer(comm, source, status));
                  })

}  // extern "C"

namespace corenoise {
namespace {

// A Wait's or Waitall's peers: those of its requests still pending at
// entry, taken before the call (it frees the handles); at most
// PeerList::kMax.
PeerList pending_peers(int count, const MPI_Fint* requests) {
  PeerList peers;
  JobSession* session = recording();
  if (session == nullptr) return peers;
  for (int i = 0; i < count; ++i) {
    const MPI_Request request = PMPI_Request_f2c(requests[i]);
    const RequestPeers::Pending pending = session->requests().take(handle_key(request));
    if (pending.peer == RequestPeers::kUnknown || pending.peer == RequestPeers::kAnySource) {
      if (pending.peer == RequestPeers::kAnySource) peers.add(-1);
      continue;
    }
    int done = 0;
    if (count > 1) PMPI_Request_get_status(request, &done, MPI_STATUS_IGNORE);
    if (done == 0) peers.add(pending.peer);
  }
  return peers;
}

// A new request's peer, after MPI_Isend or MPI_Irecv returned.
void remember(const MPI_Fint* request, const MPI_Fint* comm, const MPI_Fint* rank, bool receive) {
  JobSession* session = recording();
  if (session == nullptr) return;
  const MPI_Request c = PMPI_Request_f2c(*request);
  if (c == MPI_REQUEST_NULL) return;
  if (receive && *rank == MPI_ANY_SOURCE) {
    // As the C wrapper does (pmpi_records.h): the job's ranks as
    // MPI_COMM_WORLD, which outlives the program's communicator.
    const MPI_Comm c_comm = comm_of(comm);
    const MPI_Comm ranks_of = process.comms.same_ranks_as_job(c_comm) ? MPI_COMM_WORLD : c_comm;
    session->requests().add(handle_key(c), RequestPeers::kAnySource, handle_key(ranks_of));
  } else {
    session->requests().add(handle_key(c), job_rank(comm, *rank));
  }
}

}  // namespace
}  // namespace corenoise

extern "C" {

// MPI_Wait (`count` 1) and MPI_Waitall; `params` and `args` its own.
#define CORENOISE_FORTRAN_WAIT(symbol, Kind, params, args, count)                    \
  CORENOISE_EXPORT void symbol params {                                              \
    CORENOISE_FORTRAN_NEXT(#symbol, params);                                         \
    const PeerList pending = corenoise::pending_peers(count, requests);              \
    recorded_fortran(                                                                \
        MpiCall::Kind, __builtin_return_address(0), false, ierr, [&] { next args; }, \
        [&](PeerList& peers) {                                                       \
          for (int peer : pending.span()) peers.add(peer);                           \
        });                                                                          \
  }
#define CORENOISE_FORTRAN_WAITS(prefix, suffix)                                      \
  CORENOISE_FORTRAN_WAIT(prefix##wait##suffix, Wait,                                 \
                         (MPI_Fint * requests, MPI_Fint * status, MPI_Fint * ierr),  \
                         (requests, status, ierr), 1)                                \
  CORENOISE_FORTRAN_WAIT(                                                            \
      prefix##waitall##suffix, Waitall,                                              \
      (MPI_Fint * count, MPI_Fint * requests, MPI_Fint * statuses, MPI_Fint * ierr), \
      (count, requests, statuses, ierr), *count)
// Not waits: the call, then its request's peer remembered.
#define CORENOISE_FORTRAN_START(symbol, receive)                                                   \
  CORENOISE_EXPORT void symbol(void* buf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* rank,         \
                               MPI_Fint* tag, MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr) { \
    CORENOISE_FORTRAN_NEXT(#symbol, (void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, \
                                     MPI_Fint*, MPI_Fint*));                                       \
    next(buf, count, type, rank, tag, comm, request, ierr);                                        \
    if (*ierr == MPI_SUCCESS) corenoise::remember(request, comm, rank, receive);                   \
  }

// MPI_Init, MPI_Init_thread and MPI_Finalize, as the C ones do.
#define CORENOISE_FORTRAN_LIFECYCLE(prefix, suffix)                                           \
  CORENOISE_EXPORT void prefix##init##suffix(MPI_Fint* ierr) {                                \
    CORENOISE_FORTRAN_NEXT(#prefix "init" #suffix, (MPI_Fint*));                              \
    const bool measure = corenoise::measure_this_program();                                   \
    next(ierr);                                                                               \
    if (*ierr == MPI_SUCCESS && measure) corenoise::mpi_started();                            \
  }                                                                                           \
  CORENOISE_EXPORT void prefix##init_thread##suffix(MPI_Fint* required, MPI_Fint* provided,   \
                                                    MPI_Fint* ierr) {                         \
    CORENOISE_FORTRAN_NEXT(#prefix "init_thread" #suffix, (MPI_Fint*, MPI_Fint*, MPI_Fint*)); \
    const bool measure = corenoise::measure_this_program();                                   \
    next(required, provided, ierr);                                                           \
    if (*ierr == MPI_SUCCESS && measure) corenoise::mpi_started();                            \
  }                                                                                           \
  CORENOISE_EXPORT void prefix##finalize##suffix(MPI_Fint* ierr) {                            \
    CORENOISE_FORTRAN_NEXT(#prefix "finalize" #suffix, (MPI_Fint*));                          \
    corenoise::before_finalize();                                                             \
    next(ierr);                                                                               \
  }

CORENOISE_FORTRAN_LIFECYCLE(mpi_, _)
CORENOISE_FORTRAN_WAITS(mpi_, _)
CORENOISE_FORTRAN_START(mpi_isend_, false)
CORENOISE_FORTRAN_START(mpi_irecv_, true)
#if defined(OPEN_MPI)
CORENOISE_FORTRAN_LIFECYCLE(ompi_, _f)
CORENOISE_FORTRAN_WAITS(ompi_, _f)
CORENOISE_FORTRAN_START(ompi_isend_f, false)
CORENOISE_FORTRAN_START(ompi_irecv_f, true)
#endif

}  // extern "C"
