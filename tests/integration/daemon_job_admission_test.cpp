// Who may report what: a real corenoised, run as an unprivileged user of
// its own (Debian's `daemon`) as the packaged unit runs it, never able to
// read another user's /proc, and senders that play each forgery of the
// threat model (docs/control.md) through its user socket: an ordinary
// user's rank taken, then a replay, a new job id for the same rank, a CPU
// outside the sender's affinity, a CPU the node lacks, a report without a
// job-start, time the sender did not live, an end in the future, a sender
// that changed user, and a connection handed to another process after its
// owner exited. Each refusal names its reason, is counted in
// corenoise_job_reports_refused_total{reason} and adds nothing to the job
// metrics. Needs root (setpriv) and, for the affinity case, CPUs 0 and 1.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "control_socket.h"
#include "daemon/control/control_protocol.h"
#include "daemon_process.h"
#include "job_sender.h"
#include "process.h"
#include "quick_daemon.h"
#include "reachable_binary.h"
#include "wrapped_daemon.h"

namespace corenoise {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::ControlSocket;
using testing::http_get;
using testing::job_report_line;
using testing::job_start_line;
using testing::JobSender;
using testing::metric_value;
using testing::send_lines;
using testing::TempDir;
using testing::WrappedDaemon;

const std::string kAsNobody = "/usr/bin/setpriv --reuid=nobody --regid=nogroup --clear-groups";

// `cpus`, each having lost `seconds` to other processes.
json lost_on(const std::vector<unsigned>& cpus, double seconds) {
  json list = json::array();
  for (unsigned cpu : cpus) {
    list.push_back({{"cpu", cpu}, {"lost_seconds", {{"other-processes", seconds}}}});
  }
  return list;
}

// Whether this kernel says a pidfd's user (PIDFD_GET_INFO, Linux 6.13).
bool kernel_says_a_pidfds_user() {
  struct Info {
    std::uint64_t mask, cgroupid;
    std::uint32_t fields[12];
  } info{};
  info.mask = 1u << 1;
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
  const bool said = fd >= 0 && ::ioctl(fd, _IOWR(0xFF, 11, Info), &info) == 0;
  if (fd >= 0) ::close(fd);
  return said;
}

// The daemon as Debian's `daemon` user (uid 1), with no capability: what it
// takes, it takes from the kernel's word alone.
class DaemonJobAdmission : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root, to run the daemon and senders as others";
    ASSERT_GT(port_, 0) << daemon_.log();
    ASSERT_TRUE(daemon_.wait_for_log("user socket at")) << daemon_.log();
  }

  std::string user_socket() const { return user_socket_beside(testing::socket_path(dir_)); }
  std::string metrics() const { return http_get(port_, "/metrics").second; }
  // The value of `series` once it reaches `at_least` (a taken report shows
  // once the snapshot is rebuilt, at most once a second), or its last
  // value after 5 s (-1: absent).
  double series_once_at_least(const std::string& series, double at_least) const {
    double value = -1;
    for (const auto end = std::chrono::steady_clock::now() + 5s;
         std::chrono::steady_clock::now() < end; std::this_thread::sleep_for(100ms)) {
      value = metric_value(metrics(), series).value_or(-1);
      if (value >= at_least) break;
    }
    return value;
  }
  // The count of `reason`: refusals are counted beside the snapshot and
  // show at the next scrape, so it is asked at once.
  double refused(const std::string& reason) const {
    return metric_value(metrics(), "corenoise_job_reports_refused_total{reason=\"" + reason + "\"}")
        .value_or(-1);
  }
  // Nothing of a refused report reached the job metrics.
  void expect_nothing_counted() const {
    const std::string text = metrics();
    EXPECT_EQ(metric_value(text, "corenoise_job_reports_total"), 0.0) << text;
    EXPECT_EQ(text.find("corenoise_job_lost_seconds_total{"), std::string::npos) << text;
  }

  TempDir dir_;
  WrappedDaemon daemon_{{"/usr/bin/setpriv", "--reuid=daemon", "--regid=daemon", "--clear-groups",
                         "--inh-caps=-all", "--bounding-set=-all"},
                        testing::daemon_args(dir_, {"--interval", "86400", "--log-level", "debug"}),
                        dir_.path() + "/log",
                        testing::reachable_by_everyone(CORENOISED_BIN)};
  int port_ = daemon_.port();
};

// An ordinary user's rank: its job-start and its report over the user
// socket are taken; then the same rank's replay and a new job id for it
// are refused, and so is a mutating command.
TEST_F(DaemonJobAdmission, AnOrdinaryUsersRankIsTakenOnceThroughTheUserSocket) {
  const JobSender nobody{kAsNobody + " /usr/bin/taskset -c 0", ""};
  const auto replies =
      send_lines(user_socket(),
                 {job_start_line("slurm-7"), job_report_line("slurm-7", 0.5, lost_on({0}, 0.25)),
                  job_report_line("slurm-7", 0.5, lost_on({0}, 0.25)),
                  job_report_line("slurm-8", 0.5, lost_on({0}, 0.25)), R"({"command":"pause"})",
                  R"({"command":"status"})"},
                 nobody);
  EXPECT_EQ(replies[0], json({{"ok", true}}));
  EXPECT_EQ(replies[1], json({{"ok", true}, {"cpus", 1}}));
  EXPECT_NE(replies[2].value("error", "").find("job: refused (duplicate): "), std::string::npos)
      << replies[2];
  EXPECT_NE(replies[3].value("error", "").find("job: refused (wrong_job): "), std::string::npos)
      << replies[3];
  EXPECT_NE(replies[4].value("error", "").find("is not served on the user socket"),
            std::string::npos)
      << replies[4];
  EXPECT_EQ(replies[5]["access"], "user") << replies[5];
  EXPECT_FALSE(replies[5]["jobs"].contains("last_job_id")) << replies[5];
  EXPECT_EQ(refused("duplicate"), 1.0);
  EXPECT_EQ(refused("wrong_job"), 1.0);
  EXPECT_EQ(series_once_at_least("corenoise_job_reports_total", 1), 1.0);
  const std::string text = metrics();
  EXPECT_EQ(
      metric_value(text, "corenoise_job_lost_seconds_total{cpu=\"0\",cause=\"other-processes\"}"),
      0.25)
      << text;
  // The daemon ran as `daemon` all along, with no capability.
  const std::string status = testing::run_command("grep -E '^(Uid|CapEff):' /proc/" +
                                                  std::to_string(daemon_.pid()) + "/status")
                                 .out;
  EXPECT_NE(status.find("Uid:\t1\t1\t1\t1"), std::string::npos) << status;
  EXPECT_NE(status.find("CapEff:\t0000000000000000"), std::string::npos) << status;
}

// A rank's question about its job (job-culprits): only from a registered
// rank, about its own job; an untraced daemon says so and names nothing.
TEST_F(DaemonJobAdmission, OnlyARegisteredRankMayAskWhatRanOnItsJobsCpus) {
  const JobSender nobody{kAsNobody + " /usr/bin/taskset -c 0", ""};
  const std::string ask = R"({"command":"job-culprits","job_id":"slurm-7"})";
  const auto replies = send_lines(
      user_socket(),
      {ask, job_start_line("slurm-7"), ask, R"({"command":"job-culprits","job_id":"slurm-8"})"},
      nobody);
  EXPECT_EQ(replies[0].value("error", "").rfind("job: refused (unregistered): ", 0), 0u)
      << replies[0];
  EXPECT_EQ(replies[2], json({{"ok", true}, {"trace", "off"}, {"cpus", json::array()}}))
      << replies[2];
  EXPECT_EQ(replies[3].value("error", "").rfind("job: refused (wrong_job): ", 0), 0u) << replies[3];
  EXPECT_EQ(refused("unregistered"), 1.0);
  EXPECT_EQ(refused("wrong_job"), 1.0);
  expect_nothing_counted();
}

// Forgery: a CPU outside the sender's affinity (a rank bound to CPU 0
// reporting CPU 1), and a CPU the node lacks.
TEST_F(DaemonJobAdmission, ACpuOutsideTheSendersAffinityOrTheNodeIsRefused) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  ASSERT_TRUE(CPU_ISSET(0, &mine) && CPU_ISSET(1, &mine)) << "needs CPUs 0 and 1";
  const JobSender bound{kAsNobody + " /usr/bin/taskset -c 0", ""};
  const auto replies =
      send_lines(user_socket(),
                 {job_start_line("j"), job_report_line("j", 0.5, lost_on({0, 1}, 0.1)),
                  job_report_line("j", 0.5, lost_on({4095}, 0.1))},
                 bound);
  EXPECT_EQ(replies[1]
                .value("error", "")
                .rfind("job: refused (cpu_outside_affinity): cpu 1 is "
                       "outside the affinity of process ",
                       0),
            0u)
      << replies[1];
  EXPECT_NE(replies[2].value("error", "").find("job: cpu 4095 is not a CPU of this node"),
            std::string::npos)
      << replies[2];
  EXPECT_EQ(refused("cpu_outside_affinity"), 1.0);
  EXPECT_EQ(refused("invalid"), 1.0);
  expect_nothing_counted();
}

// Forgeries: a report without a job-start, more time than the sender lived,
// and an end in the future.
TEST_F(DaemonJobAdmission, AReportWithoutJobStartOrOfTimeTheSenderDidNotLiveIsRefused) {
  const JobSender nobody{kAsNobody, ""};
  auto replies = send_lines(user_socket(), {job_report_line("j", 0.5, lost_on({0}, 0.1))}, nobody);
  EXPECT_EQ(replies[0].value("error", "").rfind("job: refused (unregistered): ", 0), 0u)
      << replies[0];
  replies = send_lines(user_socket(),
                       {job_start_line("j"), job_report_line("j", 3600, lost_on({0}, 1)),
                        job_report_line("j", 0.5, lost_on({0}, 0.1), 4102444800 /* 2100 */)},
                       nobody);
  EXPECT_EQ(replies[1].value("error", "").rfind("job: refused (too_long): ", 0), 0u) << replies[1];
  EXPECT_EQ(replies[2].value("error", "").rfind("job: refused (bad_time): ", 0), 0u) << replies[2];
  EXPECT_EQ(refused("unregistered"), 1.0);
  EXPECT_EQ(refused("too_long"), 1.0);
  EXPECT_EQ(refused("bad_time"), 1.0);
  expect_nothing_counted();
}

// Forgery: a sender that changed user after connecting (here root, which
// becomes nobody). The kernel says the pidfd's user from Linux 6.13; before
// it, the sender is judged as the user it connected as (docs/control.md,
// "What is not closed").
TEST_F(DaemonJobAdmission, ASenderThatChangedUserIsRefusedWhereTheKernelSays) {
  const auto replies =
      send_lines(user_socket(), {job_start_line("j")}, JobSender{"", "--drop-to 65534:65534"});
  if (kernel_says_a_pidfds_user()) {
    EXPECT_NE(replies[0].value("error", "").find("job: refused (wrong_user): process "),
              std::string::npos)
        << replies[0];
    EXPECT_NE(
        replies[0].value("error", "").find("runs as uid 65534, not as the uid it connected as (0)"),
        std::string::npos)
        << replies[0];
    EXPECT_EQ(refused("wrong_user"), 1.0);
  } else {
    EXPECT_EQ(replies[0], json({{"ok", true}})) << "as the user it connected as";
  }
}

// Forgery: a connection handed on after its owner exited, so that the pid
// the kernel gave no longer names the sender (and may be recycled).
TEST_F(DaemonJobAdmission, AConnectionWhoseOwnerExitedIsRefused) {
  const auto replies =
      send_lines(user_socket(), {job_start_line("j")}, JobSender{kAsNobody, "--hand-to-child"});
  EXPECT_EQ(replies[0].value("error", "").rfind("job: refused (no_credentials): process ", 0), 0u)
      << replies[0];
  EXPECT_NE(replies[0].value("error", "").find("has exited since it connected"), std::string::npos)
      << replies[0];
  EXPECT_EQ(refused("no_credentials"), 1.0);
  expect_nothing_counted();
}

}  // namespace
}  // namespace corenoise
