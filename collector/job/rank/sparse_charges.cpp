#include "collector/job/rank/sparse_charges.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

#include "collector/job/rank/pmpi_completion.h"

namespace corenoise {
namespace {

// One rank's side of one exchange.
struct Exchange {
  MPI_Comm comm;
  int tag;
  std::span<double> waited_for_me;
  MpiDeadline deadline;
  std::vector<MPI_Request> sends;  // this rank's charges, until all are received
  MPI_Request barrier = MPI_REQUEST_NULL;
  bool in_barrier = false;
};

enum class Progress { waiting, done, failed };

// One synchronous send per peer this rank charged: its completion is the
// peer's receipt, which the barrier's entry waits for. A zero is not sent:
// the peer's table holds +0.0 for it already.
bool send_charges(Exchange& x, int self, std::span<const double> charged) {
  for (std::size_t peer = 0; peer < charged.size(); ++peer) {
    if (static_cast<int>(peer) == self || charged[peer] == 0.0) continue;
    MPI_Request request;
    if (PMPI_Issend(&charged[peer], 1, MPI_DOUBLE, static_cast<int>(peer), x.tag, x.comm,
                    &request) != MPI_SUCCESS)
      return false;
    x.sends.push_back(request);
  }
  return true;
}

// A charge that has come, if one has, into the table at its sender's
// rank. Received with a request bounded by the deadline, not a blocking
// receive: a sender that gave up may never progress the transfer.
Progress receive_charge(Exchange& x, bool& received) {
  received = false;
  int flag = 0;
  MPI_Status status;
  if (PMPI_Iprobe(MPI_ANY_SOURCE, x.tag, x.comm, &flag, &status) != MPI_SUCCESS)
    return Progress::failed;
  if (flag == 0) return Progress::waiting;
  const int source = status.MPI_SOURCE;
  if (source < 0 || static_cast<std::size_t>(source) >= x.waited_for_me.size())
    return Progress::failed;
  MPI_Request request;
  if (PMPI_Irecv(&x.waited_for_me[static_cast<std::size_t>(source)], 1, MPI_DOUBLE, source, x.tag,
                 x.comm, &request) != MPI_SUCCESS ||
      !pmpi_complete(request, x.deadline))
    return Progress::failed;
  received = true;
  return Progress::waiting;
}

// This rank's sends, then the barrier: entered once every peer has this
// rank's charges, done once every rank has entered it.
Progress test_sends_then_barrier(Exchange& x) {
  int done = 0;
  if (!x.in_barrier) {
    if (!x.sends.empty() && PMPI_Testall(static_cast<int>(x.sends.size()), x.sends.data(), &done,
                                         MPI_STATUSES_IGNORE) != MPI_SUCCESS)
      return Progress::failed;
    if (!x.sends.empty() && done == 0) return Progress::waiting;
    if (PMPI_Ibarrier(x.comm, &x.barrier) != MPI_SUCCESS) return Progress::failed;
    x.in_barrier = true;
  }
  if (PMPI_Test(&x.barrier, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return Progress::failed;
  return done != 0 ? Progress::done : Progress::waiting;
}

// One poll: every charge that has come, taken, then the sends or the
// barrier tested. Until the barrier completes, a peer's charge may still
// come, even after this rank entered it.
Progress poll(Exchange& x) {
  for (bool received = true; received;) {
    if (receive_charge(x, received) == Progress::failed) return Progress::failed;
  }
  return test_sends_then_barrier(x);
}

}  // namespace

bool exchange_charges(MPI_Comm comm, int tag, std::span<const double> charged,
                      std::span<double> waited_for_me, MpiDeadline deadline) {
  int self = 0;
  PMPI_Comm_rank(comm, &self);
  if (charged.size() != waited_for_me.size() ||
      static_cast<std::size_t>(self) >= waited_for_me.size())
    return false;
  std::fill(waited_for_me.begin(), waited_for_me.end(), 0.0);
  // This rank's charge to itself (a Sendrecv with itself) is its own.
  waited_for_me[static_cast<std::size_t>(self)] = charged[static_cast<std::size_t>(self)];
  Exchange x{comm, tag, waited_for_me, deadline, {}};
  if (!send_charges(x, self, charged)) return false;
  Progress progress = Progress::waiting;
  poll_until(deadline, kLibraryPollPause, [&] {
    progress = poll(x);
    return progress != Progress::waiting;
  });
  return progress == Progress::done;
}

}  // namespace corenoise
