// `corenoise sweep` under a real process manager: as a singleton and with
// `mpiexec -n 2` and MPIR_CVAR_NUM_CLIQUES=2 (two fake "nodes" on this one
// host). Both fake nodes probe the same physical CPUs, so only the report's
// structure is checked, never its figures; `timeout` only stops a hung job
// from hanging the suite. No timing assertions.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "probe/topology.h"
#include "process.h"

namespace corenoise {
namespace {

using nlohmann::json;
using testing::run_command;

const std::string kMpiexec = MPIEXEC_BIN;
const std::string kCorenoise = CORENOISE_BIN;
const std::string kTimeout = "timeout -k 10 180 ";
const std::string kTwoNodes = " -genv MPIR_CVAR_NUM_CLIQUES 2";
// Quick rounds: a few ms per core, so the suite stays short on 2 cores.
const std::string kQuick = " --samples 3 --reps 4 --detour-window 0.005 --stream-bytes 8388608";

std::string temp_path(const std::string& name) {
  return "/tmp/corenoise-sweep-test-" + std::to_string(getpid()) + "-" + name;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// The fields docs/sweep.md promises, whatever the figures.
void expect_report_structure(const json& report, std::size_t nodes) {
  ASSERT_TRUE(report["nodes"].is_array());
  ASSERT_EQ(report["nodes"].size(), nodes);
  for (std::size_t i = 0; i < nodes; ++i) {
    EXPECT_EQ(report["nodes"][i]["index"], i);
    EXPECT_GT(report["nodes"][i]["probed_cores"].get<int>(), 0);
    EXPECT_TRUE(report["nodes"][i].contains("outlier"));
  }
  EXPECT_EQ(report["node_count"], nodes);
  ASSERT_TRUE(report["worst"].is_array());
  ASSERT_FALSE(report["worst"].empty());
  double previous = 1e300;
  for (const json& w : report["worst"]) {
    SCOPED_TRACE(w.dump());
    ASSERT_TRUE(w.contains("node") && w.contains("cpu") && w.contains("state"));
    EXPECT_LT(w["node"].get<std::size_t>(), nodes);
    const double s = w["expected_slowdown"].get<double>();
    EXPECT_LE(s, previous) << "worst is not sorted worst first";
    previous = s;
  }
  ASSERT_TRUE(report["cluster"]["quantiles"].is_array());
  bool has_slowdown = false;
  for (const json& q : report["cluster"]["quantiles"]) {
    EXPECT_LE(q["p50"].get<double>(), q["p99"].get<double>());
    if (q["metric"] == "expected_slowdown") has_slowdown = true;
  }
  EXPECT_TRUE(has_slowdown);
  ASSERT_TRUE(report["prediction"].is_object());
  EXPECT_GT(report["prediction"]["step_seconds"].get<double>(), 0);
  EXPECT_GE(report["prediction"]["wait_seconds"].get<double>(), 0);
  EXPECT_TRUE(report["drain_commands"].is_array());
}

TEST(Sweep, HelpExitsZero) {
  const auto r = run_command(kTimeout + kCorenoise + " sweep --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Usage: "), std::string::npos);
  EXPECT_NE(r.out.find("--timeout"), std::string::npos);
}

TEST(Sweep, BadOptionExitsOneNamingIt) {
  const auto r = run_command(kTimeout + kCorenoise + " sweep --no-such-option");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--no-such-option"), std::string::npos) << r.err;
  const auto bad_top = run_command(kTimeout + kCorenoise + " sweep --top 0");
  EXPECT_EQ(bad_top.exit_code, 1);
  EXPECT_NE(bad_top.err.find("--top"), std::string::npos) << bad_top.err;
}

TEST(Sweep, RankPerCoreIsRejected) {
  const auto r = run_command(kTimeout + kCorenoise + " sweep --rank-per-core");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("rank-per-core"), std::string::npos) << r.err;
}

TEST(Sweep, SingletonWithoutMpiexec) {
  const std::string path = temp_path("singleton.json");
  const auto r = run_command(kTimeout + kCorenoise + " sweep" + kQuick + " --json " + path);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.exit_code << r.err;
  EXPECT_NE(r.out.find("Worst"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("corenoise sweep: 1 nodes"), std::string::npos) << r.out;
  expect_report_structure(read_json(path), 1);
  std::remove(path.c_str());
}

TEST(Sweep, TwoFakeNodesUnderMpiexec) {
  const std::string path = temp_path("two.json");
  const auto r = run_command(kTimeout + kMpiexec + " -n 2" + kTwoNodes + " " + kCorenoise +
                             " sweep" + kQuick + " --verbose --json " + path);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.exit_code << r.err;
  // --verbose: each leader says what it sent.
  EXPECT_NE(r.err.find("node 0: sent"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("node 1: sent"), std::string::npos) << r.err;
  const json report = read_json(path);
  expect_report_structure(report, 2);
  EXPECT_EQ(report["healthy"].get<bool>(), r.exit_code == 0);
  std::remove(path.c_str());
}

TEST(Sweep, WatchdogAbortsTheJob) {
  // Two-second detour windows cannot finish within one second.
  const auto r = run_command(kTimeout + kMpiexec + " -n 2" + kTwoNodes + " " + kCorenoise +
                             " sweep --timeout 1 --samples 3 --detour-window 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 124) << "the watchdog did not fire; timeout(1) stopped the job";
  EXPECT_NE(r.err.find("did not finish within"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace corenoise

namespace corenoise {
namespace {

// --full gathers every core of every node: the JSON `cells` and the HTML
// heatmap hold one cell per node and CPU.
TEST(Sweep, FullReportHasEveryCoreOfEveryNode) {
  const std::string json_path = temp_path("full.json");
  const std::string html_path = temp_path("full.html");
  const auto r =
      run_command(kTimeout + kMpiexec + " -n 2 -genv MPIR_CVAR_NUM_CLIQUES 2 " + kCorenoise +
                  " sweep --full" + kQuick + " --json " + json_path + " --html " + html_path);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.out << r.err;
  EXPECT_NE(r.out.find("report written to " + html_path), std::string::npos) << r.out;
  const json report = read_json(json_path);
  const std::size_t cpus = Topology::load("native").pus().size();
  ASSERT_EQ(report["cells"].size(), 2u) << report.dump();
  for (std::size_t node = 0; node < 2; ++node) {
    EXPECT_EQ(report["cells"][node]["node"], node);
    EXPECT_EQ(report["cells"][node]["cores"].size(), cpus);
  }
  std::ifstream in(html_path);
  const std::string html((std::istreambuf_iterator<char>(in)), {});
  for (std::size_t node = 0; node < 2; ++node) {
    for (std::size_t cpu = 0; cpu < cpus; ++cpu) {
      const std::string cell =
          "data-node=\"" + std::to_string(node) + "\" data-cpu=\"" + std::to_string(cpu) + "\"";
      EXPECT_NE(html.find(cell), std::string::npos) << cell;
    }
  }
}

}  // namespace
}  // namespace corenoise
