// collector/job/rank/peer_waits.h: exchange waits charged to the peers waited
// for, the per-pair netting, and the request table.
#include <gtest/gtest.h>

#include <vector>

#include "collector/job/rank/peer_waits.h"

namespace corenoise {
namespace {

TEST(PeerWaitsTest, AWaitIsSharedAmongItsPeersAndUnknownPeersAreUncharged) {
  PeerWaits waits(4);
  const std::vector<int> one{2};
  waits.charge(one, 0.5);
  const std::vector<int> two{1, 3};
  waits.charge(two, 0.25);
  // One known peer of two: its half, the other half uncharged.
  const std::vector<int> half_known{3, -1};
  waits.charge(half_known, 1.0);
  waits.charge({}, 0.125);
  const std::vector<int> out_of_range{4};
  waits.charge(out_of_range, 2.0);
  waits.charge(one, -1.0);  // no negative waits
  const auto charged = waits.charged();
  ASSERT_EQ(charged.size(), 4u);
  EXPECT_DOUBLE_EQ(charged[0], 0.0);
  EXPECT_DOUBLE_EQ(charged[1], 0.125);
  EXPECT_DOUBLE_EQ(charged[2], 0.5);
  EXPECT_DOUBLE_EQ(charged[3], 0.125 + 0.5);
  EXPECT_DOUBLE_EQ(waits.uncharged_seconds(), 0.5 + 0.125 + 2.0);
}

TEST(PeerWaitsTest, NettingCancelsWhatBothSidesWaitedAndKeepsTheLateRanksExcess) {
  // Rank 1 is late: rank 0 and rank 2 waited 0.75 s for it; it waited
  // 0.125 s for each (a rendezvous' progress). Ranks 0 and 2 waited for
  // each other alike.
  const std::vector<std::vector<double>> charged = {
      {0.0, 0.75, 0.25}, {0.125, 0.0, 0.125}, {0.25, 0.75, 0.0}};
  const auto column = [&](int rank) {
    std::vector<double> c;
    for (const auto& row : charged) c.push_back(row[static_cast<std::size_t>(rank)]);
    return c;
  };
  EXPECT_DOUBLE_EQ(net_wait_caused(column(1), charged[1]), 2 * (0.75 - 0.125));
  EXPECT_DOUBLE_EQ(net_wait_caused(column(0), charged[0]), 0.0);
  EXPECT_DOUBLE_EQ(net_wait_caused(column(2), charged[2]), 0.0);
}

TEST(RequestPeersTest, PendingRequestsAreFoundOnceAndCollisionsOnlyLoseTheOlder) {
  RequestPeers requests;
  requests.add(0x2c000001, 3);
  requests.add(0x7f00dead0040, RequestPeers::kAnySource, 0x44000000);
  EXPECT_EQ(requests.find(0x2c000001).peer, 3);
  const auto any = requests.take(0x7f00dead0040);
  EXPECT_EQ(any.peer, RequestPeers::kAnySource);
  EXPECT_EQ(any.comm, 0x44000000u);
  EXPECT_EQ(requests.take(0x7f00dead0040).peer, RequestPeers::kUnknown);  // taken
  EXPECT_EQ(requests.take(0x2c000001).peer, 3);
  EXPECT_EQ(requests.find(0x12345).peer, RequestPeers::kUnknown);
  // A reused handle overwrites its old entry.
  requests.add(0x2c000001, 1);
  requests.add(0x2c000001, 2);
  EXPECT_EQ(requests.take(0x2c000001).peer, 2);
  // Thousands of requests never completed in sight: the table stays a
  // table, and every key either maps to its own peer or to none.
  for (std::uint64_t h = 0; h < 20000; ++h) requests.add(0x84000000 + h, static_cast<int>(h % 97));
  int found = 0;
  for (std::uint64_t h = 0; h < 20000; ++h) {
    const int peer = requests.find(0x84000000 + h).peer;
    if (peer == RequestPeers::kUnknown) continue;
    EXPECT_EQ(peer, static_cast<int>(h % 97));
    ++found;
  }
  EXPECT_GT(found, 0);
  EXPECT_LE(found, static_cast<int>(RequestPeers::kSlots));
}

}  // namespace
}  // namespace corenoise
