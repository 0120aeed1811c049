#include "probe/analysis.h"

#include <gtest/gtest.h>

#include <random>

#include "probe/cpu_capacity.h"
#include "probe/report.h"
#include "probe/verdict_text.h"

namespace corenoise {
namespace {

// A core that measured `matmul` seconds, `hz`, lost `noise` of a 1 s detour
// window and streamed 1 GB in `stream` seconds, over 5 samples.
CpuSamples core(unsigned cpu, double matmul = 0.010, double hz = 3e9, double noise = 0.01,
                double stream = 0.05) {
  CpuSamples s;
  s.cpu = cpu;
  s.work[ProbeKind::matmul].flops = 1e9;
  s.work[ProbeKind::stream].bytes = 1e9;
  for (int i = 0; i < 5; ++i) {
    // Small symmetric jitter around the given values.
    const double j = 1 + 0.001 * (i - 2);
    s.matmul_seconds.push_back(matmul * j);
    s.samples[ProbeKind::clock].push_back(hz * j);
    s.samples[ProbeKind::stream].push_back(stream * j);
    DetourResult d;
    d.window_seconds = 0.2;
    d.total_seconds = 0.2 * noise;
    d.count = 10;
    d.max_seconds = d.total_seconds / 10;
    d.preemptions = 3;
    d.preempted_seconds = d.total_seconds / 2;
    s.detours.push_back(d);
  }
  return s;
}

ModeVerdicts judge_all(const std::vector<CpuSamples>& samples,
                       const std::string& kind = "default") {
  std::vector<CoreFigures> cores;
  for (const auto& s : samples) cores.push_back(summarize(s, kind));
  return judge(std::move(cores), Thresholds{});
}

TEST(Analysis, HealthyNodeIsAllOk) {
  std::vector<CpuSamples> samples;
  for (unsigned cpu = 0; cpu < 8; ++cpu) samples.push_back(core(cpu));
  const auto v = judge_all(samples);
  ASSERT_EQ(v.references.size(), 1u);
  EXPECT_EQ(v.references[0].cores, 8u);
  for (const auto& c : v.cores) {
    EXPECT_EQ(c.state, CoreState::ok) << c.cpu << ": " << cause_text(c.cause);
    EXPECT_NEAR(*c.expected_slowdown, 1, 1e-9);
    // The median sample (jitter factor 1).
    EXPECT_NEAR(*c.matmul_flops_per_second, 1e9 / 0.010, 1);
    EXPECT_NEAR(*c.figure[ProbeKind::stream], 1e9 / 0.05, 1);
  }
}

// Traced (docs/verdicts.md, "Named culprits"): the cause names what took the
// time, with the verb each kind needs; the idle task preempts nobody (the
// probe thread was waking up late, and nothing else ran).
TEST(Analysis, ATracedNoisyCoresCauseNamesItsCulprits) {
  std::vector<CpuSamples> samples;
  for (unsigned cpu = 0; cpu < 4; ++cpu) samples.push_back(core(cpu));
  samples[2] = core(2, 0.010, 3e9, 0.12);
  trace::Attribution a;
  const double lost = 5 * 0.2 * 0.12;  // five windows' detours
  a.detour_seconds = lost;
  a.culprits = {{trace::CulpritKind::task, "inj", 1234, 49, "FIFO 50", 0, 15, 0.6 * lost},
                {trace::CulpritKind::irq, "eth0", 24, -1, "", 0, 40, 0.2 * lost},
                {trace::CulpritKind::task, "swapper/2", 0, 120, "", 0, 9, 0.1 * lost},
                {trace::CulpritKind::below_kernel, "", -1, -1, "", 0, 30, 0.1 * lost}};
  samples[2].culprits = a;
  const auto v = judge_all(samples);
  ASSERT_EQ(v.cores[2].state, CoreState::noisy);
  const std::string cause = cause_text(v.cores[2].cause);
  EXPECT_NE(cause.find("60% preempted by inj[1234] (FIFO 50) (15 times)"), std::string::npos)
      << cause;
  EXPECT_NE(cause.find("20% in IRQ 24 (eth0) (40 times)"), std::string::npos) << cause;
  EXPECT_NE(cause.find("10% the idle task (the probe thread waking up) (9 times)"),
            std::string::npos)
      << cause;
  EXPECT_EQ(cause.find("preempted by the idle"), std::string::npos) << cause;
  EXPECT_NE(cause.find("10% others"), std::string::npos) << cause;  // the three largest named
}

// On a noisy hypervisor most products hold a detour; the intrinsic time is
// still that of the clean ones, and the noise is left to the detour probe.
TEST(Analysis, MatmulSpeedIgnoresNoiseInMostProducts) {
  CpuSamples s = core(0);
  const int reps = 10;
  s.matmul_product_seconds.clear();
  for (std::size_t sample = 0; sample < s.matmul_seconds.size(); ++sample) {
    for (int r = 0; r < reps; ++r) {
      const bool hit = r % 10 >= 2;  // 80 % of products interrupted
      s.matmul_product_seconds.push_back(hit ? 0.0013 : 0.0010);
    }
    s.matmul_seconds[sample] = 0.0124;
  }
  const CoreFigures c = summarize(s, "default");
  EXPECT_NEAR(*c.figure[ProbeKind::matmul], 0.0010 * reps, 1e-12);
  EXPECT_NEAR(*c.matmul_sample_seconds, 0.0124, 1e-12);
  EXPECT_NEAR(*c.spread[ProbeKind::matmul], 0.0, 1e-12);  // MAD of the products: most are alike
}

// Sixteen cores, four of them bad: the healthy majority sets the reference
// and the peers' spread (on eight, half of them bad, it would not).
TEST(Analysis, EachCauseGetsItsVerdict) {
  std::vector<CpuSamples> samples;
  for (unsigned cpu = 0; cpu < 16; ++cpu) samples.push_back(core(cpu));
  samples[1] = core(1, 0.0125, 2.4e9);            // 20 % lower clock, slower matmul
  samples[2] = core(2, 0.010, 3e9, 0.12);         // 12 % lost to detours
  samples[3] = core(3, 0.0108, 3e9, 0.01, 0.07);  // 29 % less bandwidth, slightly slow matmul
  samples[4] = core(4, 0.0110);                   // slower with nothing to explain it
  const auto v = judge_all(samples);
  EXPECT_EQ(v.cores[0].state, CoreState::ok);
  EXPECT_EQ(v.cores[1].state, CoreState::throttled);
  EXPECT_NE(cause_text(v.cores[1].cause).find("2.40 GHz"), std::string::npos)
      << cause_text(v.cores[1].cause);
  EXPECT_EQ(v.cores[2].state, CoreState::noisy);
  EXPECT_NE(cause_text(v.cores[2].cause).find("12.0%"), std::string::npos)
      << cause_text(v.cores[2].cause);
  EXPECT_NE(cause_text(v.cores[2].cause).find("50% preempted by other threads (15 times)"),
            std::string::npos)
      << cause_text(v.cores[2].cause);
  EXPECT_NE(cause_text(v.cores[2].cause).find("50% below the kernel"), std::string::npos)
      << cause_text(v.cores[2].cause);
  EXPECT_EQ(v.cores[3].state, CoreState::contended);
  EXPECT_EQ(v.cores[4].state, CoreState::slow);
}

// Heavy noise pulls the median of the clock chains down at full frequency:
// a core whose noise and clock tests both clear, with noise enough to
// explain the clock, is noisy and says that its clock reads low; the same
// low clock with little or no noise is throttled.
TEST(Analysis, NoiseExplainsALowClock) {
  std::vector<CpuSamples> samples;
  for (unsigned cpu = 0; cpu < 16; ++cpu) samples.push_back(core(cpu));
  samples[1] = core(1, 0.0125, 2.4e9, 0.30);  // 30 % lost to detours, clock reads 20 % low
  samples[2] = core(2, 0.0125, 2.4e9);        // the same clock, no noise
  samples[3] = core(3, 0.0125, 2.4e9, 0.08);  // noisy, but too little to pull the clock 20 %
  const auto v = judge_all(samples);
  EXPECT_EQ(v.cores[1].state, CoreState::noisy) << cause_text(v.cores[1].cause);
  EXPECT_NE(cause_text(v.cores[1].cause).find("its clock reads 20.0% low"), std::string::npos)
      << cause_text(v.cores[1].cause);
  EXPECT_EQ(v.cores[2].state, CoreState::throttled) << cause_text(v.cores[2].cause);
  EXPECT_EQ(cause_text(v.cores[2].cause).find("its clock reads"), std::string::npos)
      << cause_text(v.cores[2].cause);
  EXPECT_EQ(v.cores[3].state, CoreState::throttled) << cause_text(v.cores[3].cause);
}

// A VM whose hypervisor takes 6 % from every vCPU alike: that is the
// node's floor, not a noisy core; a core 10 points above it is.
TEST(Analysis, NoiseIsJudgedAboveTheNodesFloor) {
  std::vector<CpuSamples> samples;
  for (unsigned cpu = 0; cpu < 6; ++cpu) samples.push_back(core(cpu, 0.010, 3e9, 0.06));
  auto v = judge_all(samples);
  for (const auto& c : v.cores) EXPECT_EQ(c.state, CoreState::ok) << cause_text(c.cause);
  samples[5] = core(5, 0.010, 3e9, 0.16);
  v = judge_all(samples);
  EXPECT_EQ(v.cores[5].state, CoreState::noisy);
  EXPECT_NEAR(*v.cores[5].excess_noise, 0.10, 1e-9);
  EXPECT_NEAR(*v.references[0].noise_floor, 0.06, 1e-9);
  // Two cores: the floor is the quieter one.
  v = judge_all({core(0, 0.010, 3e9, 0.06), core(1, 0.010, 3e9, 0.16)});
  EXPECT_EQ(v.cores[0].state, CoreState::ok);
  EXPECT_EQ(v.cores[1].state, CoreState::noisy);
  EXPECT_NEAR(*v.cores[1].excess_noise, 0.10, 1e-9);
}

// A core alone of its kind (a one-CPU node) has no peer to show what every
// core loses alike: only the time other threads took from it (its run-queue
// wait) counts against it, never what the kernel saw no cause for.
TEST(Analysis, ALoneCoreIsJudgedOnTheTimeOtherThreadsTook) {
  const auto lone = [](double noise, double preempted_share) {
    CpuSamples s = core(1, 0.010, 3e9, noise);
    for (DetourResult& d : s.detours) d.preempted_seconds = d.total_seconds * preempted_share;
    return judge_all({s});
  };
  // 30 % lost, none of it to another thread: the hypervisor's, not the core's.
  auto v = lone(0.30, 0);
  EXPECT_EQ(v.cores[0].state, CoreState::ok) << cause_text(v.cores[0].cause);
  EXPECT_NEAR(*v.references[0].noise_floor, 0.30, 1e-9);
  // 30 % lost, two thirds of it waiting while another thread ran: 20 % excess.
  v = lone(0.30, 2.0 / 3);
  EXPECT_EQ(v.cores[0].state, CoreState::noisy) << cause_text(v.cores[0].cause);
  EXPECT_NEAR(*v.cores[0].excess_noise, 0.20, 1e-9);
  EXPECT_NEAR(*v.references[0].noise_floor, 0.10, 1e-9);
  // Its slowdown is against the same typical core: (1 − 0.10) / (1 − 0.30).
  EXPECT_NEAR(*v.cores[0].expected_slowdown, 0.9 / 0.7, 1e-9);
  // Under the threshold: 3 % taken by other threads.
  EXPECT_EQ(lone(0.30, 0.1).cores[0].state, CoreState::ok);
  // Without the run-queue wait the floor stays the core's own noise.
  CpuSamples unknown = core(1, 0.010, 3e9, 0.30);
  for (DetourResult& d : unknown.detours) d.preempted_seconds.reset();
  v = judge_all({unknown});
  EXPECT_EQ(v.cores[0].state, CoreState::ok);
  EXPECT_NEAR(*v.cores[0].excess_noise, 0, 1e-12);
  EXPECT_NEAR(*v.cores[0].expected_slowdown, 1, 1e-9);
  // A second core of the kind, even one left out of the reference, is a
  // peer: the floor is the quieter core's whole noise again.
  v = judge_all({core(0, 0.010, 3e9, 0.30), core(1, 0.010, 3e9, 0.30)});
  EXPECT_NEAR(*v.references[0].noise_floor, 0.30, 1e-9);
}

TEST(Analysis, DecompositionMultipliesBack) {
  std::vector<CpuSamples> samples;
  for (unsigned cpu = 0; cpu < 5; ++cpu) samples.push_back(core(cpu));
  samples[0] = core(0, 0.012, 2.7e9, 0.06);
  const auto v = judge_all(samples);
  const auto& c = v.cores[0];
  // expected = clock_ratio × noise_factor × residual, each as defined.
  EXPECT_NEAR(*c.slowdown[ProbeKind::clock], 3e9 / 2.7e9, 1e-9);
  EXPECT_NEAR(*c.slowdown[ProbeKind::detour], (1 - 0.01) / (1 - 0.06), 1e-9);
  EXPECT_NEAR(*c.slowdown[ProbeKind::matmul], 1.2, 1e-9);
  EXPECT_NEAR(*c.expected_slowdown, 1.2 * (0.99 / 0.94), 1e-9);
  EXPECT_NEAR(*c.slowdown[ProbeKind::clock] * *c.slowdown[ProbeKind::detour] * *c.residual,
              *c.expected_slowdown, 1e-9);
}

TEST(Analysis, KindsAreNeverComparedWithEachOther) {
  std::vector<CoreFigures> cores;
  for (unsigned cpu = 0; cpu < 4; ++cpu) cores.push_back(summarize(core(cpu), "IntelCore"));
  // E cores: half the clock, twice the matmul time, but all alike.
  for (unsigned cpu = 4; cpu < 12; ++cpu) {
    cores.push_back(summarize(core(cpu, 0.020, 1.5e9), "IntelAtom"));
  }
  const auto v = judge(std::move(cores), Thresholds{});
  EXPECT_EQ(v.references.size(), 2u);
  for (const auto& c : v.cores)
    EXPECT_EQ(c.state, CoreState::ok) << c.cpu << ": " << cause_text(c.cause);
}

TEST(Analysis, FailedAndMissingCoresAreSkipped) {
  CpuSamples failed = core(0);
  failed.error = "cannot pin to CPU 0: Invalid argument";
  CpuSamples empty;
  empty.cpu = 1;
  const auto v = judge_all({failed, empty, core(2), core(3)});
  EXPECT_EQ(v.cores[0].state, CoreState::skipped);
  EXPECT_EQ(cause_text(v.cores[0].cause), failed.error);
  EXPECT_EQ(v.cores[1].state, CoreState::skipped);
  EXPECT_EQ(v.references.at(0).cores, 2u);
}

TEST(Analysis, OnlyTheProbesThatRanAreReported) {
  CpuSamples s = core(0);
  s.matmul_seconds.clear();
  s.samples[ProbeKind::stream].clear();
  const auto v = judge_all({s, core(1)});
  EXPECT_FALSE(v.cores[0].figure[ProbeKind::matmul].has_value());
  EXPECT_FALSE(v.cores[0].figure[ProbeKind::stream].has_value());
  ASSERT_TRUE(v.cores[0].expected_slowdown.has_value());  // from the clock instead
}

// Randomized: however the node looks, a core identical to the reference is
// ok, and the expected slowdown never falls below the clock ratio times the
// noise factor when matmul tracks the clock exactly.
TEST(Analysis, RandomizedNodesKeepTheInvariants) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> clock(2e9, 4e9), noise(0, 0.2);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<CpuSamples> samples;
    // An odd count: the median of an even count averages two cores, and
    // the mean of 1/x is not 1/mean of x.
    const unsigned n = 3 + 2 * (rng() % 10);
    for (unsigned cpu = 0; cpu < n; ++cpu) {
      const double hz = clock(rng);
      samples.push_back(core(cpu, 0.010 * 3e9 / hz, hz, noise(rng)));
    }
    const auto v = judge_all(samples);
    for (const auto& c : v.cores) {
      ASSERT_TRUE(c.residual.has_value());
      // matmul time is proportional to 1/clock, so nothing is left over.
      EXPECT_NEAR(*c.residual, 1, 1e-6);
      EXPECT_NEAR(*c.expected_slowdown,
                  *c.slowdown[ProbeKind::clock] * *c.slowdown[ProbeKind::detour], 1e-6);
      // Throttled exactly when the clock ratio's lower bound clears the
      // threshold and the noise test does not (noise explains a low
      // clock); never when the point estimate itself does not.
      const Thresholds t;
      const auto bound =
          lower_bound(*c.slowdown[ProbeKind::clock], c.slowdown_error[ProbeKind::clock], t.alpha);
      ASSERT_TRUE(bound.has_value());
      EXPECT_LE(*bound, *c.slowdown[ProbeKind::clock]);
      // Noise explains the low clock when its test clears and it covers
      // half the clock's deficit.
      const bool noise_explains =
          clears(c, CoreState::noisy, t, t.alpha).has_value() &&
          c.detour->noise_ratio() >= (1 - 1 / *c.slowdown[ProbeKind::clock]) / 2;
      EXPECT_EQ(c.state == CoreState::throttled,
                *bound >= t.throttled_clock_ratio && !noise_explains);
      if (*bound >= t.throttled_clock_ratio && noise_explains) {
        EXPECT_EQ(c.state, CoreState::noisy);
        EXPECT_NE(cause_text(c.cause).find("its clock reads"), std::string::npos)
            << cause_text(c.cause);
      }
      if (*c.slowdown[ProbeKind::clock] < t.throttled_clock_ratio) {
        EXPECT_NE(c.state, CoreState::throttled);
      }
    }
  }
}

// Favoured cores (Turbo Boost Max 3.0 / CPPC preferred): the 8-CPU fixture
// has CPUs 2 and 5 at highest_perf 255, the rest at 228. Probing 2, 5 and 6
// alone makes the favoured cores the reference, and CPU 6 runs 228/255 of
// their clock by design (10.6 % lower): that is no fault in isolated rounds.
std::vector<ProcessingUnit> preferred_core_pus() {
  std::vector<ProcessingUnit> pus(8);
  for (unsigned cpu = 0; cpu < 8; ++cpu) {
    pus[cpu].cpu = cpu;
    pus[cpu].kind = "default";
  }
  attach_top_perf(pus, std::string(CORENOISE_FIXTURES) + "/sys/amd-preferred");
  return pus;
}

RoundSamples favoured_round(Mode mode, double cpu6_hz) {
  RoundSamples round;
  round.mode = mode;
  // matmul time proportional to 1/clock, as on a core that is only slower.
  round.cpus = {core(2), core(5), core(6, 0.010 * 3e9 / cpu6_hz, cpu6_hz)};
  return round;
}

TEST(Analysis, CoreSlowerByDesignIsOkInIsolatedRounds) {
  const double hz = 3e9 * 228 / 255;
  const ModeReport m =
      make_mode_report(favoured_round(Mode::isolated, hz), preferred_core_pus(), Thresholds{});
  const CoreFigures& c6 = m.verdicts.cores[6];
  EXPECT_EQ(c6.state, CoreState::ok) << cause_text(c6.cause);
  EXPECT_EQ(cause_text(c6.cause), "");
  EXPECT_NEAR(*c6.design_ratio, 255.0 / 228, 1e-12);
  // The job does see it: the ratios stay raw.
  EXPECT_NEAR(*c6.slowdown[ProbeKind::clock], 255.0 / 228, 1e-9);
  EXPECT_GT(*c6.slowdown[ProbeKind::clock], Thresholds{}.throttled_clock_ratio);
  EXPECT_NEAR(*c6.expected_slowdown, 255.0 / 228 * *c6.slowdown[ProbeKind::detour], 1e-6);
  EXPECT_NEAR(*m.verdicts.cores[2].design_ratio, 1, 1e-12);
  EXPECT_FALSE(m.verdicts.cores[0].design_ratio);  // not measured
}

TEST(Analysis, SameClockDropWithoutDesignDifferenceIsThrottled) {
  auto pus = preferred_core_pus();
  pus[6].top_perf = 255;  // designed like the others: the drop is a fault
  const ModeReport m =
      make_mode_report(favoured_round(Mode::isolated, 3e9 * 228 / 255), pus, Thresholds{});
  EXPECT_EQ(m.verdicts.cores[6].state, CoreState::throttled);
  EXPECT_NEAR(*m.verdicts.cores[6].design_ratio, 1, 1e-12);
  // Unknown top performance (a VM): no design ratio, the same verdict.
  for (auto& pu : pus) pu.top_perf.reset();
  const ModeReport vm =
      make_mode_report(favoured_round(Mode::isolated, 3e9 * 228 / 255), pus, Thresholds{});
  EXPECT_EQ(vm.verdicts.cores[6].state, CoreState::throttled);
  EXPECT_FALSE(vm.verdicts.cores[6].design_ratio);
}

// A design difference excuses only itself: 10 % more than it is throttled.
TEST(Analysis, DropBeyondTheDesignDifferenceIsThrottled) {
  const ModeReport m = make_mode_report(favoured_round(Mode::isolated, 3e9 * 228 / 255 / 1.1),
                                        preferred_core_pus(), Thresholds{});
  EXPECT_EQ(m.verdicts.cores[6].state, CoreState::throttled);
}

// All cores together run at the all-core turbo: the design ratio does not apply.
TEST(Analysis, DesignRatioDoesNotApplyInConcurrentRounds) {
  const ModeReport m = make_mode_report(favoured_round(Mode::concurrent, 3e9 * 228 / 255),
                                        preferred_core_pus(), Thresholds{});
  EXPECT_EQ(m.verdicts.cores[6].state, CoreState::throttled);
  for (const auto& c : m.verdicts.cores) EXPECT_FALSE(c.design_ratio) << c.cpu;
}

// The whole node: favoured cores run faster, nobody is a fault; and a
// favoured core that runs no faster than the rest (turbo off) is not
// accused of missing its higher top (design_ratio < 1 never tightens).
TEST(Analysis, FavouredCoresAreNeverFaults) {
  for (const double favoured_hz : {3e9 * 255 / 228, 3e9}) {
    RoundSamples round;
    for (unsigned cpu = 0; cpu < 8; ++cpu) {
      const double hz = cpu == 2 || cpu == 5 ? favoured_hz : 3e9;
      round.cpus.push_back(core(cpu, 0.010 * 3e9 / hz, hz));
    }
    const ModeReport m = make_mode_report(round, preferred_core_pus(), Thresholds{});
    for (const auto& c : m.verdicts.cores) {
      EXPECT_EQ(c.state, CoreState::ok) << c.cpu << ": " << cause_text(c.cause);
      EXPECT_NEAR(*c.design_ratio, c.cpu == 2 || c.cpu == 5 ? 228.0 / 255 : 1, 1e-12);
    }
  }
}

TEST(Report, OverallStateIsTheFirstUnhealthyMode) {
  std::vector<ProcessingUnit> pus(2);
  pus[0].cpu = 0;
  pus[1].cpu = 1;
  pus[0].kind = pus[1].kind = "default";
  RoundSamples isolated;
  isolated.cpus = {core(0), core(1)};
  RoundSamples concurrent;
  concurrent.mode = Mode::concurrent;
  concurrent.cpus = {core(0), core(1, 0.010, 3e9, 0.2)};
  NodeReport r;
  r.pus = pus;
  r.modes.push_back(make_mode_report(isolated, pus, Thresholds{}));
  r.modes.push_back(make_mode_report(concurrent, pus, Thresholds{}));
  EXPECT_EQ(r.state(0), CoreState::ok);
  EXPECT_EQ(r.state(1), CoreState::noisy);
  EXPECT_EQ(r.deciding_mode(1), 1u);
  EXPECT_FALSE(r.healthy());
  EXPECT_EQ(r.count(CoreState::noisy), 1u);
}

TEST(Report, UnselectedAndUnusablePusAreSkippedWithTheirReason) {
  std::vector<ProcessingUnit> pus(3);
  for (unsigned i = 0; i < 3; ++i) pus[i].cpu = i;
  pus[2].skip_reason = "outside process affinity";
  RoundSamples round;
  round.cpus = {core(0)};
  const ModeReport m = make_mode_report(round, pus, Thresholds{});
  EXPECT_EQ(m.verdicts.cores[0].state, CoreState::ok);
  EXPECT_EQ(cause_text(m.verdicts.cores[1].cause), "not selected");
  EXPECT_EQ(cause_text(m.verdicts.cores[2].cause), "outside process affinity");
}

}  // namespace
}  // namespace corenoise

namespace corenoise {
namespace {

TEST(DetourResult, MergeSumsAndKeepsAttributionOnlyWhereAllWindowsHaveIt) {
  DetourResult a;
  a.window_seconds = 0.1;
  a.total_seconds = 0.01;
  a.count = 4;
  a.max_seconds = 0.004;
  a.histogram[3] = 4;
  a.interrupts = 10;
  a.preempted_seconds = 0.005;
  DetourResult b = a;
  b.max_seconds = 0.006;
  b.interrupts.reset();  // this window's /proc/interrupts was unreadable

  DetourResult merged;  // empty accumulator
  merged.merge(a);
  EXPECT_EQ(merged.interrupts, 10u);
  merged.merge(b);
  EXPECT_DOUBLE_EQ(merged.window_seconds, 0.2);
  EXPECT_DOUBLE_EQ(merged.total_seconds, 0.02);
  EXPECT_EQ(merged.count, 8u);
  EXPECT_DOUBLE_EQ(merged.max_seconds, 0.006);
  EXPECT_EQ(merged.histogram[3], 8u);
  EXPECT_FALSE(merged.interrupts.has_value());
  EXPECT_DOUBLE_EQ(*merged.preempted_seconds, 0.01);
  EXPECT_DOUBLE_EQ(merged.noise_ratio(), 0.1);
}

}  // namespace
}  // namespace corenoise

namespace corenoise {
namespace {

// A core whose seven samples scatter log-normally by `jitter` around
// `matmul` seconds, with clock, noise and stream steady.
CpuSamples jittered_core(unsigned cpu, double matmul, double jitter, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0, 1);
  CpuSamples s = core(cpu);
  s.matmul_seconds.clear();
  for (int i = 0; i < 7; ++i) s.matmul_seconds.push_back(matmul * std::exp(jitter * normal(rng)));
  return s;
}

// The verdict's false-alarm rate is what it says: a core that is exactly
// at the slow threshold (its true expected slowdown is 1.05) reads `slow`
// in at most alpha of the rounds (within sampling error), clean cores
// beside it almost never, and a core 10 % slower is found every time.
TEST(Analysis, SlowVerdictKeepsItsLevelAndFindsATenPercentCore) {
  std::mt19937_64 rng(21);
  constexpr int kTrials = 4000;
  const Thresholds t;  // alpha 0.01, slow at 1.05
  int boundary_alarms = 0, clean_alarms = 0, found = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    std::vector<CpuSamples> samples;
    for (unsigned cpu = 0; cpu < 14; ++cpu) samples.push_back(jittered_core(cpu, 0.010, 0.01, rng));
    samples.push_back(jittered_core(14, 0.010 * t.slow_ratio, 0.01, rng));
    samples.push_back(jittered_core(15, 0.011, 0.01, rng));
    const auto v = judge_all(samples);
    for (unsigned cpu = 0; cpu < 14; ++cpu) clean_alarms += is_unhealthy(v.cores[cpu].state);
    boundary_alarms += v.cores[14].state == CoreState::slow;
    found += v.cores[15].state == CoreState::slow;
  }
  const double allowed = t.alpha + 4 * std::sqrt(t.alpha * (1 - t.alpha) / kTrials);
  EXPECT_LE(boundary_alarms / double(kTrials), allowed);
  EXPECT_LE(clean_alarms / double(14 * kTrials), 1e-3);
  EXPECT_GE(found / double(kTrials), 0.99);
}

// The point rule of before (alpha 0.5) on the same data: half the rounds
// of the boundary core alarm. That is the rate the bound brings down.
TEST(Analysis, PointRuleAlarmsOnHalfTheBoundaryRounds) {
  std::mt19937_64 rng(22);
  Thresholds point;
  point.alpha = 0.5;
  int alarms = 0;
  constexpr int kTrials = 2000;
  for (int trial = 0; trial < kTrials; ++trial) {
    std::vector<CpuSamples> samples;
    for (unsigned cpu = 0; cpu < 14; ++cpu) samples.push_back(jittered_core(cpu, 0.010, 0.01, rng));
    samples.push_back(jittered_core(14, 0.010 * point.slow_ratio, 0.01, rng));
    std::vector<CoreFigures> cores;
    for (const auto& s : samples) cores.push_back(summarize(s, "default"));
    alarms += judge(std::move(cores), point).cores[14].state == CoreState::slow;
  }
  EXPECT_NEAR(alarms / double(kTrials), 0.5, 0.06);
}

}  // namespace
}  // namespace corenoise
