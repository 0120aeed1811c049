// A rank's point-to-point waits, charged to the ranks it waited for, as
// the waits at a collective are charged to the last rank to arrive
// (step_math.h). A receive waits for its source (a late sender), a
// blocking send or a send request for its destination (a late receiver:
// a rendezvous send returns only once the receive is posted), a Sendrecv
// for its source. A wait that completes requests from several peers is
// shared among the peers whose requests were still pending when it began
// (the ones already complete did not hold it up).
//
// What a rank caused in exchanges is netted per pair of ranks: over each
// peer, how much longer the peer waited for it than it waited for the
// peer (net_wait_caused). A wait in an exchange holds more than lateness:
// the transfer, and a sender's wait for its receiver to make progress
// inside MPI (a rendezvous completes only when the receiver's library
// runs: a receiver already computing the next step holds the sender up
// without being late). Both show on the two sides alike and cancel; a rank
// that is late is waited for and waits for no one. This is the exchange's
// counterpart of the collectives' subtraction of the least wait.
//
// RequestPeers remembers, per pending nonblocking request, the peer it
// waits for: the wait that completes a request (MPI_Wait, ...) no longer
// sees the call that made it.
//
// Pure and MPI-free: the MPI side (pmpi_records.h, pmpi_fortran.cpp,
// comm_ranks.h) turns communicator
// ranks into ranks of the job and request handles into keys. Nothing is
// allocated after construction: the per-call path only indexes and adds.
// Not thread-safe: the recording thread's alone.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace corenoise {

class PeerWaits {
 public:
  explicit PeerWaits(int ranks = 0)
      : charged_(static_cast<std::size_t>(ranks > 0 ? ranks : 0), 0.0) {}

  // `seconds` shared equally among `peers` (ranks of the job); a peer out of
  // range (unknown: a persistent request, an ignored status) is uncharged.
  void charge(std::span<const int> peers, double seconds);
  // Seconds charged to each rank of the job, by this rank's waits.
  std::span<const double> charged() const { return charged_; }
  double uncharged_seconds() const { return uncharged_; }

 private:
  std::vector<double> charged_;
  double uncharged_ = 0;
};

// Sum over peers i of max(0, waited_for_me[i] - i_waited_for[i]): the
// others' waits charged to this rank (what each rank i charged it) net of
// this rank's waits charged to them. Spans of the job's size.
double net_wait_caused(std::span<const double> waited_for_me, std::span<const double> i_waited_for);

// Peers of pending requests, by request handle: a direct-mapped table.
// A new request overwrites the slot it hashes to, so a request completed
// out of sight (by a call not wrapped) never fills the table, and one
// lost to a collision is only uncharged. The handle's key is its bits.
class RequestPeers {
 public:
  static constexpr std::size_t kSlots = 4096;
  // The peer's rank in the job, or kAnySource with the communicator's key:
  // the status at completion says who sent it, in that communicator's ranks.
  static constexpr int kAnySource = -2;
  static constexpr int kUnknown = -1;

  struct Pending {
    std::uint64_t request = 0;
    std::uint64_t comm = 0;  // only for kAnySource
    int peer = kUnknown;
  };

  void add(std::uint64_t request, int peer, std::uint64_t comm = 0);
  // The request's entry, removed; peer kUnknown when it is not known.
  Pending take(std::uint64_t request);
  // Without removing it.
  Pending find(std::uint64_t request) const;
  void forget(std::uint64_t request) { take(request); }

 private:
  static std::size_t slot(std::uint64_t request);
  std::array<Pending, kSlots> slots_{};
  std::array<bool, kSlots> used_{};
};

}  // namespace corenoise
