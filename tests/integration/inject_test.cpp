// `corenoise inject` and `corenoise selftest` as a user runs them: the real
// binary on this machine, and the real probe finding what was injected.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "host_draw.h"
#include "probe/topology.h"
#include "process.h"

namespace corenoise {
namespace {

using nlohmann::json;
using testing::run_command;

const std::string kCorenoise = testing::shell_word(CORENOISE_BIN);  // for run_command

std::size_t native_pus() { return Topology::load("native").pus().size(); }

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// `corenoise inject ARGS`, to run in the background (killed when the test
// ends).
std::vector<std::string> inject(std::vector<std::string> args) {
  args.insert(args.begin(), {CORENOISE_BIN, "inject"});
  return args;
}

TEST(Inject, SaysReadyThenStopsByItself) {
  testing::BackgroundProcess injector(inject({"--cpus", "0", "--seconds", "2"}));
  const std::string ready = injector.wait_line();
  const double started = now_seconds();
  EXPECT_EQ(ready, "ready: duty 10.0 % (1 ms busy) every 10 ms on CPU 0 (SCHED_FIFO)\n");
  EXPECT_EQ(injector.wait_exit(3), 0);
  const double ran = now_seconds() - started;
  EXPECT_GT(ran, 1.8);
  EXPECT_LT(ran, 3);
}

// Stops at once even in the middle of a long sleep between bursts.
TEST(Inject, SigtermAndSigintStopItPromptly) {
  for (int number : {SIGTERM, SIGINT}) {
    testing::BackgroundProcess injector(
        inject({"--cpus", "0", "--seconds", "60", "--duty", "0.1", "--period", "5"}));
    ASSERT_EQ(injector.wait_line().rfind("ready: ", 0), 0u);
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    const double sent = now_seconds();
    injector.signal(number);
    EXPECT_EQ(injector.wait_exit(5), 0) << number;
    EXPECT_LT(now_seconds() - sent, 0.2) << number;
  }
  testing::BackgroundProcess hog(inject({"--cpus", "0", "--seconds", "60", "--memory-hog"}));
  EXPECT_EQ(hog.wait_line(),
            "ready: memory hog, 256 MiB streamed read+write on CPU 0 (normal priority)\n");
  const double sent = now_seconds();
  hog.signal(SIGTERM);
  EXPECT_EQ(hog.wait_exit(5), 0);
  EXPECT_LT(now_seconds() - sent, 0.2);
}

TEST(Inject, NormalIsReportedAsNormalPriority) {
  const auto r = run_command(kCorenoise +
                             " inject --cpus 0 --seconds 0.2 --normal --burst-hz 100 "
                             "--burst-length 0.001");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ready: duty 10.0 % (1 ms busy) every 10 ms on CPU 0 (normal priority)\n");
}

TEST(Inject, BadInputExitsOneNamingTheOption) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--seconds 1", "--cpus is required"},
      {"--cpus 0", "--seconds is required"},
      {"--cpus 4095 --seconds 1", "CPU 4095 is not usable by this process"},
      {"--cpus 0 --seconds 1 --duty 2", "--duty: got '2'"},
      {"--cpus 0 --seconds 1 --period 0", "--period"},
      {"--cpus 0 --seconds 1 --burst-hz 1000", "--burst-hz needs --burst-length"},
      {"--cpus 0 --seconds 1 --burst-hz 1000 --burst-length 0.01", "--burst-length"},
      {"--cpus 0 --seconds 1 --memory-hog --period 0.1", "--memory-hog"},
      {"--cpus 0 --seconds 1 --bogus", "unknown option '--bogus'"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = run_command(kCorenoise + " inject " + args);
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << args << " printed: " << r.out;
  }
  const auto help = run_command(kCorenoise + " inject --help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* option : {"--cpus", "--seconds", "--duty", "--period", "--burst-hz",
                             "--burst-length", "--memory-hog", "--normal", "Exit status"}) {
    EXPECT_NE(help.out.find(option), std::string::npos) << option;
  }
  const auto top = run_command(kCorenoise + " --help");
  EXPECT_NE(top.out.find("  inject  "), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("  selftest  "), std::string::npos) << top.out;
}

// Probes CPUs 0 and 1 while `inject ARGS` runs.
json probe_while_injecting(const std::vector<std::string>& args) {
  testing::BackgroundProcess injector(inject(args));
  const std::string ready = injector.wait_line();
  EXPECT_EQ(ready.rfind("ready: ", 0), 0u) << ready;
  const auto r = run_command(kCorenoise + " probe --cpus 0,1 --json -");
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  return json::parse(r.out);
}

// The tests that inject on CPU 1 and compare it with CPU 0: probe rounds
// until one finds something (exit 2), at most five, as the daemon's next
// rounds would; on this 2-vCPU node one round confirms 10 % in 7-10 of 12
// (docs/verdicts.md: the floor is the other vCPU, whose own bursts widen
// every interval), and on 2026-12-02 three rounds in a row once left it
// `transient` (re-measured at 6.4 points). Each draw is such a series,
// taken where the host ran the two vCPUs alike (host_draw.h).
json find_injection_on_cpu1(const std::vector<std::string>& args) {
  testing::BackgroundProcess injector(inject(args));
  const std::string ready = injector.wait_line();
  EXPECT_EQ(ready.rfind("ready: ", 0), 0u) << ready;
  const auto rounds = [] {
    testing::CommandResult r;
    for (int round = 1; round <= 5; ++round) {
      r = run_command(kCorenoise + " probe --cpus 0,1 --json -");
      if (r.exit_code != 0) break;
    }
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
    return json::parse(r.out);
  };
  return testing::draw_on_a_fair_host("probe", rounds, [](const json& doc) {
    return testing::unfair_host_beside_injection(doc, 1, 0.10);
  });
}

double preempted_share(const json& cpu) {
  return double(cpu["detour"]["preempted_seconds"]) / double(cpu["detour"]["window_seconds"]);
}

// Duty × period: 1 ms of every 10 ms at SCHED_FIFO on CPU 1.
TEST(Inject, DutyCycleOnCpu1IsFoundOnCpu1Only) {
  if (native_pus() < 2) GTEST_FAIL() << "this test needs two CPUs";
  const json doc = find_injection_on_cpu1(
      {"--cpus", "1", "--duty", "0.1", "--period", "0.01", "--seconds", "60"});
  const json& cpu0 = doc["cpus"][0];
  const json& cpu1 = doc["cpus"][1];
  EXPECT_EQ(cpu1["state"], "noisy") << cpu1.dump();
  // The injector busy-waits on the clock for 1 ms from when it wakes, so a
  // hypervisor stall during a burst stretches it, and the probe rightly
  // counts the stretch as run-queue wait (seen: 0.138, with a 2.4 ms burst).
  EXPECT_GE(preempted_share(cpu1), 0.07) << cpu1["detour"].dump();
  EXPECT_LE(preempted_share(cpu1), 0.16) << cpu1["detour"].dump();
  EXPECT_GE(double(cpu1["excess_noise"]), 0.05);
  EXPECT_NE(std::string(cpu1["cause"]).find("preempted"), std::string::npos) << cpu1["cause"];
  EXPECT_NE(cpu0["state"], "noisy") << cpu0["cause"];
  // Found in the round, then confirmed on re-measurement beside CPU 0, at
  // the false-alarm rate shared among the round's suspects.
  ASSERT_TRUE(cpu1.contains("confirmation")) << cpu1.dump();
  EXPECT_TRUE(cpu1["confirmation"]["confirmed"]) << cpu1["confirmation"].dump();
  EXPECT_EQ(cpu1["confirmation"]["reference_cpu"], 0);
  EXPECT_GE(double(cpu1["confirmation"]["figure"]), 0.05);
  const json& round = doc["rounds"][0]["confirmation"];
  EXPECT_EQ(round["suspects"], 1) << round.dump();
  EXPECT_DOUBLE_EQ(double(round["alpha"]), 0.05);
  EXPECT_GT(double(round["duration_seconds"]), 0);
}

// The same 10 % in bursts ten times finer: 100 µs every 1 ms.
TEST(Inject, FineBurstsOnCpu1AreFoundOnCpu1Only) {
  if (native_pus() < 2) GTEST_FAIL() << "this test needs two CPUs";
  const json doc = find_injection_on_cpu1(
      {"--cpus", "1", "--burst-hz", "1000", "--burst-length", "0.0001", "--seconds", "60"});
  const json& cpu0 = doc["cpus"][0];
  const json& cpu1 = doc["cpus"][1];
  EXPECT_EQ(cpu1["state"], "noisy") << cpu1.dump();
  // Each burst also costs its wake-up and two context switches, which the
  // probe's run-queue wait counts too: about 25 µs a burst in this VM, so
  // 1000 bursts a second add some 2.5 points; allow up to 50 µs a burst.
  const double preempted = preempted_share(cpu1);
  EXPECT_GE(preempted, 0.10 - 0.03) << cpu1["detour"].dump();
  EXPECT_LE(preempted, 0.10 + 0.03 + 1000 * 50e-6) << cpu1["detour"].dump();
  EXPECT_NE(std::string(cpu1["cause"]).find("preempted"), std::string::npos) << cpu1["cause"];
  // About 1000 detours a second of window, each near 100 µs.
  const double window = cpu1["detour"]["window_seconds"];
  EXPECT_GT(double(cpu1["detour"]["count"]), 500 * window) << cpu1["detour"].dump();
  EXPECT_NE(cpu0["state"], "noisy") << cpu0["cause"];
}

// A memory hog on CPU 0 is at most contention for CPU 1, never noise there.
// (On the development VM one streaming core does not measurably slow the
// other's memory: docs/inject.md.) On CPU 0 itself the hog, at normal
// priority, shares the CPU with the probe: about half its time.
TEST(Inject, MemoryHogOnCpu0IsNoNoiseOnCpu1) {
  if (native_pus() < 2) GTEST_FAIL() << "this test needs two CPUs";
  const json doc = probe_while_injecting({"--cpus", "0", "--memory-hog", "--seconds", "60"});
  const json& cpu0 = doc["cpus"][0];
  const json& cpu1 = doc["cpus"][1];
  EXPECT_NE(cpu1["state"], "noisy") << cpu1.dump();
  EXPECT_GT(preempted_share(cpu0), 0.3) << cpu0["detour"].dump();
  EXPECT_EQ(cpu0["state"], "noisy") << cpu0.dump();
}

// Beside other load (another process taking half of CPU 0, the CPU the
// injected one is compared with) the selftest says it cannot judge, with
// the figures, and exits 1: not a FAIL that an admin would take for a
// broken corenoise.
TEST(Selftest, ABusyMachineIsNotJudged) {
  if (native_pus() < 2) GTEST_FAIL() << "this test needs two CPUs";
  testing::BackgroundProcess load(
      inject({"--cpus", "0", "--seconds", "300", "--duty", "0.5", "--period", "0.01", "--normal"}));
  ASSERT_EQ(load.wait_line().rfind("ready", 0), 0u);
  const auto r = run_command(kCorenoise + " selftest --cpu 1");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("CANNOT JUDGE: the other CPUs lost more than 5.0 %"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(others "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("PASS"), std::string::npos) << r.out;
}

TEST(Selftest, FindsTheInjectedNoiseOnThisMachine) {
  if (native_pus() < 2) GTEST_FAIL() << "this test needs two CPUs";
  const auto r = run_command(kCorenoise + " selftest");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("corenoise selftest: PASS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(SCHED_FIFO)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
}

TEST(Selftest, BadInputAndASingleCpuExitOne) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--cpu 4095", "--cpu: CPU 4095 is not usable"},
      {"--duty 0.05", "at least twice --noisy-excess-noise"},
      {"--rounds 0", "--rounds"},
      {"--mode concurrent", "isolated"},
      {"--probes matmul,clock", "needs the detour probe"},
      {"--bogus", "unknown option '--bogus'"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = run_command(kCorenoise + " selftest " + args);
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
  }
  const auto single = run_command("taskset -c 0 " + kCorenoise + " selftest");
  EXPECT_EQ(single.exit_code, 1) << single.out;
  EXPECT_NE(single.err.find("needs two usable CPUs"), std::string::npos) << single.err;
  EXPECT_EQ(run_command(kCorenoise + " selftest --help").exit_code, 0);
}

}  // namespace
}  // namespace corenoise
