// `corenoise collect` under a real mpiexec: two fake nodes
// (MPIR_CVAR_NUM_CLIQUES=2), each with its own real corenoised and control
// socket (hydra's `:` syntax gives each rank its own CORENOISE_SOCKET).
// Structure and publication only, never figures; `timeout` only stops a
// hung job from hanging the suite.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon_process.h"
#include "json_file.h"
#include "mpi_launchers.h"
#include "process.h"

namespace corenoise {
namespace {

using nlohmann::json;
using testing::DaemonProcess;
using testing::http_get;
using testing::run_command;
using testing::TempDir;

// Words for run_command's shell lines.
const std::string kMpiexec = testing::shell_word(MPIEXEC_MPICH_BIN);
const std::string kCorenoise = testing::shell_word(CORENOISE_BIN);
const std::string kTimeout = "timeout -k 10 240 ";

std::vector<std::string> daemon_args(const TempDir& dir) {
  return {"--config",        "/dev/null",
          "--listen",        "127.0.0.1:0",
          "--socket",        dir.path() + "/ctl.sock",
          "--state-dir",     dir.path(),
          "--interval",      "3600",
          "--busy-policy",   "probe",
          "--samples",       "3",
          "--reps",          "4",
          "--detour-window", "0.005",
          "--stream-bytes",  "8388608"};
}

std::string rank_block(const std::string& socket, const std::string& args) {
  return " -n 1 -env CORENOISE_SOCKET " + socket + " " + kCorenoise + " collect " + args;
}

std::string collect(const std::string& socket_a, const std::string& socket_b,
                    const std::string& args) {
  return kTimeout + kMpiexec + " -genv MPIR_CVAR_NUM_CLIQUES 2" + rank_block(socket_a, args) +
         " :" + rank_block(socket_b, args);
}

using testing::read_json;

// The publication's time, and every ratio corenoise_slowdown_ratio has
// (against the node) also against the cluster.
bool published(const std::string& metrics) {
  for (const char* probe : {"matmul", "clock", "stream", "expected"}) {
    const std::string series =
        std::string("\ncorenoise_cluster_slowdown_ratio{cpu=\"0\",probe=\"") + probe + "\"";
    if (metrics.find(series) == std::string::npos) return false;
  }
  return metrics.find("\ncorenoise_cluster_publish_timestamp_seconds") != std::string::npos;
}

TEST(Collect, HelpExitsZero) {
  const auto r = run_command(kTimeout + kCorenoise + " collect --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("--trigger"), std::string::npos);
}

TEST(Collect, TwoNodesEachWithItsDaemonArePublishedBack) {
  TempDir a, b;
  DaemonProcess daemon_a(daemon_args(a));
  DaemonProcess daemon_b(daemon_args(b));
  const int port_a = daemon_a.port();
  const int port_b = daemon_b.port();
  ASSERT_GT(port_a, 0) << daemon_a.log();
  ASSERT_GT(port_b, 0) << daemon_b.log();
  const std::string out = a.path() + "/cluster.json";
  const auto r = run_command(
      collect(a.path() + "/ctl.sock", b.path() + "/ctl.sock", "--trigger --json " + out));
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2)
      << r.exit_code << "\n"
      << r.out << r.err << daemon_a.log() << daemon_b.log();
  const json report = read_json(out);
  ASSERT_EQ(report["nodes"].size(), 2u) << report.dump(2);
  for (const json& n : report["nodes"]) {
    EXPECT_GT(n["probed_cores"].get<int>(), 0) << n.dump();
    EXPECT_FALSE(n.contains("error")) << n.dump();
  }
  EXPECT_EQ(report["node_count"], 2);
  for (int port : {port_a, port_b}) {
    const std::string metrics = http_get(port, "/metrics").second;
    EXPECT_TRUE(published(metrics)) << metrics;
  }
}

TEST(Collect, AMissingDaemonIsReportedAndSkipped) {
  TempDir a, b;
  DaemonProcess daemon_a(daemon_args(a));
  const int port_a = daemon_a.port();
  ASSERT_GT(port_a, 0) << daemon_a.log();
  const std::string out = a.path() + "/cluster.json";
  const std::string missing = b.path() + "/ctl.sock";  // no daemon there
  const auto r = run_command(collect(a.path() + "/ctl.sock", missing, "--trigger --json " + out));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find(missing), std::string::npos) << r.out << r.err;
  const json report = read_json(out);
  ASSERT_EQ(report["nodes"].size(), 2u) << report.dump(2);
  EXPECT_FALSE(report["nodes"][0].contains("error")) << report.dump(2);
  ASSERT_TRUE(report["nodes"][1].contains("error")) << report.dump(2);
  EXPECT_NE(report["nodes"][1]["error"].get<std::string>().find(missing), std::string::npos);
  EXPECT_EQ(report["nodes"][1]["probed_cores"], 0);
  // The node that answered is still published to.
  EXPECT_TRUE(published(http_get(port_a, "/metrics").second));
}

// One node's collect under each family's own launcher: the daemon's results
// are reduced and published back to it.
class CollectFamily : public ::testing::TestWithParam<testing::MpiLauncher> {};

TEST_P(CollectFamily, OneNodesDaemonIsPublishedBack) {
  TempDir dir;
  DaemonProcess daemon(daemon_args(dir));
  const int port = daemon.port();
  ASSERT_GT(port, 0) << daemon.log();
  const std::string out = dir.path() + "/cluster.json";
  const auto r =
      run_command(kTimeout + GetParam().job(1, {"CORENOISE_SOCKET=" + dir.path() + "/ctl.sock"}) +
                  kCorenoise + " collect --trigger --json " + out);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.exit_code << "\n"
                                                    << r.out << r.err << daemon.log();
  const json report = read_json(out);
  ASSERT_EQ(report["nodes"].size(), 1u) << report.dump(2);
  EXPECT_GT(report["nodes"][0]["probed_cores"].get<int>(), 0) << report.dump(2);
  EXPECT_TRUE(published(http_get(port, "/metrics").second));
}

INSTANTIATE_TEST_SUITE_P(Family, CollectFamily, ::testing::ValuesIn(testing::mpi_launchers()),
                         testing::launcher_name);

}  // namespace
}  // namespace corenoise
