// What each kind of call in mpi_calls.key records: one class per kind,
// which the generated C wrappers (pmpi_calls.gen.cpp in the build tree,
// written by mpi_calls.cmake) make from the call's parameters. Included by
// that file only; compiled per family.
//
// A recorded call's wrapper (pmpi_state.h's recording() is not null):
//   Kind record(*session, <the parameters the kind names>);
//   if (!record.active) return PMPI_NAME(<the parameters>);
//   return recorded(*session, MpiCall::NAME, <its return address>,
//                   record.step, [&] { return PMPI_NAME(...); }, record);
// where the kind's status (or statuses) parameter is passed as record.seen:
// a status the program ignores (MPI_STATUS_IGNORE) is replaced by one of
// the library's, which only adds a write: a receive from MPI_ANY_SOURCE
// names its sender there. `record(peers)` runs after a call that
// succeeded and names the job ranks waited for (peer_waits.h).
//
// A passed-through call's wrapper makes `Kind note(...)` the same way, then
// calls PMPI_NAME and, when it succeeded, `note.done()`: the calls that
// start, test or free a request are not waits, but keep RequestPeers up to
// date so that a later MPI_Wait knows whom it waits for.
//
// Threading: only the recording thread (the one that called MPI_Init)
// makes these, so the request scratch below is that thread's alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collector/job/rank/pmpi_state.h"

namespace corenoise {

inline int job_rank(MPI_Comm comm, int rank) { return process.comms.job_rank(comm, rank); }

// The job rank a completed receive on `comm` heard from.
inline int receive_peer(MPI_Comm comm, int source, const MPI_Status* status) {
  return job_rank(comm, source == MPI_ANY_SOURCE ? status->MPI_SOURCE : source);
}

// A completed request's peer, from its entry and its status.
inline int request_peer(const RequestPeers::Pending& pending, const MPI_Status* status) {
  if (pending.peer != RequestPeers::kAnySource) return pending.peer;
  return status != nullptr ? job_rank(handle_of<MPI_Comm>(pending.comm), status->MPI_SOURCE) : -1;
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
  // `request_at(i)`: the i-th request as a C handle (the Fortran entry
  // points convert theirs, pmpi_fortran_records.h).
  template <typename RequestAt>
  void save_keys_with(int count, RequestAt&& request_at) {
    for (int i = 0; i < count; ++i) keys[static_cast<std::size_t>(i)] = handle_key(request_at(i));
  }
  void save_keys(int count, const MPI_Request requests[]) {
    save_keys_with(count, [requests](int i) { return requests[i]; });
  }
  // A Waitall's requests taken from `session`: each one's peer, and
  // whether it was still pending at entry (asked only when there is a
  // choice). True when one is a receive from MPI_ANY_SOURCE, whose sender
  // only its status names.
  template <typename RequestAt>
  bool take_waited(JobSession& session, int count, RequestAt&& request_at) {
    bool any_source = false;
    for (int i = 0; i < count; ++i) {
      const auto k = static_cast<std::size_t>(i);
      const MPI_Request request = request_at(i);
      pending[k] = session.requests().take(handle_key(request));
      waited[k] = 1;
      any_source = any_source || pending[k].peer == RequestPeers::kAnySource;
      if (count > 1 && pending[k].peer != RequestPeers::kUnknown) {
        int done = 0;
        PMPI_Request_get_status(request, &done, MPI_STATUS_IGNORE);
        waited[k] = done == 0 ? 1 : 0;
      }
    }
    return any_source;
  }
};
inline RequestScratch request_scratch;

// A record holds pointers into itself (seen): made in place, never copied.
struct Record {
  Record() = default;
  Record(const Record&) = delete;
  Record& operator=(const Record&) = delete;
};

// ---- recorded: collectives -------------------------------------------------

// Every rank waits for the last to arrive: over a communicator spanning
// the whole job, a step.
struct Step : Record {
  Step(JobSession&, MPI_Comm comm) : step(process.comms.spans_job(comm)) {}
  static constexpr bool active = true;
  const bool step;
  void operator()(PeerList&) const {}
};

// Ranks may leave before the last arrives: a wait, never a step.
struct Rooted : Record {
  explicit Rooted(JobSession&) {}
  static constexpr bool active = true;
  static constexpr bool step = false;
  void operator()(PeerList&) const {}
};

// ---- recorded: point to point ----------------------------------------------

// A blocking send waits for its receiver (a rendezvous send until the
// receive is posted; a synchronous one until it matched).
struct ToDest : Record {
  ToDest(JobSession&, MPI_Comm comm, int dest) : comm(comm), dest(dest) {}
  static constexpr bool active = true;
  static constexpr bool step = false;
  MPI_Comm comm;
  int dest;
  void operator()(PeerList& peers) const { peers.add(job_rank(comm, dest)); }
};

// A blocking receive (or probe) waits for its source. A Sendrecv waits for
// its source's message (and, rendezvous, for its destination's receive,
// which a ring posts in the same call): charged to its source.
struct FromSource : Record {
  FromSource(JobSession&, MPI_Comm comm, int source, MPI_Status* status)
      : comm(comm), source(source), seen(status == MPI_STATUS_IGNORE ? &own : status) {}
  static constexpr bool active = true;
  static constexpr bool step = false;
  MPI_Comm comm;
  int source;
  MPI_Status own;
  MPI_Status* seen;
  void operator()(PeerList& peers) const { peers.add(receive_peer(comm, source, seen)); }
};

// The matched message's receive: its sender was named at MPI_Mprobe, and
// it waits for no one; recorded, uncharged.
struct Matched : Record {
  explicit Matched(JobSession&) {}
  static constexpr bool active = true;
  static constexpr bool step = false;
  void operator()(PeerList&) const {}
};

// ---- recorded: waits for requests ------------------------------------------

// MPI_Wait: the request's peer, taken before the call frees the handle.
struct WaitRequest : Record {
  WaitRequest(JobSession& session, MPI_Request* request, MPI_Status* status)
      : active(request != nullptr), seen(status == MPI_STATUS_IGNORE ? &own : status) {
    if (active) pending = session.requests().take(handle_key(*request));
  }
  static constexpr bool step = false;
  const bool active;
  RequestPeers::Pending pending{};
  MPI_Status own;
  MPI_Status* seen;
  void operator()(PeerList& peers) const { peers.add(request_peer(pending, seen)); }
};

// MPI_Waitall: the peers of the requests it waits for, which are not those
// already complete at entry (they did not hold it up); asked only when
// there is a choice.
struct WaitAll : Record {
  WaitAll(JobSession& session, int count, MPI_Request requests[], MPI_Status statuses[])
      : active(requests != nullptr && request_scratch.fit(count)), count(count), seen(statuses) {
    if (!active) return;
    const bool any_source =
        request_scratch.take_waited(session, count, [requests](int i) { return requests[i]; });
    if (statuses == MPI_STATUSES_IGNORE && any_source) seen = request_scratch.statuses.data();
  }
  static constexpr bool step = false;
  const bool active;
  int count;
  MPI_Status* seen;
  void operator()(PeerList& peers) const {
    const auto& s = request_scratch;
    for (int i = 0; i < count; ++i) {
      const auto k = static_cast<std::size_t>(i);
      if (s.waited[k] == 0) continue;
      peers.add(request_peer(s.pending[k], seen == MPI_STATUSES_IGNORE ? nullptr : &seen[i]));
    }
  }
};

// MPI_Waitany: the peer of the request that completed.
struct WaitAny : Record {
  WaitAny(JobSession& session, int count, MPI_Request requests[], int* index, MPI_Status* status)
      : active(requests != nullptr && request_scratch.fit(count)),
        session(session),
        count(count),
        index(index),
        seen(status == MPI_STATUS_IGNORE ? &own : status) {
    if (active) request_scratch.save_keys(count, requests);
  }
  static constexpr bool step = false;
  const bool active;
  JobSession& session;
  int count;
  int* index;
  MPI_Status own;
  MPI_Status* seen;
  void operator()(PeerList& peers) const {
    if (*index == MPI_UNDEFINED || *index < 0 || *index >= count) return;
    const auto pending =
        session.requests().take(request_scratch.keys[static_cast<std::size_t>(*index)]);
    peers.add(request_peer(pending, seen));
  }
};

// MPI_Waitsome: the peers of the requests that completed.
struct WaitSome : Record {
  WaitSome(JobSession& session, int count, MPI_Request requests[], int* outcount, int indices[],
           MPI_Status statuses[])
      : active(requests != nullptr && request_scratch.fit(count)),
        session(session),
        count(count),
        outcount(outcount),
        indices(indices),
        seen(statuses == MPI_STATUSES_IGNORE ? request_scratch.statuses.data() : statuses) {
    if (active) request_scratch.save_keys(count, requests);
  }
  static constexpr bool step = false;
  const bool active;
  JobSession& session;
  int count;
  int* outcount;
  int* indices;
  MPI_Status* seen;
  void operator()(PeerList& peers) const {
    if (*outcount == MPI_UNDEFINED) return;
    for (int j = 0; j < *outcount; ++j) {
      if (indices[j] < 0 || indices[j] >= count) continue;
      const auto pending =
          session.requests().take(request_scratch.keys[static_cast<std::size_t>(indices[j])]);
      peers.add(request_peer(pending, &seen[j]));
    }
  }
};

// ---- passed through: starts ------------------------------------------------

// A new request's peer: a send's destination, a receive's source.
inline void remember(JobSession& session, const MPI_Request* request, MPI_Comm comm, int rank,
                     bool receive) {
  if (request == nullptr || *request == MPI_REQUEST_NULL) return;
  if (receive && rank == MPI_ANY_SOURCE) {
    // The sender is known at completion, in this communicator's ranks. The
    // program may free the communicator before then: one with the job's
    // ranks is remembered as MPI_COMM_WORLD, which needs no lookup later.
    const MPI_Comm ranks_of = process.comms.same_ranks_as_job(comm) ? MPI_COMM_WORLD : comm;
    session.requests().add(handle_key(*request), RequestPeers::kAnySource, handle_key(ranks_of));
  } else {
    session.requests().add(handle_key(*request), job_rank(comm, rank));
  }
}

struct StartSend {
  StartSend(JobSession& session, const MPI_Request* request, MPI_Comm comm, int dest)
      : session(session), request(request), comm(comm), dest(dest) {}
  static constexpr bool active = true;
  JobSession& session;
  const MPI_Request* request;
  MPI_Comm comm;
  int dest;
  void done() const { remember(session, request, comm, dest, false); }
};

struct StartReceive {
  StartReceive(JobSession& session, const MPI_Request* request, MPI_Comm comm, int source)
      : session(session), request(request), comm(comm), source(source) {}
  static constexpr bool active = true;
  JobSession& session;
  const MPI_Request* request;
  MPI_Comm comm;
  int source;
  void done() const { remember(session, request, comm, source, true); }
};

// ---- passed through: tests and frees ---------------------------------------
// Not waits: a request completed or freed here is forgotten, so that its
// handle, reused by a request the library does not see (a persistent or
// nonblocking-collective one), is not charged to the old peer.

struct Test {
  Test(JobSession& session, const MPI_Request* request, const int* flag)
      : active(request != nullptr), session(session), flag(flag) {
    if (active) key = handle_key(*request);
  }
  const bool active;
  JobSession& session;
  const int* flag;
  std::uint64_t key = 0;
  void done() const {
    if (*flag != 0) session.requests().forget(key);
  }
};

// A test over `count` requests whose keys were saved before the call
// (`active`: there were some to save): forgets the i-th (from 0) once the
// call says it completed. The Fortran records derive from it too.
struct TestedRequests {
  TestedRequests(JobSession& session, bool active, int count)
      : active(active), session(session), count(count) {}
  const bool active;
  JobSession& session;
  int count;
  void forget(int i) const {
    if (i >= 0 && i < count)
      session.requests().forget(request_scratch.keys[static_cast<std::size_t>(i)]);
  }
  // Saves the keys of `requests`; false when there are none.
  static bool saved(int count, const MPI_Request requests[]) {
    if (requests == nullptr || !request_scratch.fit(count)) return false;
    request_scratch.save_keys(count, requests);
    return true;
  }
};

struct TestAll : TestedRequests {
  TestAll(JobSession& session, int count, const MPI_Request requests[], const int* flag)
      : TestedRequests(session, saved(count, requests), count), flag(flag) {}
  const int* flag;
  void done() const {
    if (*flag == 0) return;
    for (int i = 0; i < count; ++i) forget(i);
  }
};

struct TestAny : TestedRequests {
  TestAny(JobSession& session, int count, const MPI_Request requests[], const int* index,
          const int* flag)
      : TestedRequests(session, saved(count, requests), count), index(index), flag(flag) {}
  const int* index;
  const int* flag;
  void done() const {
    if (*flag != 0) forget(*index);
  }
};

struct TestSome : TestedRequests {
  TestSome(JobSession& session, int count, const MPI_Request requests[], const int* outcount,
           const int indices[])
      : TestedRequests(session, saved(count, requests), count),
        outcount(outcount),
        indices(indices) {}
  const int* outcount;
  const int* indices;
  void done() const {
    if (*outcount == MPI_UNDEFINED) return;
    for (int j = 0; j < *outcount; ++j) forget(indices[j]);
  }
};

// Forgotten before the call, which frees the handle.
struct Free {
  Free(JobSession& session, const MPI_Request* request) {
    if (request != nullptr) session.requests().forget(handle_key(*request));
  }
  static constexpr bool active = true;
  void done() const {}
};

}  // namespace corenoise
