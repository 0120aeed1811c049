// Bad input against a real corenoised: a broken configuration at start-up
// and on SIGHUP, bad command lines, a bad topology, truncated /proc and /sys
// files, and control-socket clients that send garbage, dawdle, crowd in or
// vanish. Each gets a clear error (or is dropped) and, where the daemon runs,
// it still answers `status`, serves /metrics and goes on with its rounds.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "control_socket.h"
#include "daemon_process.h"
#include "probe/topology.h"
#include "process.h"
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
using testing::run_command;
using testing::TempDir;
using testing::WrappedDaemon;

// Words for run_command's shell lines.
const std::string kCorenoise = testing::shell_word(CORENOISE_BIN);
const std::string kCorenoised = testing::shell_word(CORENOISED_BIN);

using testing::daemon_args;
using testing::rounds;
using testing::socket_path;

// The daemon answers `status` on a new connection, serves /metrics, and
// finishes at least one more round.
::testing::AssertionResult still_serving(const TempDir& dir, int port) {
  const double before = rounds(port);
  if (before < 0) return ::testing::AssertionFailure() << "/metrics did not answer";
  ControlSocket client(socket_path(dir));
  const json status = client.request(R"({"command":"status"})");
  if (!status.is_object() || status.value("ok", false) != true || !status.contains("version")) {
    return ::testing::AssertionFailure() << "status did not answer: " << status.dump();
  }
  const auto end = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < end) {
    if (rounds(port) > before) return ::testing::AssertionSuccess();
    std::this_thread::sleep_for(100ms);
  }
  return ::testing::AssertionFailure() << "no round after " << before << " within 60 s";
}

std::size_t open_fds(pid_t pid) {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    ++count;
  }
  return count;
}

// Waits until the daemon holds no more descriptors than `baseline`: every
// connection of a test is closed, none leaked.
::testing::AssertionResult fds_back_to(pid_t pid, std::size_t baseline) {
  const auto end = std::chrono::steady_clock::now() + 30s;
  std::size_t now = 0;
  while (std::chrono::steady_clock::now() < end) {
    now = open_fds(pid);
    if (now <= baseline) return ::testing::AssertionSuccess();
    std::this_thread::sleep_for(100ms);
  }
  return ::testing::AssertionFailure() << now << " descriptors open, " << baseline << " before";
}

// A started daemon with its first round done.
struct Running {
  TempDir dir;
  DaemonProcess daemon;
  int port = -1;
  explicit Running(std::vector<std::string> extra = {}) : daemon(daemon_args(dir, extra)) {
    port = daemon.port();
    const auto end = std::chrono::steady_clock::now() + 60s;
    while (port > 0 && rounds(port) < 1 && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(100ms);
  }
};

// ---- configuration ---------------------------------------------------------

struct StartupCase {
  std::string file;     // the config file's text
  std::string message;  // after "CONF:"
};

TEST(DaemonBadInput, BadConfigFilesStopStartupNamingFileAndLine) {
  const std::vector<StartupCase> cases = {
      {"interval = 60\nsamples = 3\n# again\nsamples = 4\n",
       ":4: option 'samples' is already set on line 2"},
      {"intervall = 60\n", ":1: unknown option 'intervall' (did you mean 'interval'?)"},
      {"listen = 0.0.0.0:70000\n",
       ":1: option 'listen': got '0.0.0.0:70000', expected HOST:PORT with a port from 0 to "
       "65535"},
      {"\ninterval = 0\n", ":2: option 'interval': got '0', expected seconds from 0.1"},
      {"busy-threshold = 1.5\n", ":1: option 'busy-threshold': got '1.5', expected a ratio"},
      {"samples = -3\n", ":1: option 'samples': got '-3', expected a sample count from 1"},
      {std::string("\x7f"
                   "ELF\x02\x01\x01\0\0\0\n",
                   11),
       ":1: expected 'NAME = VALUE', got '\\x7fELF"},
  };
  for (const auto& c : cases) {
    TempDir dir;
    const std::string conf = dir.path() + "/corenoised.conf";
    std::ofstream(conf) << c.file;
    DaemonProcess daemon({"--config", conf, "--socket", socket_path(dir)});
    const auto code = daemon.wait_exit(20s);
    ASSERT_TRUE(code.has_value()) << c.message;
    EXPECT_EQ(*code, 1) << daemon.log();
    // The log is read on a thread: it may lag the exit a little.
    EXPECT_TRUE(daemon.wait_for_log("corenoised: " + conf + c.message, 5s)) << daemon.log();
    EXPECT_FALSE(std::filesystem::exists(socket_path(dir))) << "a socket left behind";
  }
}

TEST(DaemonBadInput, ADirectoryAsTheConfigFileStopsStartup) {
  TempDir dir;
  DaemonProcess daemon({"--config", dir.path()});
  const auto code = daemon.wait_exit(20s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 1);
  EXPECT_TRUE(daemon.wait_for_log(dir.path() + ": is a directory, not a config file", 5s))
      << daemon.log();
}

// Root reads any file, so the daemon runs as nobody here.
TEST(DaemonBadInput, AnUnreadableConfigFileStopsStartup) {
  TempDir dir;
  const std::string conf = dir.path() + "/corenoised.conf";
  std::ofstream(conf) << "interval = 60\n";
  std::filesystem::permissions(
      conf, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  WrappedDaemon daemon(as_nobody(), {"--config", conf, "--socket", socket_path(dir)},
                       dir.path() + "/log");
  const auto code = daemon.wait_exit(20s);
  ASSERT_TRUE(code.has_value()) << daemon.log();
  EXPECT_EQ(*code, 1) << daemon.log();
  EXPECT_NE(daemon.log().find(conf + ": cannot open the config file: Permission denied"),
            std::string::npos)
      << daemon.log();
}

// Every kind of bad file on SIGHUP: rejected with a message naming it, the
// old configuration kept (rounds go on at the old interval), and a good
// file afterwards is taken.
TEST(DaemonBadInput, BadConfigOnSighupIsRejectedAndTheOldOneKept) {
  TempDir dir;
  const std::string conf = dir.path() + "/corenoised.conf";
  std::ofstream(conf) << "interval = 0.5\n";
  // The interval comes from the file.
  WrappedDaemon daemon(as_nobody(), daemon_args(dir, {"--config", conf, "--interval", ""}),
                       dir.path() + "/log");
  const int port = daemon.port();
  ASSERT_GT(port, 0) << daemon.log();

  const std::vector<std::pair<std::function<void()>, std::string>> cases = {
      {[&] { std::ofstream(conf) << "interval = 0.5\ninterval = 60\n"; },
       conf + ":2: option 'interval' is already set on line 1"},
      {[&] { std::ofstream(conf) << "interval = -5\n"; },
       conf + ":1: option 'interval': got '-5', expected seconds"},
      {[&] { std::ofstream(conf) << "busy-polcy = skip\n"; },
       conf + ":1: unknown option 'busy-polcy' (did you mean 'busy-policy'?)"},
      {[&] {
         std::ofstream(conf) << "interval = 60\n";
         std::filesystem::permissions(conf, std::filesystem::perms::owner_read);
       },
       conf + ": cannot open the config file: Permission denied"},
      {[&] {
         std::filesystem::remove(conf);
         std::filesystem::create_directory(conf);
       },
       conf + ": is a directory, not a config file"},
      {[&] { std::filesystem::remove(conf); },
       conf + ": cannot open the config file: No such file or directory"},
  };
  std::size_t rejected = 0;
  for (const auto& [spoil, message] : cases) {
    spoil();
    kill(daemon.pid(), SIGHUP);
    ++rejected;
    const auto end = std::chrono::steady_clock::now() + 20s;
    auto count = [&] {
      const std::string log = daemon.log();
      std::size_t n = 0;
      for (auto at = log.find("reload rejected"); at != std::string::npos;
           at = log.find("reload rejected", at + 1))
        ++n;
      return n;
    };
    while (count() < rejected && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(20ms);
    EXPECT_NE(daemon.log().find("the old configuration stays in force: " + message),
              std::string::npos)
        << daemon.log();
    EXPECT_FALSE(daemon.wait_exit(0ms).has_value()) << daemon.log();
    EXPECT_TRUE(still_serving(dir, port)) << message;  // still every 0.5 s, not 60
  }
  std::ofstream(conf) << "interval = 0.5\nsamples = 4\n";
  kill(daemon.pid(), SIGHUP);
  EXPECT_TRUE(daemon.wait_for_log("configuration reloaded")) << daemon.log();
}

// ---- command lines ---------------------------------------------------------

TEST(DaemonBadInput, BadCommandLinesExitOneNamingTheOption) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {kCorenoised + " --intervall 5",
       "command line: unknown option 'intervall' (did you mean 'interval'?)"},
      {kCorenoised + " --interval", "command line: option --interval needs a value"},
      {kCorenoised + " --interval soon",
       "command line: option --interval: got 'soon', expected seconds"},
      {kCorenoised + " --listen 127.0.0.1:http",
       "command line: option --listen: got '127.0.0.1:http', expected HOST:PORT with a port"},
      {kCorenoised + " --check-config --samples 0",
       "command line: option --samples: got '0', expected a sample count from 1"},
      {kCorenoised + " -x", "command line: unexpected argument '-x'"},
      {kCorenoise + " status --bogus", "corenoise status: unknown option '--bogus'"},
      {kCorenoise + " status --socket", "corenoise status: option --socket needs a value"},
      {kCorenoise + " status --timeout soon",
       "corenoise status: --timeout: expected a number > 0, got 'soon'"},
      {kCorenoise + " status extra", "corenoise status: unexpected argument 'extra'"},
      {kCorenoise + " pause --seconds x",
       "corenoise pause: --seconds: expected a number > 0, got 'x'"},
      {kCorenoise + " run --at", "corenoise run: option --at needs a value"},
      {kCorenoise + " run --mode sideways",
       "corenoise run: --mode: expected isolated, concurrent or both, got 'sideways'"},
      {kCorenoise + " collect --bogus", "corenoise collect: unknown option '--bogus'"},
      {kCorenoise + " sweep --bogus", "corenoise sweep: unknown option '--bogus'"},
      {kCorenoise + " frobnicate", "corenoise: unknown command 'frobnicate'"},
  };
  for (const auto& [command, message] : cases) {
    const auto r = run_command("timeout 20 " + command);
    EXPECT_EQ(r.exit_code, 1) << command << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << command << "\n" << r.err;
  }
}

// ---- topology and /proc, /sys ------------------------------------------------

TEST(DaemonBadInput, BadTopologyStopsStartupNamingIt) {
  TempDir dir;
  const std::string garbage = dir.path() + "/garbage.xml";
  std::ofstream(garbage) << "<?xml version=\"1.0\"?>\n<topology><object type=\"Banana\">\n";
  for (const auto& [topology, message] : std::vector<std::pair<std::string, std::string>>{
           {dir.path() + "/missing.xml",
            "cannot read topology file " + dir.path() + "/missing.xml: No such file"},
           {garbage, "not a valid hwloc XML topology file " + garbage},
           {dir.path(), "cannot read topology file " + dir.path()},
           {"synthetic:bogus:7", "synthetic:bogus:7"}}) {
    DaemonProcess daemon(daemon_args(dir, {"--topology", topology}));
    const auto code = daemon.wait_exit(20s);
    ASSERT_TRUE(code.has_value()) << topology;
    EXPECT_EQ(*code, 1) << daemon.log();
    EXPECT_TRUE(daemon.wait_for_log(message, 5s)) << daemon.log();
    EXPECT_TRUE(daemon.wait_for_log(
        "(expected 'native', 'synthetic:DESC' or a readable hwloc XML file)", 5s))
        << daemon.log();
  }
}

// Counter files cut short, empty or full of garbage (a kernel that changed,
// a container's fake /proc): the figures they carry go missing, nothing else.
TEST(DaemonBadInput, TruncatedAndGarbageProcAndSysFilesLeaveRoundsRunning) {
  TempDir dir;
  const std::string proc = dir.path() + "/proc", sys = dir.path() + "/sys";
  std::filesystem::create_directories(proc + "/thread-self");
  std::ifstream in(std::string(CORENOISE_FIXTURES) + "/proc/vm-2cpu/stat");
  const std::string stat(std::istreambuf_iterator<char>(in), {});
  std::ofstream(proc + "/stat") << stat.substr(0, 60);  // ends inside the cpu0 line
  std::ofstream(proc + "/interrupts") << "";
  const char softirqs[] = "           CPU0\0\xff\xfe TIMER: 12";
  std::ofstream(proc + "/softirqs") << std::string(softirqs, sizeof softirqs - 1);
  std::ofstream(proc + "/thread-self/schedstat") << "5747";
  for (unsigned cpu = 0; cpu < Topology::load("native").pus().size(); ++cpu) {
    const std::string base = sys + "/devices/system/cpu/cpu" + std::to_string(cpu);
    std::filesystem::create_directories(base + "/cpufreq");
    std::filesystem::create_directories(base + "/thermal_throttle");
    std::ofstream(base + "/cpufreq/scaling_cur_freq") << "";
    std::ofstream(base + "/cpufreq/cpuinfo_max_freq") << "35";  // cut short: no newline
    std::ofstream(base + "/thermal_throttle/core_throttle_count") << "\xff\xff\n";
  }
  Running r({"--proc-root", proc, "--sys-root", sys, "--busy-policy", "skip"});
  ASSERT_GT(r.port, 0) << r.daemon.log();
  EXPECT_TRUE(still_serving(r.dir, r.port)) << r.daemon.log();
  EXPECT_TRUE(still_serving(r.dir, r.port)) << r.daemon.log();
  const std::string text = http_get(r.port, "/metrics").second;
  EXPECT_TRUE(
      metric_value(text, "corenoise_slowdown_ratio{cpu=\"0\",probe=\"matmul\",mode=\"isolated\"}"))
      << text;
  EXPECT_FALSE(
      metric_value(text, "corenoise_thermal_throttle_events_total{cpu=\"0\",scope=\"core\"}"))
      << text;
  EXPECT_FALSE(metric_value(text, "corenoise_cpufreq_hertz{cpu=\"0\",type=\"current\"}")) << text;
}

// ---- the control socket ----------------------------------------------------

// Each bad line gets an error naming what is wrong, on the same connection,
// which then still serves.
TEST(DaemonBadInput, MalformedRequestsGetAnErrorAndTheConnectionStaysUsable) {
  Running r;
  ASSERT_GT(r.port, 0) << r.daemon.log();
  ControlSocket client(socket_path(r.dir));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"command":"status")", "malformed request: "},
      {"", "malformed request: "},
      {"status", "malformed request: "},
      {"[1,2]", "a request must be a JSON object with a \"command\", got an array"},
      {R"({"cmd":"status"})", "request has no \"command\" field"},
      {R"({"command":42})", "'command' must be a string, got 42"},
      {R"({"command":"reboot"})", "unknown command \"reboot\" (expected status, results"},
      {R"({"command":"status","verbose":true})", "status: unknown field 'verbose'"},
      {R"({"command":"pause","seconds":"x"})", "pause: 'seconds' must be a number > 0, got \"x\""},
      {R"({"command":"pause","seconds":-1})", "pause: 'seconds' must be a number > 0, got -1"},
      {R"({"command":"run","wait":"yes"})", "run: 'wait' must be true or false, got \"yes\""},
      {R"({"command":"run","mode":7})", "run: 'mode' must be one of"},
      {R"({"command":"publish"})", "publish: missing field 'published_unix_seconds'"},
      {R"({"command":"publish","published_unix_seconds":1,"reference":{},"slowdowns":[{"cpu":-1,"probe":"matmul","mode":"isolated","ratio":1}]})",
       "publish: 'slowdowns[0].cpu' must be an integer >= 0, got -1"},
      {std::string(40, '[') + std::string(40, ']'), "nested deeper than 32 levels"},
  };
  for (const auto& [line, message] : cases) {
    const json reply = client.request(line);
    ASSERT_TRUE(reply.is_object()) << line << ": no reply\n" << r.daemon.log();
    EXPECT_EQ(reply["ok"], false) << line;
    EXPECT_NE(reply.value("error", "").find(message), std::string::npos)
        << line << " -> " << reply.dump();
  }
  EXPECT_EQ(client.request(R"({"command":"status"})")["ok"], true);
  EXPECT_TRUE(still_serving(r.dir, r.port));
}

// The daemon's limit is 1 MiB (a publish for 512 PUs is ~180 KB).
TEST(DaemonBadInput, ALineOverTheLimitIsRefusedAndTheConnectionClosed) {
  Running r;
  ASSERT_GT(r.port, 0) << r.daemon.log();
  const std::size_t fds = open_fds(r.daemon.pid());
  ControlSocket client(socket_path(r.dir));
  // Sent on a thread: the daemon stops reading once it has refused.
  std::thread sender([&] { client.send(std::string((1 << 20) + 65536, 'x')); });
  const json reply = json::parse(client.read_line(), nullptr, false);
  sender.join();
  EXPECT_EQ(reply.value("error", ""),
            "request line longer than 1048576 bytes; closing the connection")
      << reply.dump();
  EXPECT_TRUE(client.closed_by_peer());
  client.close();
  EXPECT_TRUE(fds_back_to(r.daemon.pid(), fds));
  EXPECT_TRUE(still_serving(r.dir, r.port));
}

// Random bytes, NUL and invalid UTF-8 included: one error reply per line,
// each valid JSON (the strict parser below rejects invalid UTF-8).
TEST(DaemonBadInput, BinaryGarbageGetsOneErrorPerLine) {
  Running r;
  ASSERT_GT(r.port, 0) << r.daemon.log();
  std::mt19937 rng(7);
  ControlSocket client(socket_path(r.dir));
  constexpr int kLines = 200;
  std::string garbage;
  for (int i = 0; i < kLines; ++i) {
    const int length = static_cast<int>(rng() % 300);
    for (int j = 0; j < length; ++j) {
      char c = static_cast<char>(rng() % 256);
      if (c == '\n') c = '\0';
      garbage += c;
    }
    if (i % 3 == 0) garbage += "{\"command\":\"\xff\xfe\xc3\"}";  // invalid UTF-8 in a string
    garbage += '\n';
  }
  std::thread sender([&] { client.send(garbage); });
  for (int i = 0; i < kLines; ++i) {
    const std::string line = client.read_line();
    const json reply = json::parse(line, nullptr, false);
    ASSERT_TRUE(reply.is_object()) << "reply " << i << " is not JSON: " << line;
    EXPECT_EQ(reply["ok"], false) << line;
    EXPECT_FALSE(reply.value("error", "").empty()) << line;
  }
  sender.join();
  EXPECT_EQ(client.request(R"({"command":"status"})")["ok"], true);
  EXPECT_TRUE(still_serving(r.dir, r.port));
}

// A client trickling its request a byte per 100 ms (6 s for the line) is
// answered when it is done; meanwhile others are answered at once.
TEST(DaemonBadInput, ASlowClientDoesNotHoldUpOthers) {
  Running r;
  ASSERT_GT(r.port, 0) << r.daemon.log();
  std::string request = R"({"command":"status"})";
  request.insert(1, 59 - request.size(), ' ');
  request += '\n';
  std::atomic<bool> slow_done{false};
  json slow_reply;
  std::thread slow([&] {
    ControlSocket client(socket_path(r.dir));
    for (char c : request) {
      client.send(std::string(1, c));
      std::this_thread::sleep_for(100ms);
    }
    slow_reply = json::parse(client.read_line(), nullptr, false);
    slow_done = true;
  });
  std::this_thread::sleep_for(300ms);  // the slow one is connected and sending
  int answered_meanwhile = 0;
  for (int i = 0; i < 10; ++i) {
    ControlSocket other(socket_path(r.dir));
    const auto t0 = std::chrono::steady_clock::now();
    const json reply = other.request(R"({"command":"status"})");
    EXPECT_EQ(reply.value("ok", false), true) << reply.dump();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
    if (!slow_done) ++answered_meanwhile;
  }
  slow.join();
  EXPECT_EQ(answered_meanwhile, 10) << "the others waited for the slow client";
  EXPECT_EQ(slow_reply.value("ok", false), true) << slow_reply.dump();
  EXPECT_TRUE(still_serving(r.dir, r.port));
}

// 1,000 clients connected at once, each with a request: each is answered
// or told there are too many connections, none hangs, nothing leaks.
TEST(DaemonBadInput, AThousandConcurrentClientsAreAnsweredOrRefused) {
  constexpr int kClients = 1000;
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < 4096) {
    limit.rlim_cur = 4096;
    limit.rlim_max = std::max<rlim_t>(limit.rlim_max, 4096);  // root may raise it
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0) << "cannot raise RLIMIT_NOFILE";
  }
  Running r;
  ASSERT_GT(r.port, 0) << r.daemon.log();
  const std::size_t fds = open_fds(r.daemon.pid());
  std::vector<std::unique_ptr<ControlSocket>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<ControlSocket>(socket_path(r.dir)));
    ASSERT_GE(clients.back()->fd(), 0)
        << "connect " << i << ": " << std::strerror(clients.back()->connect_error());
  }
  for (auto& c : clients)
    c->send(R"({"command":"status"})"
            "\n");  // refused ones: EPIPE is fine
  int answered = 0, refused = 0;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (int i = 0; i < kClients; ++i) {
    const auto left = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   deadline - std::chrono::steady_clock::now()),
                               std::chrono::milliseconds(1));
    const std::string line = clients[static_cast<std::size_t>(i)]->read_line(left);
    const json reply = json::parse(line, nullptr, false);
    if (reply.is_object() && reply.value("ok", false) == true && reply.contains("version")) {
      ++answered;
    } else if (reply.is_object() &&
               reply.value("error", "").starts_with("too many connections to corenoised")) {
      ++refused;
    } else {
      ADD_FAILURE() << "client " << i << " got '" << line << "'"
                    << (clients[static_cast<std::size_t>(i)]->timed_out() ? " (timed out)" : "");
    }
  }
  EXPECT_EQ(answered + refused, kClients);
  EXPECT_GE(answered, 64) << "the first 64 (the cap) are served";
  EXPECT_GE(refused, 1);
  std::printf("%d answered, %d refused\n", answered, refused);
  clients.clear();
  EXPECT_TRUE(fds_back_to(r.daemon.pid(), fds));
  EXPECT_TRUE(still_serving(r.dir, r.port)) << r.daemon.log();
}

std::size_t rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  }
  return 0;
}

// A client that pipelines requests and never reads a reply: once its unread
// replies pass 1 MiB the daemon reads no more of its requests, and drops it
// after the 10 s idle timeout. (Before, the daemon grew by ~25 MB a second.)
// Paused, with no round running, so that a round's probe buffers (16 MiB of
// stream triad here) do not count as the client's.
TEST(DaemonBadInput, AClientThatNeverReadsCostsBoundedMemory) {
  Running r;
  ASSERT_GT(r.port, 0) << r.daemon.log();
  {
    ControlSocket control(socket_path(r.dir));
    ASSERT_EQ(control.request(R"({"command":"pause","seconds":120})").value("ok", false), true);
    const auto end = std::chrono::steady_clock::now() + 30s;
    while (control.request(R"({"command":"status"})").value("round_running", true) &&
           std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(50ms);
    }
  }
  const std::size_t fds = open_fds(r.daemon.pid());
  const std::size_t rss_before = rss_kib(r.daemon.pid());
  ControlSocket client(socket_path(r.dir));
  std::string batch;
  for (int i = 0; i < 1000; ++i)
    batch += R"({"command":"status"})"
             "\n";
  std::size_t sent = 0;
  const auto end = std::chrono::steady_clock::now() + 15s;
  while (std::chrono::steady_clock::now() < end) {
    const ssize_t n = ::send(client.fd(), batch.data(), batch.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && errno != EAGAIN) {
      break;  // dropped
    } else {
      std::this_thread::sleep_for(10ms);
    }
  }
  const std::size_t rss_after = rss_kib(r.daemon.pid());
  std::printf("sent %.1f MB; daemon RSS %zu -> %zu KiB\n", sent / 1e6, rss_before, rss_after);
  EXPECT_LT(sent, 8u << 20) << "the daemon kept reading a client that does not read";
  EXPECT_LT(rss_after, rss_before + 16 * 1024) << "KiB";
  EXPECT_TRUE(client.closed_by_peer(20s)) << "not dropped after the idle timeout";
  client.close();
  EXPECT_TRUE(fds_back_to(r.daemon.pid(), fds));
  ControlSocket(socket_path(r.dir)).request(R"({"command":"resume"})");
  EXPECT_TRUE(still_serving(r.dir, r.port));
}

// Clients that go away mid-request: half a line, a waited-for run, nothing
// at all. The daemon drops their work and keeps no descriptor of theirs.
TEST(DaemonBadInput, ClientsThatVanishMidRequestCostNothing) {
  Running r;
  ASSERT_GT(r.port, 0) << r.daemon.log();
  const std::size_t fds = open_fds(r.daemon.pid());
  for (int i = 0; i < 20; ++i) {
    ControlSocket half(socket_path(r.dir));
    half.send(R"({"command":"sta)");
    ControlSocket silent(socket_path(r.dir));
    ControlSocket garbled(socket_path(r.dir));
    garbled.send(std::string("\xff\0\x01", 3));
  }
  for (int i = 0; i < 3; ++i) {
    ControlSocket run(socket_path(r.dir));
    run.send(R"({"command":"run","wait":true})"
             "\n");
    std::this_thread::sleep_for(50ms);  // the round is under way
  }
  {
    ControlSocket publish(socket_path(r.dir));  // half a publish
    publish.send(R"({"command":"publish","published_unix_seconds":1,"reference":{},"slow)");
  }
  EXPECT_TRUE(fds_back_to(r.daemon.pid(), fds));
  EXPECT_TRUE(still_serving(r.dir, r.port)) << r.daemon.log();
  ControlSocket waiter(socket_path(r.dir));
  const json run = waiter.request(R"({"command":"run","wait":true})");
  EXPECT_EQ(run.value("ok", false), true) << run.dump();
}

}  // namespace
}  // namespace corenoise
