// Privileges of a real corenoised: it runs as an unprivileged user; other
// users on its control socket may read but not act; the control group
// decides who may; it executes nothing but itself (strace); its sources call
// no shell; its exporter serves GET and HEAD of / and /metrics and nothing
// else. Needs root, to become other users.
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "control_socket.h"
#include "daemon_process.h"
#include "probe/topology.h"
#include "quick_daemon.h"
#include "wrapped_daemon.h"

namespace corenoise {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::as_nobody;
using testing::ControlSocket;
using testing::DaemonProcess;
using testing::http_get;
using testing::metric_value;
using testing::TempDir;
using testing::WrappedDaemon;

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;
constexpr uid_t kDaemonUser = 1;  // Debian's `daemon`: in no group but its own
constexpr gid_t kDaemonGroup = 1;

using testing::daemon_args;
using testing::rounds;
using testing::socket_path;

bool wait_rounds(int port, double at_least, std::chrono::seconds timeout = 60s) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (rounds(port) >= at_least) return true;
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

// The replies to `requests`, one line each, sent by a forked child running
// as uid/gid with no supplementary groups; "connect: ERRNO" if it could not
// connect. After fork() in this threaded process the child makes system
// calls only (no allocation); everything it needs is prepared before.
std::vector<std::string> send_as(uid_t uid, gid_t gid, const std::string& path,
                                 const std::vector<std::string>& requests) {
  std::string wire;
  for (const auto& r : requests) wire += r + "\n";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return {"pipe failed"};
  const pid_t child = fork();
  if (child == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(gid, gid, gid) != 0 ||
        setresuid(uid, uid, uid) != 0)
      _exit(2);
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      char message[32] = "connect: ";
      int n = errno, at = 9;
      char digits[12];
      int d = 0;
      do digits[d++] = static_cast<char>('0' + n % 10);
      while ((n /= 10) > 0);
      while (d > 0) message[at++] = digits[--d];
      message[at++] = '\n';
      (void)!write(out[1], message, static_cast<std::size_t>(at));
      _exit(0);
    }
    std::size_t sent = 0, lines = 0;
    const std::size_t wanted = requests.size();
    while (sent < wire.size()) {
      const ssize_t n = send(fd, wire.data() + sent, wire.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    char c;
    pollfd p{fd, POLLIN, 0};
    while (lines < wanted && poll(&p, 1, 20000) > 0 && read(fd, &c, 1) == 1) {
      (void)!write(out[1], &c, 1);
      if (c == '\n') ++lines;
    }
    _exit(0);
  }
  close(out[1]);
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = read(out[0], buffer, sizeof buffer)) > 0)
    text.append(buffer, static_cast<std::size_t>(n));
  close(out[0]);
  waitpid(child, nullptr, 0);
  std::vector<std::string> replies;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) replies.push_back(line);
  return replies;
}

const std::string kPublish =
    R"({"command":"publish","published_unix_seconds":1,"reference":{"from":"test"},)"
    R"("slowdowns":[{"cpu":0,"probe":"matmul","mode":"isolated","ratio":1.5}]})";

// Each mutating command, and what only root or the group may do.
const std::vector<std::pair<std::string, std::string>> kMutating = {
    {R"({"command":"pause"})", "pause"},          {R"({"command":"resume"})", "resume"},
    {R"({"command":"run","wait":false})", "run"}, {kPublish, "publish"},
    {R"({"command":"calibrate"})", "calibrate"},
};

// ---- running unprivileged ----------------------------------------------------

TEST(DaemonPrivileges, RunsProbesAndServesAsNobody) {
  TempDir dir;
  WrappedDaemon daemon(as_nobody(), daemon_args(dir), dir.path() + "/log");
  const int port = daemon.port();
  ASSERT_GT(port, 0) << daemon.log();
  ASSERT_TRUE(wait_rounds(port, 2)) << daemon.log();

  std::ifstream status_file("/proc/" + std::to_string(daemon.pid()) + "/status");
  const std::string status((std::istreambuf_iterator<char>(status_file)), {});
  EXPECT_NE(status.find("\nUid:\t65534\t65534\t65534\t65534\n"), std::string::npos) << status;
  EXPECT_NE(status.find("\nCapEff:\t0000000000000000\n"), std::string::npos) << status;

  const std::string text = http_get(port, "/metrics").second;
  for (unsigned cpu = 0; cpu < Topology::load("native").pus().size(); ++cpu) {
    EXPECT_TRUE(metric_value(text, "corenoise_slowdown_ratio{cpu=\"" + std::to_string(cpu) +
                                       "\",probe=\"matmul\",mode=\"isolated\"}"))
        << cpu << "\n"
        << text;
  }
  ControlSocket client(socket_path(dir));
  EXPECT_EQ(client.request(R"({"command":"status"})").value("ok", false), true);
  struct stat st {};
  ASSERT_EQ(stat(socket_path(dir).c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kNobody);
  ASSERT_TRUE(daemon.wait_for_log("calibration saved")) << daemon.log();
  ASSERT_EQ(stat((dir.path() + "/calibration.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kNobody);
  // Its own pause works: the socket's owner is not root, but the peer is.
  EXPECT_EQ(client.request(R"({"command":"pause","seconds":5})").value("ok", false), true);
}

// ---- other users on the control socket --------------------------------------

TEST(DaemonPrivileges, AnotherUserMayReadButNotAct) {
  TempDir dir;
  DaemonProcess daemon(daemon_args(dir, {"--socket-mode", "0666", "--interval", "86400"}));
  ASSERT_TRUE(daemon.wait_for_log("control socket at")) << daemon.log();
  std::vector<std::string> requests = {R"({"command":"status"})", R"({"command":"results"})"};
  for (const auto& [request, name] : kMutating) requests.push_back(request);
  const auto replies = send_as(kNobody, kNogroup, socket_path(dir), requests);
  ASSERT_EQ(replies.size(), requests.size()) << (replies.empty() ? "" : replies[0]);
  EXPECT_EQ(json::parse(replies[0]).value("ok", false), true) << replies[0];
  EXPECT_EQ(json::parse(replies[1]).value("ok", false), true) << replies[1];
  for (std::size_t i = 0; i < kMutating.size(); ++i) {
    EXPECT_EQ(json::parse(replies[i + 2]).value("error", ""),
              "permission denied: '" + kMutating[i].second + "' needs root")
        << replies[i + 2];
  }
  // Nothing happened: not paused, no round, nothing published.
  ControlSocket root(socket_path(dir));
  const json status = root.request(R"({"command":"status"})");
  EXPECT_EQ(status["paused"], false) << status.dump();
  EXPECT_FALSE(status.contains("cluster")) << status.dump();
  EXPECT_EQ(status["rounds"], json::object()) << status.dump();
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/calibration.json"));
}

TEST(DaemonPrivileges, WithTheDefaultModeOtherUsersCannotConnect) {
  TempDir dir;
  DaemonProcess daemon(daemon_args(dir, {"--interval", "86400"}));
  ASSERT_TRUE(daemon.wait_for_log("control socket at")) << daemon.log();
  const auto replies = send_as(kNobody, kNogroup, socket_path(dir), {R"({"command":"status"})"});
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0], "connect: " + std::to_string(EACCES));
}

// With a control group: its members may act; another user may not connect
// (mode 0660), or with mode 0666 may read but not act, and is told which
// group it lacks.
TEST(DaemonPrivileges, TheControlGroupDecidesWhoMayAct) {
  ASSERT_NE(getgrnam("nogroup"), nullptr);
  ASSERT_NE(getpwuid(kDaemonUser), nullptr) << "Debian's 'daemon' user (uid 1)";
  {
    TempDir dir;
    DaemonProcess daemon(daemon_args(dir, {"--control-group", "nogroup", "--interval", "86400"}));
    ASSERT_TRUE(daemon.wait_for_log("control socket at")) << daemon.log();
    struct stat st {};
    ASSERT_EQ(stat(socket_path(dir).c_str(), &st), 0);
    EXPECT_EQ(st.st_gid, kNogroup);
    EXPECT_EQ(st.st_mode & 0777, 0660u);
    auto replies = send_as(kNobody, kNogroup, socket_path(dir),
                           {R"({"command":"pause"})", R"({"command":"resume"})", kPublish});
    ASSERT_EQ(replies.size(), 3u);
    for (const auto& reply : replies)
      EXPECT_EQ(json::parse(reply).value("ok", false), true) << reply;
    replies = send_as(kDaemonUser, kDaemonGroup, socket_path(dir), {R"({"command":"status"})"});
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_EQ(replies[0], "connect: " + std::to_string(EACCES));
  }
  TempDir dir;
  DaemonProcess daemon(daemon_args(
      dir, {"--control-group", "nogroup", "--socket-mode", "0666", "--interval", "86400"}));
  ASSERT_TRUE(daemon.wait_for_log("control socket at")) << daemon.log();
  std::vector<std::string> requests = {R"({"command":"status"})"};
  for (const auto& [request, name] : kMutating) requests.push_back(request);
  const auto replies = send_as(kDaemonUser, kDaemonGroup, socket_path(dir), requests);
  ASSERT_EQ(replies.size(), requests.size());
  EXPECT_EQ(json::parse(replies[0]).value("ok", false), true) << replies[0];
  for (std::size_t i = 0; i < kMutating.size(); ++i) {
    EXPECT_EQ(json::parse(replies[i + 1]).value("error", ""),
              "permission denied: '" + kMutating[i].second + "' needs root or group nogroup")
        << replies[i + 1];
  }
}

// ---- no shell-outs -------------------------------------------------------------

// strace follows the daemon and every thread through rounds, a reload, a
// scrape and control requests: the one execve is the daemon's own start,
// and every clone makes a thread, never a process.
TEST(DaemonPrivileges, ExecutesNothingButItself) {
  TempDir dir;
  const std::string trace = dir.path() + "/trace";
  // LeakSanitizer cannot stop the world of a traced process, so an ASan
  // build skips its exit-time leak check here (the other tests make it).
  WrappedDaemon daemon({"/usr/bin/env", "LSAN_OPTIONS=detect_leaks=0", "/usr/bin/strace", "-f",
                        "-qq", "-o", trace, "-e", "trace=execve,execveat,fork,vfork,clone,clone3"},
                       daemon_args(dir), dir.path() + "/log");
  const int port = daemon.port();
  ASSERT_GT(port, 0) << daemon.log();
  // strace writes "PID execve(...)" as it starts the daemon.
  std::string first;
  for (int i = 0; i < 500 && first.empty(); ++i) {
    std::ifstream in(trace);
    std::getline(in, first);
    if (first.empty()) std::this_thread::sleep_for(20ms);
  }
  const pid_t pid = std::atoi(first.c_str());
  ASSERT_GT(pid, 0) << first;
  daemon.adopt(pid);

  ASSERT_TRUE(wait_rounds(port, 2)) << daemon.log();
  kill(pid, SIGHUP);
  ASSERT_TRUE(daemon.wait_for_log("configuration reloaded")) << daemon.log();
  EXPECT_EQ(http_get(port, "/").first, 200);
  EXPECT_EQ(http_get(port, "/metrics").first, 200);
  ControlSocket client(socket_path(dir));
  EXPECT_EQ(client.request(R"({"command":"run","mode":"both","wait":true})").value("ok", false),
            true);
  EXPECT_EQ(client.request(R"({"command":"status"})").value("ok", false), true);
  EXPECT_EQ(client.request(R"({"command":"calibrate"})").value("ok", false), true);
  const double before = rounds(port);
  ASSERT_TRUE(wait_rounds(port, before + 1)) << daemon.log();
  kill(pid, SIGTERM);
  ASSERT_TRUE(daemon.wait_exit(20s).has_value()) << daemon.log();

  std::ifstream in(trace);
  int execs = 0, threads = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find("resumed>") != std::string::npos ||
        line.find(" exited with ") != std::string::npos || line.find("+++") != std::string::npos ||
        line.find("---") != std::string::npos)
      continue;
    if (line.find("execve(") != std::string::npos) {
      ++execs;
      EXPECT_NE(line.find("execve(\"" + daemon.binary() + "\""), std::string::npos) << line;
    } else if (line.find("clone") != std::string::npos) {
      ++threads;
      EXPECT_NE(line.find("CLONE_THREAD"), std::string::npos)
          << "a process, not a thread: " << line;
    } else {
      ADD_FAILURE() << "unexpected: " << line;
    }
  }
  EXPECT_EQ(execs, 1);
  EXPECT_GE(threads, 3) << "round, exporter and probe threads";
}

// The same for the source: no call that runs another program.
TEST(DaemonPrivileges, DaemonAndProbeSourcesCallNoShell) {
  const std::regex call(
      R"(\b(system|popen|execl|execlp|execle|execv|execvp|execvpe|execve|execveat|fexecve|fork|vfork|posix_spawnp?|wordexp)\s*\()");
  int files = 0;
  for (const char* part : {"daemon", "probe"}) {
    for (const auto& entry :
         std::filesystem::directory_iterator(std::string(CORENOISE_SOURCE_DIR) + "/" + part)) {
      const auto ext = entry.path().extension();
      if (ext != ".cpp" && ext != ".h") continue;
      ++files;
      std::ifstream in(entry.path());
      int number = 0;
      for (std::string line; std::getline(in, line);) {
        ++number;
        EXPECT_FALSE(std::regex_search(line, call))
            << entry.path() << ":" << number << ": " << line;
      }
    }
  }
  EXPECT_GE(files, 20);
}

// ---- the exporter ------------------------------------------------------------

TEST(DaemonPrivileges, TheExporterServesOnlyGetAndHeadOfRootAndMetrics) {
  TempDir dir;
  DaemonProcess daemon(daemon_args(dir, {"--interval", "86400"}));
  const int port = daemon.port();
  ASSERT_GT(port, 0) << daemon.log();
  EXPECT_EQ(http_get(port, "/").first, 200);
  EXPECT_EQ(http_get(port, "/metrics").first, 200);
  const auto head = http_get(port, "/metrics", "HEAD");
  EXPECT_EQ(head.first, 200);
  EXPECT_EQ(head.second, "");
  // TRACE too (no cross-site tracing: nothing is echoed), and methods HTTP
  // does not know.
  for (const char* method :
       {"POST", "PUT", "DELETE", "OPTIONS", "PATCH", "CONNECT", "PROPFIND", "TRACE", "BREW"}) {
    const auto reply = http_get(port, "/metrics", method);
    EXPECT_EQ(reply.first, 405) << method << ": " << reply.second;
    EXPECT_EQ(reply.second.find("corenoise_"), std::string::npos) << method;
    EXPECT_EQ(http_get(port, "/", method).first, 405) << method;
  }
  // No path but / and /metrics is served, however it climbs.
  for (const char* path : {"/nope", "/metrics/extra", "/index.html", "/../../etc/passwd",
                           "/%2e%2e/%2e%2e/etc/passwd", "/metrics/../../etc/passwd/x"}) {
    EXPECT_EQ(http_get(port, path).first, 404) << path;
  }
  EXPECT_EQ(http_get(port, "/metrics").first, 200) << "still serving after the refusals";
}

}  // namespace
}  // namespace corenoise
