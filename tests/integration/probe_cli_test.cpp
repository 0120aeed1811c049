// `corenoise probe` as a user runs it: the real binary on this machine.
#include <gtest/gtest.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>

#include "host_draw.h"
#include "probe/topology.h"
#include "process.h"

namespace corenoise {
namespace {

using nlohmann::json;
using testing::BackgroundProcess;
using testing::run_command;

const std::string kCorenoise = testing::shell_word(CORENOISE_BIN);  // for run_command
const std::string kFixtures = CORENOISE_FIXTURES;

// Short rounds: these tests check behaviour, not figures.
const std::string kQuick = " --samples 3 --reps 4 --detour-window 0.005 --stream-bytes 8388608";

std::size_t native_pus() { return Topology::load("native").pus().size(); }

TEST(ProbeCli, JsonCarriesEveryPuWithTheDocumentedFields) {
  const auto r = run_command(kCorenoise + " probe --json -" + kQuick);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.exit_code << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["settings"]["matmul_size"], 128);
  EXPECT_EQ(doc["settings"]["dtype"], "f64");
  EXPECT_EQ(doc["settings"]["mode"], "isolated");
  EXPECT_EQ(doc["settings"]["reps"], 4);
  ASSERT_EQ(doc["cpus"].size(), native_pus());
  for (const auto& c : doc["cpus"]) {
    for (const char* key :
         {"cpu", "core", "package", "numa_node", "kind", "state", "expected_slowdown"}) {
      EXPECT_TRUE(c.contains(key)) << key << " in " << c.dump();
    }
    const double seconds = c["matmul"]["seconds"];
    const double rate = c["matmul"]["flops_per_second"];
    // The rate is the kernel's fixed work over the measured time.
    EXPECT_NEAR(rate * seconds, 2.0 * 128 * 128 * 128 * 4, 1e3);
    EXPECT_GT(double(c["matmul"]["slowdown"]), 0);
    EXPECT_GT(double(c["clock"]["hertz"]), 1e8);
    EXPECT_GE(double(c["detour"]["noise_ratio"]), 0);
    EXPECT_LT(double(c["detour"]["noise_ratio"]), 1);
    EXPECT_GE(int(c["detour"]["count"]), 0);
    EXPECT_GE(double(c["detour"]["max_seconds"]), 0);
    EXPECT_GT(double(c["stream"]["bytes_per_second"]), 1e8);
  }
  // The summary goes to stderr so that stdout stays pure JSON.
  EXPECT_NE(r.err.find("CPUs probed"), std::string::npos) << r.err;
}

TEST(ProbeCli, TablePrintsARowForEveryCpu) {
  const auto r = run_command(kCorenoise + " probe" + kQuick);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  // A row starts with its cpu, core, package and NUMA numbers; a verdict's explanation below the
  // table ("... the default reference ...") is not a row.
  const std::regex row(R"(^\s*\d+\s+\d+\s+\d+\s+\d+\s+\S)");
  std::size_t rows = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, row)) ++rows;
  }
  EXPECT_EQ(rows, native_pus()) << r.out;
  EXPECT_NE(r.out.find("CPUs probed (isolated; f64 n=128 reps=4"), std::string::npos) << r.out;
}

// PUs this process may not use stay in the report, skipped with the reason.
TEST(ProbeCli, CpusOutsideTheAffinityAreListedAsSkipped) {
  if (native_pus() < 2) GTEST_FAIL() << "this test needs two CPUs";
  auto r = run_command("taskset -c 0 " + kCorenoise + " probe --json -" + kQuick);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  const json doc = json::parse(r.out);
  ASSERT_EQ(doc["cpus"].size(), native_pus());
  EXPECT_NE(doc["cpus"][0]["state"], "skipped");
  EXPECT_EQ(doc["cpus"][1]["state"], "skipped");
  EXPECT_EQ(doc["cpus"][1]["cause"], "outside process affinity");
  r = run_command("taskset -c 0 " + kCorenoise + " probe" + kQuick);
  EXPECT_NE(r.out.find("skipped (outside process affinity)"), std::string::npos) << r.out;
  // Asking only for CPUs it may not use is an error, not an empty success.
  r = run_command("taskset -c 0 " + kCorenoise + " probe --cpus 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cpu 1 outside process affinity"), std::string::npos) << r.err;
}

TEST(ProbeCli, BothModesSayWhereEachModeGoes) {
  const auto r =
      run_command(kCorenoise + " probe --mode both --probes matmul,clock --json -" + kQuick);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  const json doc = json::parse(r.out);
  ASSERT_EQ(doc["rounds"].size(), 2u);
  EXPECT_EQ(doc["rounds"][0]["mode"], "isolated");
  EXPECT_EQ(doc["rounds"][1]["mode"], "concurrent");
  for (const auto& c : doc["cpus"]) {
    // The top level is the mode whose verdict is the overall state.
    ASSERT_TRUE(c["mode"] == "isolated" || c["mode"] == "concurrent") << c.dump();
    const json& deciding = c[c["mode"].get<std::string>()];
    EXPECT_EQ(c["state"], deciding["state"]) << c.dump();
    EXPECT_EQ(c["cause"], deciding["cause"]) << c.dump();
    EXPECT_EQ(c["matmul"], deciding["matmul"]) << c.dump();
    EXPECT_TRUE(c["isolated"]["matmul"].contains("seconds")) << c.dump();
    EXPECT_TRUE(c["concurrent"]["matmul"].contains("seconds")) << c.dump();
    EXPECT_FALSE(c.contains("detour"));
  }
}

TEST(ProbeCli, AnotherMachinesTopologyIsListedNotProbed) {
  const auto r =
      run_command(kCorenoise + " probe --topology " +
                  testing::shell_word(kFixtures + "/topology/spr-2s-120c-240t.xml") + " --json -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  ASSERT_EQ(doc["cpus"].size(), 240u);
  for (const auto& c : doc["cpus"]) EXPECT_EQ(c["state"], "skipped");
  EXPECT_NE(r.err.find("240 PUs listed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("probed none of them"), std::string::npos) << r.err;
}

struct BadInput {
  std::string args;
  std::string message;
};

TEST(ProbeCli, BadInputExitsOneNamingTheInput) {
  const std::vector<BadInput> cases = {
      {"--probes matmul,fft", "unknown probe 'fft'"},
      {"--cpus 0-", "0-"},
      {"--cpus 1-0", "1-0"},
      {"--cpus 4095", "CPU 4095 is not on this machine"},
      {"--matmul-size 0", "--matmul-size: got '0', expected a matrix order"},
      {"--matmul-size -3", "--matmul-size"},
      {"--reps 0", "--reps"},
      {"--mode sideways", "expected isolated, concurrent or both"},
      {"--trace sideways", "--trace: got 'sideways', expected auto, on or off"},
      {"--topology /nonexistent/topo.xml", "/nonexistent/topo.xml"},
      {"--topology " + testing::shell_word(kFixtures + "/proc/garbage/stat"), "stat"},
      {"--json /nonexistent/dir/out.json", "cannot write '/nonexistent/dir/out.json'"},
      {"--no-such-option 1", "unknown option '--no-such-option'"},
      {"--samples", "--samples needs a value"},
  };
  for (const auto& c : cases) {
    const auto r = run_command(kCorenoise + " probe " + c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args << " printed: " << r.out;
  }
}

TEST(ProbeCli, HelpExplainsEveryOption) {
  const auto r = run_command(kCorenoise + " probe --help");
  ASSERT_EQ(r.exit_code, 0);
  for (const char* option :
       {"--cpus", "--probes", "--mode", "--samples", "--matmul-size", "--dtype", "--reps",
        "--topology", "--json", "--quiet", "--trace", "Exit status"}) {
    EXPECT_NE(r.out.find(option), std::string::npos) << option;
  }
  EXPECT_EQ(run_command(kCorenoise + " --help").exit_code, 0);
  EXPECT_EQ(run_command(kCorenoise + " frobnicate").exit_code, 1);
}

TEST(ProbeCli, QuietPrintsOnlyTheSummary) {
  const auto r = run_command(kCorenoise + " probe --quiet --probes clock" + kQuick);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

// The acceptance test of the detour probe: a SCHED_FIFO thread busy 1 ms
// out of every 10 ms on CPU 1 makes CPU 1 noisy, with about 10 % of its time
// lost, within two rounds, and leaves CPU 0 alone.
TEST(ProbeCli, InjectedNoiseOnCpu1IsFoundOnCpu1Only) {
  if (native_pus() < 2) GTEST_FAIL() << "this test needs two CPUs";
  BackgroundProcess injector(
      {NOISE_INJECTOR_BIN, "--cpu", "1", "--busy-ms", "1", "--period-ms", "10", "--seconds", "60"});
  const std::string ready = injector.wait_line();
  ASSERT_EQ(ready.rfind("ready", 0), 0u) << ready;
  // Found and confirmed within four rounds. A round confirms 10 % on this
  // 2-core VM in about 9 of 12 tries (docs/verdicts.md: the floor is the
  // other core, whose own bursts widen every interval), so two rounds
  // missed it in about 6 % of fair draws -- seen in CI, a fair draw whose
  // two rounds both called CPU 1 ok or transient -- and four miss it in
  // about 0.4 %. Each miss is printed with its figures.
  // Each draw of two rounds taken where the host ran the two vCPUs alike
  // (host_draw.h): a fresh-machine check saw it take 24-30 % of clean CPU 0.
  const auto rounds = [] {
    testing::CommandResult r;
    for (int round = 1; round <= 4; ++round) {
      r = run_command(kCorenoise + " probe --cpus 0,1 --json -");
      if (r.exit_code == 2) break;
      std::cerr << "round " << round << " missed the injection: " << r.err << "\n";
    }
    return r;
  };
  const testing::CommandResult r =
      testing::draw_on_a_fair_host("probe", rounds, [](const testing::CommandResult& d) {
        if (d.exit_code != 0 && d.exit_code != 2) return std::optional<std::string>();
        return testing::unfair_host_beside_injection(json::parse(d.out), 1, 0.10);
      });
  ASSERT_EQ(r.exit_code, 2) << r.err << r.out;
  const json doc = json::parse(r.out);
  const json& cpu0 = doc["cpus"][0];
  const json& cpu1 = doc["cpus"][1];
  ASSERT_EQ(cpu1["cpu"], 1);
  EXPECT_EQ(cpu1["state"], "noisy") << cpu1["cause"];
  // The injector's share is measured exactly, whatever the hypervisor adds
  // on top (this VM's floor has ranged from 5 % to 35 % within an hour).
  const json& detour = cpu1["detour"];
  const double preempted = double(detour["preempted_seconds"]) / double(detour["window_seconds"]);
  // Above 0.10 only by hypervisor stalls during a burst, which stretch it
  // (the injector busy-waits on the clock) and count as run-queue wait.
  EXPECT_GE(preempted, 0.07) << detour.dump();
  EXPECT_LE(preempted, 0.16) << detour.dump();
  EXPECT_GE(double(detour["noise_ratio"]), preempted) << detour.dump();
  EXPECT_GE(double(cpu1["excess_noise"]), 0.03);
  EXPECT_NE(std::string(cpu1["cause"]).find("preempted"), std::string::npos) << cpu1["cause"];
  EXPECT_NE(cpu0["state"], "noisy") << cpu0["cause"];
  EXPECT_LT(double(cpu0["excess_noise"]), 0.03);
}

}  // namespace
}  // namespace corenoise
