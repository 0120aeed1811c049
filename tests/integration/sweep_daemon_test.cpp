// `corenoise sweep` on a node where corenoised runs: the daemon's rounds
// would be noise in the sweep's, so the sweep pauses it (with an expiry)
// and resumes it afterwards; a pause the operator set is left alone. Under
// each MPI family's launcher.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon_process.h"
#include "mpi_launchers.h"
#include "process.h"

namespace corenoise {
namespace {

using testing::DaemonProcess;
using testing::run_command;
using testing::TempDir;

const std::string kCorenoise = testing::shell_word(CORENOISE_BIN);  // for run_command
const std::string kTimeout = "timeout -k 10 240 ";
const std::string kQuick = " --samples 3 --reps 4 --detour-window 0.005 --stream-bytes 8388608";

std::vector<std::string> quiet_daemon(const TempDir& dir) {
  return {
      "--config",    "/dev/null", "--listen",   "127.0.0.1:0", "--socket", dir.path() + "/ctl.sock",
      "--state-dir", dir.path(),  "--interval", "3600"};
}

class SweepWithDaemon : public ::testing::TestWithParam<testing::MpiLauncher> {
 protected:
  std::string sweep() const { return kTimeout + GetParam().job(1) + kCorenoise + " sweep"; }
};

TEST_P(SweepWithDaemon, PausesTheDaemonForTheSweepAndResumesIt) {
  TempDir dir;
  DaemonProcess daemon(quiet_daemon(dir));
  ASSERT_GT(daemon.port(), 0) << daemon.log();
  const auto r =
      run_command(sweep() + " --quiet --timeout 100 --socket " + dir.path() + "/ctl.sock" + kQuick);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  EXPECT_EQ(r.err.find("could not pause"), std::string::npos) << r.err;
  // Paused with the sweep's timeout + 60 s as expiry, then resumed (">resumed": the
  // log line, not "paused until resumed").
  ASSERT_TRUE(daemon.wait_for_log(">resumed")) << daemon.log();
  const std::string log = daemon.log();
  const auto paused = log.find("paused for 160");
  ASSERT_NE(paused, std::string::npos) << log;
  EXPECT_LT(paused, log.find(">resumed")) << log;
  const auto status = run_command(kCorenoise + " status --socket " + dir.path() + "/ctl.sock");
  EXPECT_EQ(status.out.find("paused"), std::string::npos) << status.out;
}

TEST_P(SweepWithDaemon, LeavesAnOperatorsPauseAlone) {
  TempDir dir;
  DaemonProcess daemon(quiet_daemon(dir));
  ASSERT_GT(daemon.port(), 0) << daemon.log();
  const std::string socket = " --socket " + dir.path() + "/ctl.sock";
  ASSERT_EQ(run_command(kCorenoise + " pause" + socket).exit_code, 0) << daemon.log();
  const auto r = run_command(sweep() + " --quiet" + socket + kQuick);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  const auto status = run_command(kCorenoise + " status" + socket);
  EXPECT_NE(status.out.find("paused"), std::string::npos) << status.out;
  EXPECT_EQ(daemon.log().find(">resumed"), std::string::npos) << daemon.log();
}

INSTANTIATE_TEST_SUITE_P(Family, SweepWithDaemon, ::testing::ValuesIn(testing::mpi_launchers()),
                         testing::launcher_name);

}  // namespace
}  // namespace corenoise
