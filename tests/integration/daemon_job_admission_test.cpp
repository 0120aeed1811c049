// Only ranks can report: a real corenoised (as root, so it may read every
// process's /proc/PID/maps) and `job` reports from senders that are and
// are not ranks — the test process itself, another user's process, a
// process that changed user after connecting, a rank bound to one CPU
// reporting another, and a rank (a process with the in-job library
// preloaded) reporting twice. Each refusal names its reason, is counted in
// corenoise_job_reports_refused_total{reason} and adds nothing to the job
// metrics. Needs root (setpriv) and, for the affinity case, CPUs 0 and 1.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "control_socket.h"
#include "daemon_process.h"
#include "job_sender.h"
#include "process.h"
#include "quick_daemon.h"

namespace corenoise {
namespace {

using nlohmann::json;
using testing::BackgroundProcess;
using testing::ControlSocket;
using testing::DaemonProcess;
using testing::http_get;
using testing::JobSender;
using testing::metric_value;
using testing::send_lines;
using testing::TempDir;

const std::string kAsNobody = "/usr/bin/setpriv --reuid=nobody --regid=nogroup --clear-groups";

// A well-formed report of `cpus`, each having lost 1.5 s to other processes.
std::string job_line(const std::string& id, const std::vector<unsigned>& cpus) {
  json list = json::array();
  for (unsigned cpu : cpus)
    list.push_back({{"cpu", cpu}, {"lost_seconds", {{"other-processes", 1.5}}}});
  return json({{"command", "job"},
               {"job_id", id},
               {"ended_unix_seconds", 1795962900},
               {"elapsed_seconds", 30},
               {"ranks", 8},
               {"cpus", list}})
      .dump();
}

// A daemon anyone may connect to, that never runs a round of its own.
class DaemonJobAdmission : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root, to run senders as other users";
    ASSERT_GT(port_, 0) << daemon_.log();
    ASSERT_TRUE(daemon_.wait_for_log("control socket at")) << daemon_.log();
  }

  std::string socket() const { return testing::socket_path(dir_); }
  std::string metrics() const { return http_get(port_, "/metrics").second; }
  std::optional<double> refused(const std::string& reason) const {
    return metric_value(metrics(),
                        "corenoise_job_reports_refused_total{reason=\"" + reason + "\"}");
  }
  // Nothing of a refused report reached the job metrics.
  void expect_nothing_counted() const {
    const std::string text = metrics();
    EXPECT_EQ(metric_value(text, "corenoise_job_reports_total"), 0.0) << text;
    EXPECT_EQ(text.find("corenoise_job_lost_seconds_total{"), std::string::npos) << text;
  }

  TempDir dir_;
  DaemonProcess daemon_{testing::daemon_args(
      dir_, {"--socket-mode", "0666", "--interval", "86400", "--log-level", "debug"})};
  int port_ = daemon_.port();
};

// (a) Any program that connects, here the test itself: a well-formed report
// is refused, as is a malformed one or one for a CPU the node lacks.
TEST_F(DaemonJobAdmission, APlainProcessIsNotARank) {
  for (const char* reason : {"no_credentials", "wrong_user", "not_a_rank", "cpu_outside_affinity",
                             "duplicate", "invalid"}) {
    EXPECT_EQ(refused(reason), 0.0) << reason;
  }
  ControlSocket client(socket());
  const json reply = client.request(job_line("slurm-1", {0}));
  EXPECT_EQ(reply["ok"], false) << reply.dump();
  EXPECT_EQ(reply.value("error", "")
                .rfind("job: refused (not_a_rank): process " + std::to_string(::getpid()) +
                           " (uid 0) is not a rank of a job: no "
                           "libcorenoise-job-* library in /proc/",
                       0),
            0u)
      << reply.dump();
  // What the protocol refuses, and a CPU this node lacks, count as invalid.
  EXPECT_EQ(client.request(R"({"command":"job","job_id":""})")["ok"], false);
  const json absent = client.request(job_line("slurm-2", {0, 60000}));
  EXPECT_NE(absent.value("error", "").find("job: cpu 60000 is not a CPU of this node"),
            std::string::npos)
      << absent.dump();
  EXPECT_EQ(refused("not_a_rank"), 1.0);
  EXPECT_EQ(refused("invalid"), 2.0);
  expect_nothing_counted();
  EXPECT_TRUE(daemon_.wait_for_log("refused a job report (not_a_rank) from process " +
                                   std::to_string(::getpid()) + " (uid 0): process " +
                                   std::to_string(::getpid()) + " (uid 0) is not a rank"))
      << daemon_.log();
  EXPECT_TRUE(daemon_.wait_for_log("refused a job report (invalid) from process " +
                                   std::to_string(::getpid()) + " (uid 0): job: cpu 60000"))
      << daemon_.log();
}

// (b) Another user's process that is no rank, and a sender that connected
// as root and became nobody: its credentials are not its process's any more.
TEST_F(DaemonJobAdmission, AnotherUsersProcessIsRefused) {
  auto replies = send_lines(socket(), {job_line("slurm-3", {0})}, {false, kAsNobody, ""});
  EXPECT_EQ(replies[0].value("error", "").rfind("job: refused (not_a_rank): process ", 0), 0u)
      << replies[0].dump();
  EXPECT_NE(replies[0].value("error", "").find("(uid 65534) is not a rank"), std::string::npos)
      << replies[0].dump();

  replies = send_lines(socket(), {job_line("slurm-4", {0})}, {true, "", "--drop-to 65534:65534"});
  EXPECT_EQ(replies[0].value("error", "").rfind("job: refused (wrong_user): process ", 0), 0u)
      << replies[0].dump();
  EXPECT_NE(replies[0].value("error", "").find("runs as uid 65534, not as the sender's uid 0"),
            std::string::npos)
      << replies[0].dump();
  EXPECT_EQ(refused("not_a_rank"), 1.0);
  EXPECT_EQ(refused("wrong_user"), 1.0);
  expect_nothing_counted();
}

// (c) A rank bound to CPU 0 may report CPU 1 only while a rank of its user
// may run there (the node's first rank reports for the node's ranks).
// nobody's ranks, so that root's processes of tests running beside this one
// cannot widen the union.
TEST_F(DaemonJobAdmission, ACpuOutsideTheRanksAffinityIsRefused) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  if (!CPU_ISSET(0, &mine) || !CPU_ISSET(1, &mine)) GTEST_SKIP() << "needs CPUs 0 and 1";
  const JobSender bound{true, kAsNobody + " /usr/bin/taskset -c 0", ""};
  auto replies = send_lines(socket(), {job_line("slurm-5", {0, 1})}, bound);
  EXPECT_EQ(replies[0]
                .value("error", "")
                .rfind("job: refused (cpu_outside_affinity): cpu 1 is "
                       "outside the affinity of every rank of uid 65534 "
                       "on this node (the sender's: 0)",
                       0),
            0u)
      << replies[0].dump();
  EXPECT_EQ(refused("cpu_outside_affinity"), 1.0);
  expect_nothing_counted();

  // Its peer on CPU 1: a process of nobody with the library mapped.
  BackgroundProcess peer({"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                          "/usr/bin/taskset", "-c", "1", "/usr/bin/env",
                          "LD_PRELOAD=" + std::string(JOB_LIBRARY), "/bin/sh", "-c",
                          "echo ready; exec sleep 60"});
  ASSERT_EQ(peer.wait_line(), "ready\n");
  replies = send_lines(socket(), {job_line("slurm-5", {0, 1})}, bound);
  EXPECT_EQ(replies[0], json({{"ok", true}, {"cpus", 2}}));
  const std::string text = metrics();
  EXPECT_EQ(metric_value(text, "corenoise_job_reports_total"), 1.0) << text;
  EXPECT_EQ(
      metric_value(text, "corenoise_job_lost_seconds_total{cpu=\"1\",cause=\"other-processes\"}"),
      1.5)
      << text;
}

// (d) A rank of another user reports once; the same report again is
// refused, and the rank still may not act.
TEST_F(DaemonJobAdmission, ARanksReportIsTakenOnceAndItsDuplicateRefused) {
  const std::string line = job_line("slurm-77", {0});
  const auto replies =
      send_lines(socket(), {line, line, R"({"command":"pause"})"}, {true, kAsNobody, ""});
  EXPECT_EQ(replies[0], json({{"ok", true}, {"cpus", 1}}));
  EXPECT_EQ(replies[1].value("error", "").rfind("job: refused (duplicate): process ", 0), 0u)
      << replies[1].dump();
  EXPECT_NE(replies[1].value("error", "").find("(uid 65534) already reported job 'slurm-77'"),
            std::string::npos)
      << replies[1].dump();
  EXPECT_EQ(replies[2].value("error", ""), "permission denied: 'pause' needs root");
  const std::string text = metrics();
  EXPECT_EQ(metric_value(text, "corenoise_job_reports_total"), 1.0) << text;
  EXPECT_EQ(
      metric_value(text, "corenoise_job_lost_seconds_total{cpu=\"0\",cause=\"other-processes\"}"),
      1.5)
      << text;
  EXPECT_EQ(refused("duplicate"), 1.0);
  EXPECT_EQ(metric_value(text, "corenoise_paused"), 0.0);
}

}  // namespace
}  // namespace corenoise
