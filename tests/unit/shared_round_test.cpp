// One round paced across processes (the ranks of a node with one rank per
// core): the turn ring and the spin barrier in memory shared by forked
// processes, and a whole Runner round split over two processes. Also the
// samples codec that carries each rank's samples to its leader.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <vector>

#include "probe/runner.h"
#include "probe/samples_codec.h"
#include "probe/spin_barrier.h"
#include "probe/topology.h"
#include "probe/turn_taking.h"

namespace corenoise {
namespace {

// Anonymous shared memory that survives fork(), zeroed.
class SharedMemory {
 public:
  explicit SharedMemory(std::size_t bytes) : bytes_(bytes) {
    memory_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory_ == MAP_FAILED) throw std::runtime_error("mmap failed");
  }
  ~SharedMemory() { munmap(memory_, bytes_); }
  void* get() const { return memory_; }
  std::byte* bytes() const { return static_cast<std::byte*>(memory_); }

 private:
  std::size_t bytes_;
  void* memory_;
};

// Runs `body(i)` in `n` processes (i = 0 in this one, the rest forked) and
// returns true if every child exited 0. A child that throws exits 1.
bool in_processes(int n, const std::function<void(int)>& body) {
  std::vector<pid_t> children;
  for (int i = 1; i < n; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      int code = 0;
      try {
        body(i);
      } catch (...) {
        code = 1;
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  body(0);
  bool ok = true;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return ok;
}

TEST(SharedTurnTaking, ProcessesTakeTurnsInRingOrder) {
  constexpr int kProcesses = 3;
  constexpr int kTurns = 50;
  const std::size_t state = TurnTaking::state_bytes(kProcesses);
  SharedMemory memory(state + sizeof(std::atomic<std::uint32_t>) + kProcesses * kTurns);
  TurnTaking::construct_state(memory.get(), kProcesses);
  auto* written = new (memory.bytes() + state) std::atomic<std::uint32_t>(0);
  auto* log = reinterpret_cast<char*>(written + 1);

  ASSERT_TRUE(in_processes(kProcesses, [&](int who) {
    TurnTaking turns(memory.get(), kProcesses, nullptr);
    turns.prepared();
    for (int t = 0; t < kTurns; ++t) {
      if (!turns.wait_turn(static_cast<std::size_t>(who))) throw std::runtime_error("cancelled");
      log[written->fetch_add(1)] = static_cast<char>('0' + who);
      turns.pass(static_cast<std::size_t>(who));
    }
  }));
  ASSERT_EQ(written->load(), static_cast<std::uint32_t>(kProcesses * kTurns));
  for (int i = 0; i < kProcesses * kTurns; ++i) {
    ASSERT_EQ(log[i], '0' + i % kProcesses) << "turn " << i;
  }
}

TEST(SharedTurnTaking, HandOverTimeIsSeenByTheNextProcess) {
  const std::size_t state = TurnTaking::state_bytes(2);
  SharedMemory memory(state + 2 * sizeof(std::uint64_t));
  TurnTaking::construct_state(memory.get(), 2);
  auto* seen = reinterpret_cast<std::uint64_t*>(memory.bytes() + state);
  ASSERT_TRUE(in_processes(2, [&](int who) {
    TurnTaking turns(memory.get(), 2, nullptr);
    turns.prepared();
    turns.wait_turn(static_cast<std::size_t>(who));
    seen[who] = turns.handed_over();
    turns.pass(static_cast<std::size_t>(who));
  }));
  EXPECT_EQ(seen[0], 0u);  // nobody handed the first turn over
  EXPECT_GT(seen[1], 0u);
}

TEST(SharedSpinBarrier, NoProcessPassesAPhaseBeforeAllArrive) {
  constexpr int kProcesses = 2;
  constexpr int kPhases = 200;
  SharedMemory memory(sizeof(SpinBarrier::State) + 64);
  auto* state = new (memory.get()) SpinBarrier::State;
  auto* arrivals = new (memory.bytes() + 64) std::atomic<int>(0);
  ASSERT_TRUE(in_processes(kProcesses, [&](int) {
    SpinBarrier barrier(kProcesses, nullptr, state);
    for (int phase = 1; phase <= kPhases; ++phase) {
      arrivals->fetch_add(1);
      barrier.arrive_and_wait();
      // Everyone of this phase has arrived, nobody of the next one yet.
      const int now = arrivals->load();
      if (now < phase * kProcesses || now > (phase + 1) * kProcesses) {
        throw std::runtime_error("barrier let a process through early");
      }
      barrier.arrive_and_wait();
    }
  }));
}

ProbeSettings quick_settings() {
  ProbeSettings s;
  s.samples = 3;
  s.matmul_size = 32;
  s.reps = 4;
  s.detour_window_seconds = 0.002;
  s.stream_bytes = 1 << 20;
  return s;
}

// Each process measures one CPU; the two pace each other through the
// segment, and each gets complete samples of its own CPU.
void expect_shared_round_completes(Mode mode) {
  const Topology topology = Topology::load("native");
  std::vector<unsigned> cpus;
  for (const auto& pu : topology.pus()) {
    if (pu.usable()) cpus.push_back(pu.cpu);
  }
  ASSERT_GE(cpus.size(), 2u) << "this test needs two usable CPUs";
  const std::size_t bytes = shared_round_bytes(2);
  SharedMemory memory(bytes);
  prepare_shared_round(memory.get(), 2);
  const Runner runner(quick_settings(), topology);
  ASSERT_TRUE(in_processes(2, [&](int who) {
    const SharedRound shared{memory.get(), 2, static_cast<std::size_t>(who)};
    const RoundSamples round = runner.run(mode, {cpus[who]}, {}, nullptr, &shared);
    const CpuSamples& s = round.cpus.at(0);
    if (!s.error.empty() || s.matmul_seconds.size() != 3 || s.detours.size() != 3 ||
        s.samples[ProbeKind::clock].size() != 3 || s.samples[ProbeKind::stream].size() != 3) {
      throw std::runtime_error("incomplete samples");
    }
  }));
}

TEST(SharedRoundRunner, IsolatedRoundSpansTwoProcesses) {
  expect_shared_round_completes(Mode::isolated);
}

TEST(SharedRoundRunner, ConcurrentRoundSpansTwoProcesses) {
  expect_shared_round_completes(Mode::concurrent);
}

TEST(SharedRoundRunner, RejectsParticipantsThatDoNotCoverTheCpus) {
  const Runner runner(quick_settings(), Topology::load("synthetic:pack:1 core:4 pu:1"));
  std::vector<std::byte> memory(shared_round_bytes(2));
  const SharedRound shared{memory.data(), 2, 1};
  EXPECT_THROW(runner.run(Mode::isolated, {0, 1}, {}, nullptr, &shared), std::invalid_argument);
}

TEST(SamplesCodec, RoundTripsEveryFieldExactly) {
  CpuSamples s;
  s.cpu = 17;
  s.matmul_seconds = {1.0 / 3, 2.5e-5};
  s.matmul_product_seconds = {0.1, 0.2 + 1e-17, 3.0000000000000004};
  s.samples[ProbeKind::clock] = {3.1e9};
  s.samples[ProbeKind::stream] = {};
  DetourResult d;
  d.window_seconds = 0.025;
  d.threshold_seconds = 1e-6;
  d.count = 3;
  d.total_seconds = 1.2345678901234567e-4;
  d.max_seconds = 9e-5;
  d.histogram[0] = 2;
  d.histogram[kDetourBuckets - 1] = 1;
  d.interrupts = 4;
  d.steal_seconds = 0.0;
  d.preemptions = 1;
  d.preempted_seconds = 1e-3;
  s.detours = {d, DetourResult{}};
  s.work[ProbeKind::matmul] = {4.2e6, 0, 0};
  s.work[ProbeKind::stream] = {0, 1 << 24, 0};
  s.error = "";

  const CpuSamples back = decode_samples(encode_samples(s));
  EXPECT_EQ(back.cpu, 17u);
  EXPECT_EQ(back.matmul_seconds, s.matmul_seconds);
  EXPECT_EQ(back.matmul_product_seconds, s.matmul_product_seconds);
  EXPECT_EQ(back.samples[ProbeKind::clock], s.samples[ProbeKind::clock]);
  EXPECT_TRUE(back.samples[ProbeKind::stream].empty());
  ASSERT_EQ(back.detours.size(), 2u);
  const DetourResult& b = back.detours[0];
  EXPECT_EQ(b.total_seconds, d.total_seconds);
  EXPECT_EQ(b.histogram, d.histogram);
  EXPECT_EQ(b.interrupts, d.interrupts);
  EXPECT_FALSE(b.softirqs.has_value());
  EXPECT_EQ(b.steal_seconds, d.steal_seconds);
  EXPECT_EQ(b.preempted_seconds, d.preempted_seconds);
  EXPECT_EQ(b.preemptions, 1u);
  EXPECT_FALSE(back.detours[1].interrupts.has_value());
  EXPECT_EQ(back.work[ProbeKind::matmul].flops, 4.2e6);
  EXPECT_EQ(back.work[ProbeKind::stream].bytes, double{1 << 24});
  EXPECT_FALSE(back.culprits.has_value());  // untraced stays untraced
}

// A rank of `sweep --rank-per-core` matches its own detours (it alone has
// its windows' marks) and hands its leader the culprits.
TEST(SamplesCodec, CarriesTheRanksCulprits) {
  CpuSamples s;
  s.cpu = 3;
  trace::Attribution a;
  a.detour_ticks = 3'000'000;
  a.detour_seconds = 1e-3;
  a.lost_events = 7;
  a.overran = true;
  a.culprits.push_back({trace::CulpritKind::task, "noise_injector", 4242, 49, "FIFO 50", 2'000'000,
                        17, 2.0 / 3 * 1e-3});
  a.culprits.push_back({trace::CulpritKind::softirq, "NET_RX", 3, -1, "", 1'000'000, 9, 1e-3 / 3});
  s.culprits = a;
  const CpuSamples back = decode_samples(encode_samples(s));
  ASSERT_TRUE(back.culprits.has_value());
  EXPECT_EQ(back.culprits->detour_ticks, a.detour_ticks);
  EXPECT_EQ(back.culprits->detour_seconds, a.detour_seconds);
  EXPECT_EQ(back.culprits->lost_events, 7u);
  EXPECT_TRUE(back.culprits->overran);
  ASSERT_EQ(back.culprits->culprits.size(), 2u);
  const trace::Culprit& c = back.culprits->culprits[0];
  EXPECT_EQ(c.kind, trace::CulpritKind::task);
  EXPECT_EQ(c.name, "noise_injector");
  EXPECT_EQ(c.id, 4242);
  EXPECT_EQ(c.prio, 49);
  EXPECT_EQ(c.scheduling, "FIFO 50");
  EXPECT_EQ(c.ticks, 2'000'000u);
  EXPECT_EQ(c.detours, 17u);
  EXPECT_EQ(c.seconds, a.culprits[0].seconds);
  EXPECT_EQ(back.culprits->culprits[1].kind, trace::CulpritKind::softirq);
  EXPECT_EQ(back.culprits->culprits[1].name, "NET_RX");
  // A kind this build does not know is refused, not misread.
  s.culprits->culprits[0].kind = static_cast<trace::CulpritKind>(200);
  EXPECT_THROW(decode_samples(encode_samples(s)), std::invalid_argument);
}

TEST(SamplesCodec, RejectsForeignBytes) {
  const std::vector<std::byte> garbage{std::byte{0x81}, std::byte{0xa3}, std::byte{'c'}};
  EXPECT_THROW(decode_samples(garbage), std::invalid_argument);
  EXPECT_THROW(decode_samples({}), std::invalid_argument);
}

}  // namespace
}  // namespace corenoise
