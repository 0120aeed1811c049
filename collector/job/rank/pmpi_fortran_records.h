// What each kind of call in mpi_calls.key records when a Fortran program
// makes it: the classes of pmpi_records.h, made from a Fortran binding's
// arguments, which the generated Fortran entry points (pmpi_calls.gen.cpp,
// written by mpi_calls.cmake for every call the key marks `fortran`)
// make. Included by that file and pmpi_fortran.cpp; compiled per family.
//
// A Fortran binding passes every argument by reference, handles as
// MPI_Fint (converted with PMPI_*_f2c), LOGICAL flags as MPI_Fint
// (nonzero is true for gfortran and ifort alike), indices from 1, a status
// as kStatusSize MPI_Fint and its error in *ierr. The entry points:
//   mpi_NAME_      gfortran's and ifort's name for `call MPI_NAME` with
//                  mpif.h or `use mpi`; under Open MPI a weak alias of
//                  ompi_NAME_f in libmpi_mpifh;
//   ompi_NAME_f    what Open MPI's `use mpi_f08` module (libmpi_usempif08)
//                  calls by name (Open MPI only).
// Open MPI's Fortran bindings call PMPI_ directly, so without these a
// Fortran program under Open MPI would be seen making no MPI call. MPICH's
// (libmpichfort) call the C MPI_ functions, which are then nested calls
// (pmpi_state.h's depth), not recorded twice.
//
// Each entry point calls the definition it displaced, found at its first
// call (program_mpi.h): the MPI library's own, whichever family; nothing is
// linked against a Fortran library.
//
// Threading: the recording thread's, as pmpi_records.h.
#pragma once

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <string>
#include <vector>

#include "collector/job/rank/pmpi_records.h"
#include "collector/job/rank/program_mpi.h"

namespace corenoise::fortran {

// A Fortran status's MPI_Fint: MPI_F_STATUS_SIZE where <mpi.h> has it
// (MPICH), else the C status's size (Open MPI's MPI_STATUS_SIZE is it).
#ifdef MPI_F_STATUS_SIZE
inline constexpr std::size_t kStatusSize = MPI_F_STATUS_SIZE;
#else
inline constexpr std::size_t kStatusSize = sizeof(MPI_Status) / sizeof(MPI_Fint);
#endif

// Where a Fortran program's MPI_STATUS_IGNORE (or MPI_STATUSES_IGNORE)
// may point: the C library's MPI_F_STATUS_IGNORE, and under Open MPI the
// common blocks that mpif.h and the mpi_f08 module bind it to, in each
// spelling a compiler gives them (Open MPI checks all of them itself:
// OMPI_IS_FORTRAN_STATUS_IGNORE). Read through the dynamic linker: the
// MPICH-family library is bound to its MPI only at run time
// (program_mpi.h), where a load-time reference to a variable would stop
// every process it is preloaded into from starting. Found at the first
// call, then compared.
class IgnoreMarks {
 public:
  // `variable`: MPI_F_STATUS_IGNORE's name; `block`: the common block's,
  // in lower case.
  IgnoreMarks(const char* variable, const std::string& block) {
    auto* const* pointer = static_cast<const void* const*>(displaced(variable));
    marks_[0] = pointer != nullptr ? *pointer : nullptr;
    std::string upper = block;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    marks_[1] = displaced(block.c_str());
    marks_[2] = displaced((block + "_").c_str());
    marks_[3] = displaced((block + "__").c_str());
    marks_[4] = displaced(upper.c_str());
  }
  bool contains(const void* status) const {
    return status == nullptr ||
           std::any_of(marks_.begin(), marks_.end(),
                       [status](const void* mark) { return mark != nullptr && mark == status; });
  }

 private:
  std::array<const void*, 5> marks_{};
};
inline bool status_ignored(const MPI_Fint* status) {
  static const IgnoreMarks marks("MPI_F_STATUS_IGNORE", "mpi_fortran_status_ignore");
  return marks.contains(status);
}
inline bool statuses_ignored(const MPI_Fint* statuses) {
  static const IgnoreMarks marks("MPI_F_STATUSES_IGNORE", "mpi_fortran_statuses_ignore");
  return marks.contains(statuses);
}

inline MPI_Comm comm_of(const MPI_Fint* comm) { return PMPI_Comm_f2c(*comm); }
inline MPI_Request request_of(const MPI_Fint* requests, int i) {
  return PMPI_Request_f2c(requests[i]);
}
inline int result(const MPI_Fint* ierr) {
  return ierr != nullptr ? static_cast<int>(*ierr) : MPI_SUCCESS;
}
// A Fortran index (from 1) as C's, MPI_UNDEFINED kept.
inline int index_of(MPI_Fint index) { return index == MPI_UNDEFINED ? MPI_UNDEFINED : index - 1; }

// The C status that a filled Fortran `status` holds; null when there is
// none to read.
inline const MPI_Status* to_c(const MPI_Fint* status, MPI_Status& out) {
  if (status == nullptr || PMPI_Status_f2c(status, &out) != MPI_SUCCESS) return nullptr;
  return &out;
}

// Statuses for a call whose program ignores them but whose record reads
// them: grows only when a call names more requests than any before.
inline std::vector<MPI_Fint> status_scratch;
inline MPI_Fint* scratch_statuses(int count) {
  const std::size_t n = static_cast<std::size_t>(std::max(count, 0)) * kStatusSize;
  if (status_scratch.size() < n) status_scratch.resize(n);
  return status_scratch.data();
}

// The status the call is given: the program's, or the record's own where
// it passed MPI_STATUS_IGNORE, so that a receive from MPI_ANY_SOURCE names
// its sender either way, as the C wrappers do.
struct SeenStatus : Record {
  explicit SeenStatus(MPI_Fint* status) : seen(status_ignored(status) ? own : status) {}
  MPI_Fint own[kStatusSize] = {};
  MPI_Fint* seen;
};

// The keys of `count` requests, saved before a call that may complete or
// free them; false when there are none to save.
inline bool save_keys(const MPI_Fint* requests, int count) {
  if (requests == nullptr || !request_scratch.fit(count)) return false;
  request_scratch.save_keys_with(count, [requests](int i) { return request_of(requests, i); });
  return true;
}

// The peer of the i-th request (from 0) of those whose keys were saved,
// which the call completed with the Fortran `status`.
inline void add_completed(PeerList& peers, JobSession& session, int count, int i,
                          const MPI_Fint* status) {
  if (i < 0 || i >= count) return;
  const auto pending = session.requests().take(request_scratch.keys[static_cast<std::size_t>(i)]);
  MPI_Status c;
  peers.add(request_peer(pending, to_c(status, c)));
}

// ---- recorded --------------------------------------------------------------

using corenoise::Matched;
using corenoise::Rooted;

struct Step : corenoise::Step {
  Step(JobSession& session, const MPI_Fint* comm) : corenoise::Step(session, comm_of(comm)) {}
};

struct ToDest : corenoise::ToDest {
  ToDest(JobSession& session, const MPI_Fint* comm, const MPI_Fint* dest)
      : corenoise::ToDest(session, comm_of(comm), *dest) {}
};

struct FromSource : SeenStatus {
  FromSource(JobSession&, const MPI_Fint* comm, const MPI_Fint* source, MPI_Fint* status)
      : SeenStatus(status), comm(comm_of(comm)), source(*source) {}
  static constexpr bool active = true;
  static constexpr bool step = false;
  MPI_Comm comm;
  int source;
  void operator()(PeerList& peers) const {
    MPI_Status c;
    const MPI_Status* filled = to_c(seen, c);
    if (source != MPI_ANY_SOURCE || filled != nullptr) {
      peers.add(corenoise::receive_peer(comm, source, filled));
    }
  }
};

struct WaitRequest : SeenStatus {
  WaitRequest(JobSession& session, const MPI_Fint* request, MPI_Fint* status)
      : SeenStatus(status), active(request != nullptr) {
    if (active) pending = session.requests().take(handle_key(request_of(request, 0)));
  }
  static constexpr bool step = false;
  const bool active;
  RequestPeers::Pending pending{};
  void operator()(PeerList& peers) const {
    MPI_Status c;
    peers.add(request_peer(pending, to_c(seen, c)));
  }
};

struct WaitAll : Record {
  WaitAll(JobSession& session, const MPI_Fint* count, const MPI_Fint* requests, MPI_Fint* statuses)
      : active(requests != nullptr && request_scratch.fit(*count)), count(*count), seen(statuses) {
    if (!active) return;
    const bool any_source = request_scratch.take_waited(
        session, this->count, [requests](int i) { return request_of(requests, i); });
    if (!statuses_ignored(statuses)) return;
    // Ignored: passed on as the program gave it, unless a sender must be read.
    if (any_source) seen = scratch_statuses(this->count);
    readable = any_source;
  }
  static constexpr bool step = false;
  const bool active;
  int count;
  MPI_Fint* seen;
  bool readable = true;
  void operator()(PeerList& peers) const {
    const auto& s = request_scratch;
    for (int i = 0; i < count; ++i) {
      const auto k = static_cast<std::size_t>(i);
      if (s.waited[k] == 0) continue;
      MPI_Status c;
      const MPI_Status* filled = readable ? to_c(seen + k * kStatusSize, c) : nullptr;
      peers.add(request_peer(s.pending[k], filled));
    }
  }
};

struct WaitAny : SeenStatus {
  WaitAny(JobSession& session, const MPI_Fint* count, const MPI_Fint* requests,
          const MPI_Fint* index, MPI_Fint* status)
      : SeenStatus(status),
        active(save_keys(requests, *count)),
        session(session),
        count(*count),
        index(index) {}
  static constexpr bool step = false;
  const bool active;
  JobSession& session;
  int count;
  const MPI_Fint* index;
  void operator()(PeerList& peers) const {
    add_completed(peers, session, count, index_of(*index), seen);
  }
};

struct WaitSome : Record {
  WaitSome(JobSession& session, const MPI_Fint* count, const MPI_Fint* requests,
           const MPI_Fint* outcount, const MPI_Fint* indices, MPI_Fint* statuses)
      : active(save_keys(requests, *count)),
        session(session),
        count(*count),
        outcount(outcount),
        indices(indices),
        // Not recorded (a count the scratch cannot fit, negative in an
        // erroneous program): the program's own argument, untouched.
        seen(active && statuses_ignored(statuses) ? scratch_statuses(*count) : statuses) {}
  static constexpr bool step = false;
  const bool active;
  JobSession& session;
  int count;
  const MPI_Fint* outcount;
  const MPI_Fint* indices;
  MPI_Fint* seen;
  void operator()(PeerList& peers) const {
    if (*outcount == MPI_UNDEFINED) return;
    for (int j = 0; j < *outcount; ++j) {
      add_completed(peers, session, count, index_of(indices[j]),
                    seen + static_cast<std::size_t>(j) * kStatusSize);
    }
  }
};

// ---- passed through ---------------------------------------------------------

// A new request's peer, once the call made it.
template <bool receive>
struct Start {
  Start(JobSession& session, const MPI_Fint* request, const MPI_Fint* comm, const MPI_Fint* rank)
      : session(session), request(request), comm(comm), rank(rank) {}
  static constexpr bool active = true;
  JobSession& session;
  const MPI_Fint* request;
  const MPI_Fint* comm;
  const MPI_Fint* rank;
  void done() const {
    const MPI_Request c = request_of(request, 0);
    remember(session, &c, comm_of(comm), *rank, receive);
  }
};
using StartSend = Start<false>;
using StartReceive = Start<true>;

// The requests a test may complete, as keys taken before the call.
struct Tested : TestedRequests {
  Tested(JobSession& session, const MPI_Fint* requests, int count)
      : TestedRequests(session, save_keys(requests, count), count) {}
};

struct Test : Tested {
  Test(JobSession& session, const MPI_Fint* request, const MPI_Fint* flag)
      : Tested(session, request, 1), flag(flag) {}
  const MPI_Fint* flag;
  void done() const {
    if (*flag != 0) forget(0);
  }
};

struct TestAll : Tested {
  TestAll(JobSession& session, const MPI_Fint* count, const MPI_Fint* requests,
          const MPI_Fint* flag)
      : Tested(session, requests, *count), flag(flag) {}
  const MPI_Fint* flag;
  void done() const {
    if (*flag == 0) return;
    for (int i = 0; i < count; ++i) forget(i);
  }
};

struct TestAny : Tested {
  TestAny(JobSession& session, const MPI_Fint* count, const MPI_Fint* requests,
          const MPI_Fint* index, const MPI_Fint* flag)
      : Tested(session, requests, *count), index(index), flag(flag) {}
  const MPI_Fint* index;
  const MPI_Fint* flag;
  void done() const {
    if (*flag != 0) forget(index_of(*index));
  }
};

struct TestSome : Tested {
  TestSome(JobSession& session, const MPI_Fint* count, const MPI_Fint* requests,
           const MPI_Fint* outcount, const MPI_Fint* indices)
      : Tested(session, requests, *count), outcount(outcount), indices(indices) {}
  const MPI_Fint* outcount;
  const MPI_Fint* indices;
  void done() const {
    if (*outcount == MPI_UNDEFINED) return;
    for (int j = 0; j < *outcount; ++j) forget(index_of(indices[j]));
  }
};

// Forgotten before the call, which frees the handle.
struct Free {
  Free(JobSession& session, const MPI_Fint* request) {
    if (request != nullptr) session.requests().forget(handle_key(request_of(request, 0)));
  }
  static constexpr bool active = true;
  void done() const {}
};

}  // namespace corenoise::fortran

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
