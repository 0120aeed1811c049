#include "collector/job/rank/peer_waits.h"

#include <algorithm>

namespace corenoise {

void PeerWaits::charge(std::span<const int> peers, double seconds) {
  if (seconds <= 0) return;
  std::size_t known = 0;
  for (int peer : peers)
    known += peer >= 0 && static_cast<std::size_t>(peer) < charged_.size() ? 1 : 0;
  if (known == 0) {
    uncharged_ += seconds;
    return;
  }
  // Each peer's share is the wait over the peers, known or not, so that an
  // unknown peer's share is not pinned on the known ones.
  const double share = seconds / static_cast<double>(peers.size());
  for (int peer : peers) {
    if (peer >= 0 && static_cast<std::size_t>(peer) < charged_.size()) {
      charged_[static_cast<std::size_t>(peer)] += share;
    } else {
      uncharged_ += share;
    }
  }
}

double net_wait_caused(std::span<const double> waited_for_me,
                       std::span<const double> i_waited_for) {
  double caused = 0;
  for (std::size_t i = 0; i < waited_for_me.size(); ++i) {
    const double back = i < i_waited_for.size() ? i_waited_for[i] : 0.0;
    caused += std::max(0.0, waited_for_me[i] - back);
  }
  return caused;
}

std::size_t RequestPeers::slot(std::uint64_t request) {
  // Fibonacci hashing: handles are small integers (MPICH) or aligned
  // pointers (Open MPI), both spread by the multiply; the top 12 bits.
  static_assert(kSlots == 4096);
  return static_cast<std::size_t>((request * 0x9E3779B97F4A7C15ULL) >> 52);
}

void RequestPeers::add(std::uint64_t request, int peer, std::uint64_t comm) {
  const std::size_t s = slot(request);
  slots_[s] = {request, comm, peer};
  used_[s] = true;
}

RequestPeers::Pending RequestPeers::find(std::uint64_t request) const {
  const std::size_t s = slot(request);
  if (!used_[s] || slots_[s].request != request) return {request, 0, kUnknown};
  return slots_[s];
}

RequestPeers::Pending RequestPeers::take(std::uint64_t request) {
  const Pending found = find(request);
  const std::size_t s = slot(request);
  if (used_[s] && slots_[s].request == request) used_[s] = false;
  return found;
}

}  // namespace corenoise
