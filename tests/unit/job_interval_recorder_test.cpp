// collector/job/rank/interval_recorder.h: the per-call bookkeeping of one rank,
// driven by scripted times (binary fractions, so that sums are exact).
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <set>
#include <vector>

#include "collector/job/rank/interval_recorder.h"

namespace corenoise {
namespace {

TEST(IntervalRecorderTest, ComputeAndWaitTotalsFromScriptedCalls) {
  // MPI_Init returned at wall 10 s, thread CPU 1 s.
  IntervalRecorder recorder(10.0, 1.0);
  EXPECT_EQ(recorder.totals().calls, 0u);
  EXPECT_DOUBLE_EQ(recorder.compute_seconds_at(10.5), 0.5);  // the open interval

  recorder.enter(12.0, 2.5);  // 2 s computing, 1.5 s of it on the CPU
  EXPECT_DOUBLE_EQ(recorder.totals().compute_seconds, 2.0);
  EXPECT_DOUBLE_EQ(recorder.totals().compute_cpu_seconds, 1.5);
  // Inside a call the open interval is a wait, not compute.
  EXPECT_DOUBLE_EQ(recorder.compute_seconds_at(12.25), 2.0);
  recorder.exit(12.5, 2.75, MpiCall::Allreduce, 0x1000, true);  // 0.5 s waiting
  EXPECT_DOUBLE_EQ(recorder.totals().wait_seconds, 0.5);

  // The CPU time spent inside the call (polling) is not compute CPU time.
  recorder.enter(15.5, 5.75);  // 3 s computing, 3 s on the CPU
  EXPECT_DOUBLE_EQ(recorder.totals().compute_seconds, 5.0);
  EXPECT_DOUBLE_EQ(recorder.totals().compute_cpu_seconds, 4.5);
  recorder.exclude(0.25);  // the library sampled for 0.25 s inside the call
  recorder.exit(16.5, 6.0, MpiCall::Allreduce, 0x1000, true);  // 1 s, 0.75 s of it a wait
  EXPECT_DOUBLE_EQ(recorder.totals().wait_seconds, 1.25);

  recorder.enter(17.0, 6.25);
  recorder.exit(17.25, 6.25, MpiCall::Barrier, 0x2000, false);

  const IntervalTotals& t = recorder.totals();
  EXPECT_DOUBLE_EQ(t.compute_seconds, 5.5);
  EXPECT_DOUBLE_EQ(t.compute_cpu_seconds, 4.75);
  EXPECT_DOUBLE_EQ(t.wait_seconds, 1.5);
  EXPECT_EQ(t.calls, 3u);
  EXPECT_DOUBLE_EQ(recorder.compute_seconds_at(18.0), 5.5 + 0.75);
  // Inside the calls the thread was on its CPU 0.25 s of the first, none
  // of the second (its 0.25 s of CPU was the library's sampling), none of
  // the third.
  EXPECT_DOUBLE_EQ(t.wait_cpu_seconds, 0.25);
  // Only the two steps (step = true) are in the step waits, each as its
  // wall time, the library's own sampling left out: time off the CPU
  // inside a wait (a yielding or sleeping MPI) is waiting, not lateness.
  EXPECT_EQ(recorder.step_waits().steps(), 2u);
  ASSERT_EQ(recorder.step_waits().bins().size(), 2u);
  EXPECT_DOUBLE_EQ(recorder.step_waits().bins()[0], 0.5);
  EXPECT_DOUBLE_EQ(recorder.step_waits().bins()[1], 0.75);
}

// A fast call and its short compute intervals (under kUnreadInterval) are
// counted on the CPU without a reading of the thread's CPU clock; the next
// reading settles them: the CPU time between two readings is the intervals'
// between them, never more or less.
TEST(IntervalRecorderTest, ShortIntervalsAreCountedOnTheCpuUnread) {
  constexpr double kShort = 1.0 / 65536;  // 15 us: unread
  static_assert(kShort < IntervalRecorder::kUnreadInterval);
  constexpr double kNone = IntervalRecorder::kCpuNotRead;
  IntervalRecorder recorder(10.0, 1.0);
  EXPECT_FALSE(recorder.wants_cpu(10.0 + kShort));
  recorder.enter(10.0 + kShort, kNone);
  EXPECT_FALSE(recorder.wants_cpu(10.0 + 2 * kShort));
  recorder.exit(10.0 + 2 * kShort, kNone, MpiCall::Barrier, 0x1000, true);
  EXPECT_DOUBLE_EQ(recorder.totals().compute_cpu_seconds, kShort);
  EXPECT_DOUBLE_EQ(recorder.totals().wait_cpu_seconds, kShort);
  EXPECT_DOUBLE_EQ(recorder.step_waits().bins()[0], kShort);
  const auto cpu = [&recorder] {
    return recorder.totals().compute_cpu_seconds + recorder.totals().wait_cpu_seconds;
  };
  // A long compute interval, 1 s: read. The clock says 1.5 s: 0.5 s on
  // the CPU since MPI_Init, of which the short intervals had 2 x kShort.
  EXPECT_TRUE(recorder.wants_cpu(11.0 + 2 * kShort));
  recorder.enter(11.0 + 2 * kShort, 1.5);
  EXPECT_DOUBLE_EQ(recorder.totals().compute_seconds, 1.0 + kShort);
  EXPECT_DOUBLE_EQ(cpu(), 0.5);
  // A short wait and a short compute interval, counted on the CPU; then a
  // long wait, read, the clock only kShort / 2 on: the two short ones were
  // off their CPU for 1.5 x kShort of their 2 x kShort. That is taken back
  // from them, half each, and the long wait had none.
  recorder.exit(11.0 + 3 * kShort, kNone, MpiCall::Barrier, 0x1000, true);
  recorder.enter(11.0 + 4 * kShort, kNone);
  recorder.exit(12.0 + 4 * kShort, 1.5 + kShort / 2, MpiCall::Barrier, 0x1000, true);
  EXPECT_DOUBLE_EQ(cpu(), 0.5 + kShort / 2);
  EXPECT_DOUBLE_EQ(recorder.totals().compute_cpu_seconds, 0.5 - 0.75 * kShort);
  EXPECT_DOUBLE_EQ(recorder.totals().wait_seconds, 1.0 + 2 * kShort);
}

// Point-to-point calls' waits are also summed apart (mpi_calls.h's
// roles), and exit() returns the wait, which the session charges to peers.
TEST(IntervalRecorderTest, ExchangeWaitsAreSummedApartAndReturned) {
  IntervalRecorder recorder(0.0, 0.0);
  recorder.enter(1.0, 1.0);
  EXPECT_DOUBLE_EQ(recorder.exit(1.5, 1.0, MpiCall::Waitall, 0x10, false), 0.5);
  recorder.enter(2.0, 1.5);
  EXPECT_DOUBLE_EQ(recorder.exit(2.25, 1.5, MpiCall::Send, 0x20, false), 0.25);
  recorder.enter(3.0, 2.0);
  EXPECT_DOUBLE_EQ(recorder.exit(4.0, 2.0, MpiCall::Allreduce, 0x30, true), 1.0);
  recorder.enter(5.0, 3.0);
  recorder.exit(5.125, 3.0, MpiCall::Bcast, 0x40, false);
  EXPECT_DOUBLE_EQ(recorder.totals().wait_seconds, 1.875);
  EXPECT_DOUBLE_EQ(recorder.totals().exchange_wait_seconds, 0.75);
  EXPECT_EQ(mpi_call_role(MpiCall::Mprobe), MpiCallRole::exchange);
  EXPECT_EQ(mpi_call_role(MpiCall::Scan), MpiCallRole::rooted);
  EXPECT_EQ(mpi_call_role(MpiCall::Reduce_scatter_block), MpiCallRole::collective);
  EXPECT_EQ(mpi_call_name(MpiCall::Sendrecv_replace), "MPI_Sendrecv_replace");
  EXPECT_EQ(mpi_call_name(MpiCall::Bsend), "MPI_Bsend");
}

TEST(IntervalRecorderTest, ExcludedTimeCountsOnlyForTheCallInProgress) {
  IntervalRecorder recorder(0.0, 0.0);
  recorder.exclude(0.5);  // before the call: reset by enter()
  recorder.enter(1.0, 1.0);
  recorder.exit(2.0, 1.0, MpiCall::Barrier, 0x10, false);
  EXPECT_DOUBLE_EQ(recorder.totals().wait_seconds, 1.0);

  recorder.enter(3.0, 2.0);
  recorder.exclude(0.125);
  recorder.exclude(0.125);  // two samples in one call add up
  recorder.exit(4.0, 2.0, MpiCall::Barrier, 0x10, false);
  EXPECT_DOUBLE_EQ(recorder.totals().wait_seconds, 1.75);

  // More excluded than the call lasted: a wait of 0, never negative.
  recorder.enter(5.0, 3.0);
  recorder.exclude(2.0);
  recorder.exit(5.5, 3.0, MpiCall::Barrier, 0x10, false);
  EXPECT_DOUBLE_EQ(recorder.totals().wait_seconds, 1.75);
  EXPECT_EQ(recorder.totals().calls, 3u);
  const auto sites = recorder.call_sites();
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_DOUBLE_EQ(sites[0].wait_seconds, 1.75);
  EXPECT_DOUBLE_EQ(sites[0].wait_max_seconds, 1.0);
}

TEST(IntervalRecorderTest, ASiteIsOneCallFromOneReturnAddress) {
  IntervalRecorder recorder(0.0, 0.0);
  double now = 0;
  const auto call = [&](MpiCall c, std::uintptr_t address, double wait) {
    now += 1.0;
    recorder.enter(now, now);
    now += wait;
    recorder.exit(now, now, c, address, false);
  };
  call(MpiCall::Allreduce, 0x4000, 0.5);
  call(MpiCall::Allreduce, 0x4000, 0.25);  // same call, same address: the same site
  call(MpiCall::Allreduce, 0x5000, 1.0);   // another address: another site
  call(MpiCall::Bcast, 0x4000, 0.125);     // another call from the same address

  const std::vector<CallSite> sites = recorder.call_sites();
  ASSERT_EQ(sites.size(), 3u);
  EXPECT_EQ(sites[0].call, MpiCall::Allreduce);
  EXPECT_EQ(sites[0].return_address, 0x4000u);
  EXPECT_EQ(sites[0].calls, 2u);
  EXPECT_DOUBLE_EQ(sites[0].wait_seconds, 0.75);
  EXPECT_DOUBLE_EQ(sites[0].wait_max_seconds, 0.5);
  EXPECT_EQ(sites[1].call, MpiCall::Allreduce);
  EXPECT_EQ(sites[1].return_address, 0x5000u);
  EXPECT_EQ(sites[1].calls, 1u);
  EXPECT_DOUBLE_EQ(sites[1].wait_seconds, 1.0);
  EXPECT_EQ(sites[2].call, MpiCall::Bcast);
  EXPECT_EQ(sites[2].return_address, 0x4000u);
  EXPECT_EQ(sites[2].calls, 1u);
  EXPECT_DOUBLE_EQ(sites[2].wait_seconds, 0.125);
}

TEST(IntervalRecorderTest, SitesComeInFirstCallOrderNotHashOrder) {
  IntervalRecorder recorder(0.0, 0.0);
  // Addresses spread over the hash table; called in a scrambled order,
  // then all again in reverse (a repeat must not move a site).
  std::vector<std::uintptr_t> addresses;
  for (std::uintptr_t i = 0; i < 60; ++i) addresses.push_back(0x400000 + ((i * 37) % 60) * 0x18);
  double now = 0;
  for (std::uintptr_t a : addresses) {
    recorder.enter(now += 1, 0);
    recorder.exit(now += 0.5, 0, MpiCall::Wait, a, false);
  }
  for (auto it = addresses.rbegin(); it != addresses.rend(); ++it) {
    recorder.enter(now += 1, 0);
    recorder.exit(now += 0.5, 0, MpiCall::Wait, *it, false);
  }
  const auto sites = recorder.call_sites();
  ASSERT_EQ(sites.size(), addresses.size());
  for (std::size_t i = 0; i < sites.size(); ++i) {
    EXPECT_EQ(sites[i].return_address, addresses[i]) << "site " << i;
    EXPECT_EQ(sites[i].calls, 2u);
  }
}

// Each step bin keeps the site of its first step, so that the worst steps
// can be named by their call (job_reduction.cpp), in the table or past it,
// and merging bins keeps the first of each pair.
TEST(IntervalRecorderTest, EachStepBinNamesTheSiteOfItsFirstStep) {
  IntervalRecorder recorder(0.0, 0.0, 4);
  double now = 0;
  const auto step = [&](MpiCall c, std::uintptr_t address) {
    recorder.enter(now += 1, 0);
    recorder.exit(now += 0.5, 0, c, address, true);
  };
  step(MpiCall::Barrier, 0x100);
  step(MpiCall::Allreduce, 0x200);
  step(MpiCall::Barrier, 0x100);
  step(MpiCall::Allreduce, 0x200);
  const auto& tags = recorder.step_waits().sites();
  ASSERT_EQ(tags.size(), 4u);
  for (std::size_t i = 0; i < tags.size(); ++i) {
    const CallSite* site = recorder.site_at(tags[i]);
    ASSERT_NE(site, nullptr);
    EXPECT_EQ(site->call, i % 2 == 0 ? MpiCall::Barrier : MpiCall::Allreduce);
  }
  step(MpiCall::Bcast, 0x300);  // the fifth step merges the bins in pairs
  ASSERT_EQ(recorder.step_waits().steps_per_bin(), 2u);
  ASSERT_EQ(tags.size(), 3u);
  EXPECT_EQ(recorder.site_at(tags[0])->call, MpiCall::Barrier);
  EXPECT_EQ(recorder.site_at(tags[1])->call, MpiCall::Barrier);
  EXPECT_EQ(recorder.site_at(tags[2])->call, MpiCall::Bcast);
  EXPECT_EQ(recorder.site_at(0xFFFF), nullptr);
}

// Past the table's kMaxCallSites sites, a step's site is its call's
// overflow entry, and its tag still names it.
TEST(IntervalRecorderTest, AStepPastTheSiteTableNamesItsCallsOverflowEntry) {
  IntervalRecorder recorder(0.0, 0.0);
  double now = 0;
  for (std::uintptr_t i = 0; i < IntervalRecorder::kMaxCallSites; ++i) {
    recorder.enter(now += 1, 0);
    recorder.exit(now += 0.5, 0, MpiCall::Recv, 0x10000 + 8 * i, false);
  }
  recorder.enter(now += 1, 0);
  recorder.exit(now += 0.5, 0, MpiCall::Allreduce, 0x90000, true);
  const auto& tags = recorder.step_waits().sites();
  ASSERT_EQ(tags.size(), 1u);
  const CallSite* site = recorder.site_at(tags[0]);
  ASSERT_NE(site, nullptr);
  EXPECT_EQ(site->call, MpiCall::Allreduce);
  EXPECT_EQ(site->return_address, 0u);  // the overflow entry
}

TEST(IntervalRecorderTest, SitesPastTheTableGoToOneEntryPerCall) {
  IntervalRecorder recorder(0.0, 0.0);
  double now = 0;
  const auto call = [&](MpiCall c, std::uintptr_t address) {
    recorder.enter(now += 1, 0);
    recorder.exit(now += 0.5, 0, c, address, false);
  };
  // kMaxCallSites distinct sites fill the table (header: "Sites past
  // kMaxCallSites are counted in one entry per call").
  for (std::uintptr_t i = 0; i < IntervalRecorder::kMaxCallSites; ++i)
    call(MpiCall::Recv, 0x10000 + 8 * i);
  // Past it: two more Allreduce sites and one Barrier site.
  call(MpiCall::Allreduce, 0x90000);
  call(MpiCall::Allreduce, 0x90008);
  call(MpiCall::Barrier, 0x90010);
  // A site already in the table still finds its own entry.
  call(MpiCall::Recv, 0x10000);

  const auto sites = recorder.call_sites();
  ASSERT_EQ(sites.size(), IntervalRecorder::kMaxCallSites + 2);
  for (std::size_t i = 0; i < IntervalRecorder::kMaxCallSites; ++i) {
    EXPECT_EQ(sites[i].call, MpiCall::Recv);
    EXPECT_EQ(sites[i].return_address, 0x10000 + 8 * i);
    EXPECT_EQ(sites[i].calls, i == 0 ? 2u : 1u);
  }
  // The overflow entries, after the table's, one per call with return
  // address 0 (in MpiCall's order: not a first-call order).
  const auto overflow = [&](MpiCall c) -> const CallSite* {
    for (std::size_t i = IntervalRecorder::kMaxCallSites; i < sites.size(); ++i) {
      if (sites[i].call == c) return &sites[i];
    }
    return nullptr;
  };
  const CallSite* allreduce = overflow(MpiCall::Allreduce);
  ASSERT_NE(allreduce, nullptr);
  EXPECT_EQ(allreduce->return_address, 0u);
  EXPECT_EQ(allreduce->calls, 2u);
  EXPECT_DOUBLE_EQ(allreduce->wait_seconds, 1.0);
  const CallSite* barrier = overflow(MpiCall::Barrier);
  ASSERT_NE(barrier, nullptr);
  EXPECT_EQ(barrier->return_address, 0u);
  EXPECT_EQ(barrier->calls, 1u);
  EXPECT_DOUBLE_EQ(barrier->wait_seconds, 0.5);
  // Every call is counted somewhere.
  std::uint64_t calls = 0;
  for (const auto& s : sites) calls += s.calls;
  EXPECT_EQ(calls, recorder.totals().calls);
}

double sum(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0);
}

TEST(StepWaitsTest, BinsMergeInPairsWhenFull) {
  StepWaits waits(4);
  // Step k waits k seconds (k = 1..9): whole numbers, exact sums.
  for (int k = 1; k <= 4; ++k) waits.add(k);
  EXPECT_EQ(waits.steps_per_bin(), 1u);
  EXPECT_EQ(waits.bins(), (std::vector<double>{1, 2, 3, 4}));

  waits.add(5);  // a fifth bin is needed: the four merge into two pairs
  EXPECT_EQ(waits.steps_per_bin(), 2u);
  EXPECT_EQ(waits.bins(), (std::vector<double>{1 + 2, 3 + 4, 5}));  // the last holds fewer
  for (int k = 6; k <= 8; ++k) waits.add(k);
  EXPECT_EQ(waits.steps_per_bin(), 2u);
  EXPECT_EQ(waits.bins(), (std::vector<double>{1 + 2, 3 + 4, 5 + 6, 7 + 8}));
  EXPECT_EQ(waits.steps(), 8u);

  // Four bins of pairs hold 8 steps; the ninth merges them again into
  // bins of four steps.
  waits.add(9);
  EXPECT_EQ(waits.steps(), 9u);
  EXPECT_EQ(waits.steps_per_bin(), 4u);
  EXPECT_EQ(waits.bins(), (std::vector<double>{1 + 2 + 3 + 4, 5 + 6 + 7 + 8, 9}));
  EXPECT_DOUBLE_EQ(sum(waits.bins()), 45.0);
}

// Each bin ends when its last step did, through every merge: step k ends
// at 10·k seconds.
TEST(StepWaitsTest, EachBinEndsWithItsLastStep) {
  StepWaits waits(4);
  for (int k = 1; k <= 3; ++k) waits.add(k, 0, 10.0 * k);
  EXPECT_EQ(waits.ends(), (std::vector<double>{10, 20, 30}));
  for (int k = 4; k <= 5; ++k) waits.add(k, 0, 10.0 * k);
  EXPECT_EQ(waits.ends(), (std::vector<double>{20, 40, 50}));  // pairs, then the fifth alone
  for (int k = 6; k <= 9; ++k) waits.add(k, 0, 10.0 * k);
  EXPECT_EQ(waits.ends(), (std::vector<double>{40, 80, 90}));
  EXPECT_EQ(waits.ends().size(), waits.bins().size());
}

TEST(StepWaitsTest, BinsAlwaysSumToTheStepsAndStayBounded) {
  StepWaits waits(8);
  double total = 0;
  for (int k = 1; k <= 1000; ++k) {
    const double wait = (k % 7) * 0.125;
    waits.add(wait);
    total += wait;
    ASSERT_LE(waits.bins().size(), 8u) << "after step " << k;
    ASSERT_DOUBLE_EQ(sum(waits.bins()), total) << "after step " << k;
    // Every bin but the last holds steps_per_bin() steps.
    ASSERT_LT((waits.bins().size() - 1) * waits.steps_per_bin(), waits.steps());
    ASSERT_LE(waits.steps(), waits.bins().size() * waits.steps_per_bin());
  }
  EXPECT_EQ(waits.steps(), 1000u);
  EXPECT_EQ(waits.steps_per_bin(), 128u);  // 1000 steps in at most 8 bins: 8 × 128 ≥ 1000 > 8 × 64
}

TEST(StepWaitsTest, AnOddOrTinyBinCountIsRoundedToAnEvenOneOfAtLeastTwo) {
  StepWaits odd(5);  // behaves as 4 bins
  for (int k = 0; k < 5; ++k) odd.add(1.0);
  EXPECT_EQ(odd.steps_per_bin(), 2u);
  EXPECT_EQ(odd.bins(), (std::vector<double>{2, 2, 1}));

  StepWaits tiny(0);  // behaves as 2 bins
  for (int k = 0; k < 3; ++k) tiny.add(1.0);
  EXPECT_EQ(tiny.steps_per_bin(), 2u);
  EXPECT_EQ(tiny.bins(), (std::vector<double>{2, 1}));
}

TEST(IntervalRecorderTest, StepBinsFollowTheRecorderBinLimit) {
  IntervalRecorder recorder(0.0, 0.0, 4);
  double now = 0;
  // A rank on its CPU all the time (polling in its waits): its thread CPU
  // clock runs with the wall clock.
  for (int k = 1; k <= 6; ++k) {
    now += 1;
    recorder.enter(now, now);
    now += k;
    recorder.exit(now, now, MpiCall::Allreduce, 0x1, true);
  }
  EXPECT_EQ(recorder.step_waits().steps(), 6u);
  EXPECT_EQ(recorder.step_waits().steps_per_bin(), 2u);
  EXPECT_EQ(recorder.step_waits().bins(), (std::vector<double>{3, 7, 11}));
}

}  // namespace
}  // namespace corenoise

namespace corenoise {
namespace {

// Python call sites (python_caller.h): a site's caller is wanted at its
// calls 1, 2, 4, 8, ... and at each new longest wait, never otherwise, and
// the lines given are kept with their samples, the first three distinct.
TEST(IntervalRecorderTest, CallersAreSampledAtDoublingCountsAndNewLongestWaits) {
  IntervalRecorder recorder(0.0, 0.0);
  recorder.sample_callers(true);
  double now = 0;
  std::vector<int> wanted;
  for (int i = 1; i <= 20; ++i) {
    now += 1.0;
    recorder.enter(now, now);
    now += i == 11 ? 0.5 : 0.1;  // call 11 waits longest
    recorder.exit(now, now, MpiCall::Barrier, 0x4000, true);
    if (CallSite* site = recorder.wants_caller()) {
      wanted.push_back(i);
      recorder.add_caller(*site, i == 11 ? "app.py:9 in setup" : "app.py:74 in main");
    }
  }
  EXPECT_EQ(wanted, (std::vector<int>{1, 2, 4, 8, 11, 16}));
  const std::vector<CallSite> sites = recorder.call_sites();
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_STREQ(sites[0].python[0].text.data(), "app.py:74 in main");
  EXPECT_EQ(sites[0].python[0].samples, 5u);
  EXPECT_STREQ(sites[0].python[1].text.data(), "app.py:9 in setup");
  EXPECT_EQ(sites[0].python[1].samples, 1u);
  EXPECT_EQ(sites[0].python[2].text[0], '\0');
}

TEST(IntervalRecorderTest, NoCallerIsWantedUnlessAsked) {
  IntervalRecorder recorder(0.0, 0.0);
  recorder.enter(1.0, 1.0);
  recorder.exit(2.0, 2.0, MpiCall::Barrier, 0x4000, true);
  EXPECT_EQ(recorder.wants_caller(), nullptr);
}

}  // namespace
}  // namespace corenoise
