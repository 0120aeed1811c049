// What the in-job library's wrappers share (pmpi_wrappers.cpp: MPI_Init,
// MPI_Finalize; the wrappers generated from mpi_calls.key, with
// pmpi_records.h; pmpi_fortran.cpp): the process's state, which thread
// records, and the recorded call. Compiled per family.
//
// Only the thread that called MPI_Init records; `depth` keeps a wrapped
// call that the library implements with another wrapped call (an MPI
// library calling its own MPI_ names) from counting twice. A call that is
// not recorded (another thread, before MPI_Init, after MPI_Finalize) costs
// one test and touches nothing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "collector/job/rank/job_mpi.h"

namespace corenoise {

// Never deleted: mpi4py calls MPI_Finalize from an exit handler, and the
// program's threads may still call MPI after static destructors ran.
extern JobProcess process;
extern thread_local bool is_main __attribute__((tls_model("initial-exec")));
extern thread_local int depth __attribute__((tls_model("initial-exec")));

// MPI_Init's and MPI_Finalize's work, shared by the C and Fortran entry
// points (pmpi_wrappers.cpp): whether to measure at all (before the
// library's init: the program must use this family's libmpi); the
// session's start once MPI is up (once, whichever entry point comes
// first); and the reduction before MPI's own finalize, which the wrapper
// then calls whatever the reduction found: a rank that is gone or late
// makes MPI's finalize do what it does without the library. The family's
// way round a hang of that finalize (family_finalize.h) is armed at the end
// of before_finalize and disarmed by after_finalize, once it returned.
bool measure_this_program();
void mpi_started();
void before_finalize();
void after_finalize();

inline JobSession* recording() { return is_main && depth == 0 ? process.session : nullptr; }

// The peers an exchange waited for, ranks of the job; at most kMax (a
// wait on more requests than that is shared among the first kMax).
class PeerList {
 public:
  static constexpr std::size_t kMax = 64;
  // Leaves peers_ unset on purpose (below); `PeerList{}` would too.
  PeerList() {}
  void add(int peer) {
    if (size_ < kMax) peers_[size_++] = peer;
  }
  std::span<const int> span() const { return {peers_.data(), size_}; }

 private:
  // Left unset: made on every recorded call, and only the first size_
  // are read (zeroing 256 bytes a call showed in a barrier's cost).
  std::array<int, kMax> peers_;
  std::size_t size_ = 0;
};

// An MPI handle's bits, the key of RequestPeers (peer_waits.h): MPICH's
// handles are ints, Open MPI's pointers.
template <typename Handle>
std::uint64_t handle_key(Handle handle) {
  static_assert(sizeof(Handle) <= sizeof(std::uint64_t));
  std::uint64_t key = 0;
  std::memcpy(&key, &handle, sizeof(Handle));
  return key;
}
template <typename Handle>
Handle handle_of(std::uint64_t key) {
  Handle handle;
  std::memcpy(&handle, &key, sizeof(Handle));
  return handle;
}

// The wrapped call between the session's enter and exit; `peers(list)`
// runs after a call that succeeded (a receive's status names its source).
template <typename Call, typename Peers>
int recorded(JobSession& session, MpiCall which, void* return_address, bool step, Call&& call,
             Peers&& peers) {
  ++depth;
  session.enter();
  const int result = call();
  PeerList list;
  if (result == MPI_SUCCESS) peers(list);
  session.exit(which, reinterpret_cast<std::uintptr_t>(return_address), step, list.span());
  --depth;
  return result;
}

inline constexpr auto kNoPeers = [](PeerList&) {};

}  // namespace corenoise

// The wrappers are the library's only exported symbols.
#define CORENOISE_EXPORT __attribute__((visibility("default")))
