// The point-to-point wrappers of `corenoise job` (pmpi_state.h): the
// blocking receives and sends and the calls that wait for requests are
// recorded as waits, each charged to the peer it waited for (peer_waits.h);
// the calls that start, test or free a request are not waits, but keep
// RequestPeers up to date so that a later MPI_Wait knows whom it waits for.
//
// A status the program ignores (MPI_STATUS_IGNORE) is replaced by one of
// the library's, which only adds a write: a receive from MPI_ANY_SOURCE
// names its sender there.
#include "collector/job/pmpi_state.h"

namespace corenoise {
namespace {

int job_rank(MPI_Comm comm, int rank) { return process.comms.job_rank(comm, rank); }

// The job rank a completed receive on `comm` heard from.
int receive_peer(MPI_Comm comm, int source, const MPI_Status* status) {
  return job_rank(comm, source == MPI_ANY_SOURCE ? status->MPI_SOURCE : source);
}

// A completed request's peer, from its entry and its status.
int request_peer(const RequestPeers::Pending& pending, const MPI_Status* status) {
  if (pending.peer != RequestPeers::kAnySource) return pending.peer;
  return status != nullptr ? job_rank(handle_of<MPI_Comm>(pending.comm), status->MPI_SOURCE) : -1;
}

// A new request's peer: a send's destination, a receive's source.
void remember(const MPI_Request* request, MPI_Comm comm, int rank, bool receive) {
  JobSession* session = recording();
  if (session == nullptr || request == nullptr || *request == MPI_REQUEST_NULL) return;
  if (receive && rank == MPI_ANY_SOURCE) {
    // The sender is known at completion, in this communicator's ranks. The
    // program may free the communicator before then: one with the job's
    // ranks is remembered as MPI_COMM_WORLD, which needs no lookup later.
    const MPI_Comm ranks_of = process.comms.same_ranks_as_job(comm) ? MPI_COMM_WORLD : comm;
    session->requests().add(handle_key(*request), RequestPeers::kAnySource, handle_key(ranks_of));
  } else {
    session->requests().add(handle_key(*request), job_rank(comm, rank));
  }
}

// Room for the requests of one Waitall/Waitany/Waitsome/Test*: their keys
// (completed requests become MPI_REQUEST_NULL), whether each was still
// pending at the call's entry, and statuses where the program ignores
// them. Grows only when a call names more requests than any before.
struct RequestScratch {
  std::vector<std::uint64_t> keys;
  std::vector<RequestPeers::Pending> pending;
  std::vector<char> waited;
  std::vector<MPI_Status> statuses;
  bool fit(int count) {
    if (count <= 0) return false;
    const auto n = static_cast<std::size_t>(count);
    if (keys.size() < n) {
      keys.resize(n);
      pending.resize(n);
      waited.resize(n);
      statuses.resize(n);
    }
    return true;
  }
  void save_keys(int count, const MPI_Request requests[]) {
    for (int i = 0; i < count; ++i) keys[static_cast<std::size_t>(i)] = handle_key(requests[i]);
  }
};
RequestScratch scratch;

}  // namespace
}  // namespace corenoise

using corenoise::handle_key;
using corenoise::MpiCall;
using corenoise::PeerList;
using corenoise::receive_peer;
using corenoise::recorded;
using corenoise::recording;
using corenoise::remember;
using corenoise::RequestPeers;

extern "C" {

// A blocking send waits for its receiver (a rendezvous send until the
// receive is posted; a synchronous one until it matched).
#define CORENOISE_SEND(kind, Name, params, args)                                                   \
  CORENOISE_EXPORT int Name params {                                                               \
    corenoise::JobSession* session = recording();                                                  \
    if (session == nullptr) return P##Name args;                                                   \
    return recorded(                                                                               \
        *session, MpiCall::kind, __builtin_return_address(0), false, [&] { return P##Name args; }, \
        [&](PeerList& peers) { peers.add(corenoise::job_rank(comm, dest)); });                     \
  }
// A blocking receive (or probe) waits for its source; `args` pass `seen`.
#define CORENOISE_RECEIVE(kind, Name, params, args)                                                \
  CORENOISE_EXPORT int Name params {                                                               \
    corenoise::JobSession* session = recording();                                                  \
    MPI_Status* seen = status;                                                                     \
    if (session == nullptr) return P##Name args;                                                   \
    MPI_Status own;                                                                                \
    if (seen == MPI_STATUS_IGNORE) seen = &own;                                                    \
    return recorded(                                                                               \
        *session, MpiCall::kind, __builtin_return_address(0), false, [&] { return P##Name args; }, \
        [&](PeerList& peers) { peers.add(receive_peer(comm, source, seen)); });                    \
  }
// A call that starts a request; `peer` and `receive` say whom it is for.
#define CORENOISE_START(Name, params, args, peer, receive)             \
  CORENOISE_EXPORT int Name params {                                   \
    const int result = P##Name args;                                   \
    if (result == MPI_SUCCESS) remember(request, comm, peer, receive); \
    return result;                                                     \
  }

CORENOISE_SEND(Send, MPI_Send,
               (const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm),
               (buf, count, type, dest, tag, comm))
CORENOISE_SEND(Ssend, MPI_Ssend,
               (const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm),
               (buf, count, type, dest, tag, comm))
CORENOISE_SEND(Rsend, MPI_Rsend,
               (const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm),
               (buf, count, type, dest, tag, comm))
CORENOISE_SEND(Bsend, MPI_Bsend,
               (const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm),
               (buf, count, type, dest, tag, comm))
CORENOISE_RECEIVE(Recv, MPI_Recv,
                  (void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                   MPI_Status* status),
                  (buf, count, type, source, tag, comm, seen))
CORENOISE_RECEIVE(Probe, MPI_Probe, (int source, int tag, MPI_Comm comm, MPI_Status* status),
                  (source, tag, comm, seen))
CORENOISE_RECEIVE(Mprobe, MPI_Mprobe,
                  (int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status),
                  (source, tag, comm, message, seen))
// A Sendrecv waits for its source's message (and, rendezvous, for its
// destination's receive, which a ring posts in the same call).
CORENOISE_RECEIVE(Sendrecv, MPI_Sendrecv,
                  (const void* send, int scount, MPI_Datatype stype, int dest, int stag, void* recv,
                   int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                   MPI_Status* status),
                  (send, scount, stype, dest, stag, recv, rcount, rtype, source, rtag, comm, seen))
CORENOISE_RECEIVE(Sendrecv_replace, MPI_Sendrecv_replace,
                  (void* buffer, int count, MPI_Datatype type, int dest, int stag, int source,
                   int rtag, MPI_Comm comm, MPI_Status* status),
                  (buffer, count, type, dest, stag, source, rtag, comm, seen))

// The matched message's receive: its sender was named at MPI_Mprobe, and
// it waits for no one; recorded, uncharged.
CORENOISE_EXPORT int MPI_Mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message,
                               MPI_Status* status) {
  corenoise::JobSession* session = recording();
  if (session == nullptr) return PMPI_Mrecv(buf, count, type, message, status);
  return recorded(
      *session, MpiCall::Mrecv, __builtin_return_address(0), false,
      [&] { return PMPI_Mrecv(buf, count, type, message, status); }, corenoise::kNoPeers);
}

CORENOISE_START(MPI_Isend,
                (const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                 MPI_Request* request),
                (buf, count, type, dest, tag, comm, request), dest, false)
CORENOISE_START(MPI_Issend,
                (const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                 MPI_Request* request),
                (buf, count, type, dest, tag, comm, request), dest, false)
CORENOISE_START(MPI_Irsend,
                (const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                 MPI_Request* request),
                (buf, count, type, dest, tag, comm, request), dest, false)
CORENOISE_START(MPI_Ibsend,
                (const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                 MPI_Request* request),
                (buf, count, type, dest, tag, comm, request), dest, false)
CORENOISE_START(MPI_Irecv,
                (void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                 MPI_Request* request),
                (buf, count, type, source, tag, comm, request), source, true)

CORENOISE_EXPORT int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  corenoise::JobSession* session = recording();
  if (session == nullptr || request == nullptr) return PMPI_Wait(request, status);
  MPI_Status own;
  MPI_Status* seen = status == MPI_STATUS_IGNORE ? &own : status;
  const RequestPeers::Pending pending = session->requests().take(handle_key(*request));
  return recorded(
      *session, MpiCall::Wait, __builtin_return_address(0), false,
      [&] { return PMPI_Wait(request, seen); },
      [&](PeerList& peers) { peers.add(corenoise::request_peer(pending, seen)); });
}

CORENOISE_EXPORT int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  corenoise::JobSession* session = recording();
  auto& s = corenoise::scratch;
  if (session == nullptr || requests == nullptr || !s.fit(count))
    return PMPI_Waitall(count, requests, statuses);
  // Which requests the wait is for: not those already complete at entry
  // (they did not hold it up); asked only when there is a choice.
  bool any_source = false;
  for (int i = 0; i < count; ++i) {
    const auto k = static_cast<std::size_t>(i);
    s.pending[k] = session->requests().take(handle_key(requests[i]));
    s.waited[k] = 1;
    any_source = any_source || s.pending[k].peer == RequestPeers::kAnySource;
    if (count > 1 && s.pending[k].peer != RequestPeers::kUnknown) {
      int done = 0;
      PMPI_Request_get_status(requests[i], &done, MPI_STATUS_IGNORE);
      s.waited[k] = done == 0 ? 1 : 0;
    }
  }
  MPI_Status* seen = statuses == MPI_STATUSES_IGNORE && any_source ? s.statuses.data() : statuses;
  return recorded(
      *session, MpiCall::Waitall, __builtin_return_address(0), false,
      [&] { return PMPI_Waitall(count, requests, seen); },
      [&](PeerList& peers) {
        for (int i = 0; i < count; ++i) {
          const auto k = static_cast<std::size_t>(i);
          if (s.waited[k] == 0) continue;
          peers.add(corenoise::request_peer(s.pending[k],
                                            seen == MPI_STATUSES_IGNORE ? nullptr : &seen[i]));
        }
      });
}

CORENOISE_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int* index,
                                 MPI_Status* status) {
  corenoise::JobSession* session = recording();
  auto& s = corenoise::scratch;
  if (session == nullptr || requests == nullptr || !s.fit(count))
    return PMPI_Waitany(count, requests, index, status);
  s.save_keys(count, requests);
  MPI_Status own;
  MPI_Status* seen = status == MPI_STATUS_IGNORE ? &own : status;
  return recorded(
      *session, MpiCall::Waitany, __builtin_return_address(0), false,
      [&] { return PMPI_Waitany(count, requests, index, seen); },
      [&](PeerList& peers) {
        if (*index == MPI_UNDEFINED || *index < 0 || *index >= count) return;
        const auto pending = session->requests().take(s.keys[static_cast<std::size_t>(*index)]);
        peers.add(corenoise::request_peer(pending, seen));
      });
}

CORENOISE_EXPORT int MPI_Waitsome(int count, MPI_Request requests[], int* outcount, int indices[],
                                  MPI_Status statuses[]) {
  corenoise::JobSession* session = recording();
  auto& s = corenoise::scratch;
  if (session == nullptr || requests == nullptr || !s.fit(count)) {
    return PMPI_Waitsome(count, requests, outcount, indices, statuses);
  }
  s.save_keys(count, requests);
  MPI_Status* seen = statuses == MPI_STATUSES_IGNORE ? s.statuses.data() : statuses;
  return recorded(
      *session, MpiCall::Waitsome, __builtin_return_address(0), false,
      [&] { return PMPI_Waitsome(count, requests, outcount, indices, seen); },
      [&](PeerList& peers) {
        if (*outcount == MPI_UNDEFINED) return;
        for (int j = 0; j < *outcount; ++j) {
          if (indices[j] < 0 || indices[j] >= count) continue;
          const auto pending =
              session->requests().take(s.keys[static_cast<std::size_t>(indices[j])]);
          peers.add(corenoise::request_peer(pending, &seen[j]));
        }
      });
}

// Not waits: a request completed or freed here is forgotten, so that its
// handle, reused by a request the library does not see (a persistent or
// nonblocking-collective one), is not charged to the old peer.
CORENOISE_EXPORT int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  corenoise::JobSession* session = recording();
  if (session == nullptr || request == nullptr) return PMPI_Test(request, flag, status);
  const std::uint64_t key = handle_key(*request);
  const int result = PMPI_Test(request, flag, status);
  if (result == MPI_SUCCESS && *flag != 0) session->requests().forget(key);
  return result;
}

CORENOISE_EXPORT int MPI_Testall(int count, MPI_Request requests[], int* flag,
                                 MPI_Status statuses[]) {
  corenoise::JobSession* session = recording();
  auto& s = corenoise::scratch;
  if (session == nullptr || requests == nullptr || !s.fit(count))
    return PMPI_Testall(count, requests, flag, statuses);
  s.save_keys(count, requests);
  const int result = PMPI_Testall(count, requests, flag, statuses);
  if (result == MPI_SUCCESS && *flag != 0) {
    for (int i = 0; i < count; ++i) session->requests().forget(s.keys[static_cast<std::size_t>(i)]);
  }
  return result;
}

CORENOISE_EXPORT int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag,
                                 MPI_Status* status) {
  corenoise::JobSession* session = recording();
  auto& s = corenoise::scratch;
  if (session == nullptr || requests == nullptr || !s.fit(count)) {
    return PMPI_Testany(count, requests, index, flag, status);
  }
  s.save_keys(count, requests);
  const int result = PMPI_Testany(count, requests, index, flag, status);
  if (result == MPI_SUCCESS && *flag != 0 && *index >= 0 && *index < count) {
    session->requests().forget(s.keys[static_cast<std::size_t>(*index)]);
  }
  return result;
}

CORENOISE_EXPORT int MPI_Testsome(int count, MPI_Request requests[], int* outcount, int indices[],
                                  MPI_Status statuses[]) {
  corenoise::JobSession* session = recording();
  auto& s = corenoise::scratch;
  if (session == nullptr || requests == nullptr || !s.fit(count)) {
    return PMPI_Testsome(count, requests, outcount, indices, statuses);
  }
  s.save_keys(count, requests);
  const int result = PMPI_Testsome(count, requests, outcount, indices, statuses);
  if (result == MPI_SUCCESS && *outcount != MPI_UNDEFINED) {
    for (int j = 0; j < *outcount; ++j) {
      if (indices[j] >= 0 && indices[j] < count)
        session->requests().forget(s.keys[static_cast<std::size_t>(indices[j])]);
    }
  }
  return result;
}

CORENOISE_EXPORT int MPI_Request_free(MPI_Request* request) {
  corenoise::JobSession* session = recording();
  if (session != nullptr && request != nullptr) session->requests().forget(handle_key(*request));
  return PMPI_Request_free(request);
}

#if MPI_VERSION >= 4
CORENOISE_SEND(Send, MPI_Send_c,
               (const void* buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                MPI_Comm comm),
               (buf, count, type, dest, tag, comm))
CORENOISE_SEND(Ssend, MPI_Ssend_c,
               (const void* buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                MPI_Comm comm),
               (buf, count, type, dest, tag, comm))
CORENOISE_SEND(Rsend, MPI_Rsend_c,
               (const void* buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                MPI_Comm comm),
               (buf, count, type, dest, tag, comm))
CORENOISE_SEND(Bsend, MPI_Bsend_c,
               (const void* buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                MPI_Comm comm),
               (buf, count, type, dest, tag, comm))
CORENOISE_RECEIVE(Recv, MPI_Recv_c,
                  (void* buf, MPI_Count count, MPI_Datatype type, int source, int tag,
                   MPI_Comm comm, MPI_Status* status),
                  (buf, count, type, source, tag, comm, seen))
CORENOISE_RECEIVE(Sendrecv, MPI_Sendrecv_c,
                  (const void* send, MPI_Count scount, MPI_Datatype stype, int dest, int stag,
                   void* recv, MPI_Count rcount, MPI_Datatype rtype, int source, int rtag,
                   MPI_Comm comm, MPI_Status* status),
                  (send, scount, stype, dest, stag, recv, rcount, rtype, source, rtag, comm, seen))
CORENOISE_RECEIVE(Sendrecv_replace, MPI_Sendrecv_replace_c,
                  (void* buffer, MPI_Count count, MPI_Datatype type, int dest, int stag, int source,
                   int rtag, MPI_Comm comm, MPI_Status* status),
                  (buffer, count, type, dest, stag, source, rtag, comm, seen))
CORENOISE_EXPORT int MPI_Mrecv_c(void* buf, MPI_Count count, MPI_Datatype type,
                                 MPI_Message* message, MPI_Status* status) {
  corenoise::JobSession* session = recording();
  if (session == nullptr) return PMPI_Mrecv_c(buf, count, type, message, status);
  return recorded(
      *session, MpiCall::Mrecv, __builtin_return_address(0), false,
      [&] { return PMPI_Mrecv_c(buf, count, type, message, status); }, corenoise::kNoPeers);
}
CORENOISE_START(MPI_Isend_c,
                (const void* buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                 MPI_Comm comm, MPI_Request* request),
                (buf, count, type, dest, tag, comm, request), dest, false)
CORENOISE_START(MPI_Issend_c,
                (const void* buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                 MPI_Comm comm, MPI_Request* request),
                (buf, count, type, dest, tag, comm, request), dest, false)
CORENOISE_START(MPI_Irsend_c,
                (const void* buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                 MPI_Comm comm, MPI_Request* request),
                (buf, count, type, dest, tag, comm, request), dest, false)
CORENOISE_START(MPI_Ibsend_c,
                (const void* buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                 MPI_Comm comm, MPI_Request* request),
                (buf, count, type, dest, tag, comm, request), dest, false)
CORENOISE_START(MPI_Irecv_c,
                (void* buf, MPI_Count count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                 MPI_Request* request),
                (buf, count, type, source, tag, comm, request), source, true)
#endif

}  // extern "C"
