// A node report through JSON and back (what `corenoise collect` does with
// each daemon's results): PUs, rounds, references, and every core's state,
// cause and figures per mode — including a core whose rounds disagree.
#include "probe/report_json.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "probe/report.h"
#include "probe/topology.h"

namespace corenoise {
namespace {

using nlohmann::json;

// `cpu` over 5 samples: `matmul` seconds per sample and `noise` of each
// detour window lost.
CpuSamples samples(unsigned cpu, double matmul, double noise) {
  CpuSamples s;
  s.cpu = cpu;
  s.work[ProbeKind::matmul].flops = 1e9;
  s.work[ProbeKind::stream].bytes = 1e9;
  for (int i = 0; i < 5; ++i) {
    const double jitter = 1 + 0.001 * (i - 2);
    s.matmul_seconds.push_back(matmul * jitter);
    s.samples[ProbeKind::clock].push_back(3e9 * jitter);
    s.samples[ProbeKind::stream].push_back(0.05 * jitter);
    DetourResult d;
    d.window_seconds = 0.2;
    d.total_seconds = 0.2 * noise;
    d.count = 10;
    d.preempted_seconds = d.total_seconds;
    s.detours.push_back(d);
  }
  return s;
}

// Four cores: quiet in the isolated round; in the concurrent one CPU 2's
// matmul takes 20 % longer and CPU 3 loses 20 % of its time. CPU 4 (of 5)
// is never measured.
NodeReport two_round_report() {
  NodeReport r;
  r.version = "test";
  r.hostname = "node-a";
  r.pus = Topology::load("synthetic:package:1 core:5 pu:1").pus();
  for (Mode mode : {Mode::isolated, Mode::concurrent}) {
    RoundSamples round;
    round.mode = mode;
    round.started_unix_seconds = mode == Mode::isolated ? 100 : 200;
    round.duration_seconds = 1.5;
    for (unsigned cpu = 0; cpu < 4; ++cpu) {
      const bool slow = mode == Mode::concurrent && cpu == 2;
      const bool noisy = mode == Mode::concurrent && cpu == 3;
      round.cpus.push_back(samples(cpu, slow ? 0.012 : 0.010, noisy ? 0.20 : 0.01));
    }
    r.modes.push_back(make_mode_report(round, r.pus, Thresholds{},
                                       {{4, skipped_cause(SkipReason::not_selected)}}));
  }
  return r;
}

TEST(ReportJson, RoundTripKeepsEachRoundsOwnVerdict) {
  const NodeReport original = two_round_report();
  ASSERT_EQ(original.modes[0].verdicts.cores[3].state, CoreState::ok);
  ASSERT_EQ(original.modes[1].verdicts.cores[3].state, CoreState::noisy);
  ASSERT_EQ(original.modes[1].verdicts.cores[2].state, CoreState::slow);

  const NodeReport back = node_report_from_json(json::parse(to_json(original).dump()));
  EXPECT_EQ(back.hostname, "node-a");
  ASSERT_EQ(back.pus.size(), original.pus.size());
  for (std::size_t i = 0; i < back.pus.size(); ++i) {
    EXPECT_EQ(back.pus[i].cpu, original.pus[i].cpu);
    EXPECT_EQ(back.pus[i].core, original.pus[i].core);
    EXPECT_EQ(back.pus[i].kind, original.pus[i].kind);
  }
  ASSERT_EQ(back.modes.size(), 2u);
  for (std::size_t m = 0; m < 2; ++m) {
    const ModeReport& a = original.modes[m];
    const ModeReport& b = back.modes[m];
    SCOPED_TRACE(std::string(to_string(a.mode)));
    EXPECT_EQ(b.mode, a.mode);
    EXPECT_EQ(b.started_unix_seconds, a.started_unix_seconds);
    ASSERT_EQ(b.verdicts.references.size(), a.verdicts.references.size());
    EXPECT_EQ(b.verdicts.references[0].figure[ProbeKind::matmul],
              a.verdicts.references[0].figure[ProbeKind::matmul]);
    EXPECT_EQ(b.verdicts.references[0].noise_floor, a.verdicts.references[0].noise_floor);
    ASSERT_EQ(b.verdicts.cores.size(), a.verdicts.cores.size());
    for (std::size_t i = 0; i < a.verdicts.cores.size(); ++i) {
      const CoreFigures& x = a.verdicts.cores[i];
      const CoreFigures& y = b.verdicts.cores[i];
      SCOPED_TRACE("cpu " + std::to_string(x.cpu));
      EXPECT_EQ(y.cpu, x.cpu);
      EXPECT_EQ(y.state, x.state);  // each round's own, not the overall one
      EXPECT_EQ(y.cause, x.cause);
      EXPECT_EQ(y.expected_slowdown, x.expected_slowdown);
      EXPECT_EQ(y.excess_noise, x.excess_noise);
      EXPECT_EQ(y.figure[ProbeKind::matmul], x.figure[ProbeKind::matmul]);
      EXPECT_EQ(y.figure[ProbeKind::clock], x.figure[ProbeKind::clock]);
      EXPECT_EQ(y.figure[ProbeKind::stream], x.figure[ProbeKind::stream]);
      EXPECT_EQ(y.detour.has_value(), x.detour.has_value());
      if (x.detour) {
        EXPECT_EQ(y.detour->total_seconds, x.detour->total_seconds);
      }
    }
  }
  // The overall state is still what the report says.
  EXPECT_EQ(back.state(3), CoreState::noisy);
  EXPECT_EQ(back.state(2), CoreState::slow);
  EXPECT_EQ(back.state(0), CoreState::ok);
  EXPECT_EQ(back.state(4), CoreState::skipped);
}

// A CPU's top level is one mode's entry whole: `mode` names the mode whose
// verdict is the overall state, and the state, cause and figures beside it
// are that mode's, also where a later mode decided.
TEST(ReportJson, TopLevelIsTheModeItsStateCameFrom) {
  const NodeReport r = two_round_report();
  const json doc = to_json(r);
  // A CPU's entry less its identity, `mode` and the per-mode objects.
  const auto top_level = [](json c) {
    for (const char* key :
         {"cpu", "core", "package", "numa_node", "kind", "mode", "isolated", "concurrent"})
      c.erase(key);
    return c;
  };
  const struct {
    std::size_t index;
    Mode mode;
    const char* state;
  } cases[] = {
      {0, Mode::isolated, "ok"},  // alike in both: the first mode
      {2, Mode::concurrent, "slow"},
      {3, Mode::concurrent, "noisy"},
      {4, Mode::isolated, "skipped"},
  };
  for (const auto& want : cases) {
    SCOPED_TRACE("cpu " + std::to_string(want.index));
    const std::string mode(to_string(want.mode));
    const json& c = doc["cpus"][want.index];
    EXPECT_EQ(r.overall(want.index).mode, want.mode);
    EXPECT_EQ(r.overall(want.index).figures,
              &r.modes[want.mode == Mode::isolated ? 0 : 1].verdicts.cores[want.index]);
    EXPECT_EQ(c["state"], want.state);
    EXPECT_EQ(c["mode"], mode);
    EXPECT_EQ(top_level(c), c[mode]) << c.dump(2);
  }
  // Where the concurrent mode decided, the isolated one said ok.
  EXPECT_EQ(doc["cpus"][2]["isolated"]["state"], "ok");
  EXPECT_EQ(doc["cpus"][3]["isolated"]["state"], "ok");
}

TEST(ReportJson, SingleRoundReportsReadBackFromTheTopLevel) {
  NodeReport r = two_round_report();
  r.modes.pop_back();
  const NodeReport back = node_report_from_json(to_json(r));
  ASSERT_EQ(back.modes.size(), 1u);
  EXPECT_EQ(back.modes[0].verdicts.cores[2].figure[ProbeKind::matmul],
            r.modes[0].verdicts.cores[2].figure[ProbeKind::matmul]);
  EXPECT_FALSE(to_json(r)["cpus"][0].contains("isolated"));
}

TEST(ReportJson, RejectsDocumentsThatAreNotNodeReports) {
  EXPECT_ANY_THROW(node_report_from_json(json::object()));
  EXPECT_ANY_THROW(node_report_from_json(json::parse(R"({"rounds": [], "cpus": 3})")));
  json bad_mode = to_json(two_round_report());
  bad_mode["rounds"][0]["mode"] = "sideways";
  EXPECT_THROW(node_report_from_json(bad_mode), std::invalid_argument);
  json bad_state = to_json(two_round_report());
  bad_state["cpus"][0]["isolated"]["state"] = "grumpy";
  EXPECT_THROW(node_report_from_json(bad_state), std::invalid_argument);
}

}  // namespace
}  // namespace corenoise
