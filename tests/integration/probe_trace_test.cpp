// `corenoise probe --trace` (and the sweep's, the daemon's): the kernel's
// tracer names what took a probed CPU's time. Ground truth is noise this
// test makes itself: a SCHED_FIFO thread of a known process on CPU 1.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "daemon_process.h"
#include "probe/topology.h"
#include "process.h"
#include "quick_daemon.h"
#include "reachable_binary.h"

namespace corenoise {
namespace {

using nlohmann::json;
using testing::BackgroundProcess;
using testing::run_command;

const std::string kCorenoise = testing::shell_word(CORENOISE_BIN);  // for run_command
const std::string kInstances = "/sys/kernel/tracing/instances";

std::size_t native_pus() { return Topology::load("native").pus().size(); }

// The probe's JSON of one CPU's detour trace.
const json& trace_of(const json& doc, unsigned cpu) {
  for (const json& c : doc.at("cpus"))
    if (c.at("cpu") == cpu) return c.at("detour").at("trace");
  throw std::runtime_error("no CPU " + std::to_string(cpu) + " in the report");
}

// The instances of process `pid` (0: of any process), by name.
std::vector<std::string> corenoise_instances(pid_t pid = 0) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(kInstances, ec)) {
    const std::string name = entry.path().filename();
    const std::string prefix = pid > 0 ? "corenoise-" + std::to_string(pid) + "-" : "corenoise-";
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  return names;
}

// Whether process `pid` has a handler for `signal_number` (/proc's SigCgt).
bool catches(pid_t pid, int signal_number) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigCgt:", 0) != 0) continue;
    const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
    return (mask >> (signal_number - 1)) & 1;
  }
  return false;
}

class ProbeTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_FAIL() << "tracing needs root";
    if (native_pus() < 2) GTEST_FAIL() << "this test needs two CPUs";
  }
};

TEST_F(ProbeTrace, AFifoInjectorIsNamedByCommandAndThreadWithTheShareInjected) {
  BackgroundProcess injector(
      {NOISE_INJECTOR_BIN, "--cpu", "1", "--busy-ms", "1", "--period-ms", "10", "--seconds", "60"});
  const std::string ready = injector.wait_line();
  ASSERT_EQ(ready.rfind("ready", 0), 0u) << ready;
  const auto r = run_command(kCorenoise + " probe --cpus 0,1 --trace on --confirm no --json -");
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["trace"], "on");
  const json& cpu1 = trace_of(doc, 1);
  const json* named = nullptr;
  for (const json& c : cpu1["culprits"])
    if (c["kind"] == "task" && c.value("name", "") == "noise_injector") named = &c;
  ASSERT_NE(named, nullptr) << cpu1.dump(1);
  // Its thread, of the injector's process, at the priority it asked for.
  const std::string task = "/proc/" + std::to_string(injector.pid()) + "/task/" +
                           std::to_string((*named)["id"].get<int>());
  EXPECT_TRUE(std::filesystem::exists(task)) << task << " " << named->dump();
  EXPECT_EQ((*named)["scheduling"].get<std::string>().rfind("FIFO ", 0), 0u) << named->dump();
  // 1 ms in every 10: its share of the windows, within 2 points.
  double window = 0;
  for (const json& c : doc["cpus"])
    if (c["cpu"] == 1) window = c["detour"]["window_seconds"];
  const double share = (*named)["seconds"].get<double>() / window;
  EXPECT_NEAR(share, 0.10, 0.02) << named->dump();
  // ... and nowhere else.
  for (const json& c : trace_of(doc, 0)["culprits"])
    EXPECT_NE(c.value("name", ""), "noise_injector") << c.dump();
  // The cause, where CPU 1 came out noisy, names it.
  for (const json& c : doc["cpus"]) {
    if (c["cpu"] == 1 && c["state"] == "noisy") {
      EXPECT_NE(c["cause"].get<std::string>().find("preempted by noise_injector["),
                std::string::npos)
          << c["cause"];
    }
  }
}

// The culprit of `kind` and `name` among a CPU's, or null.
const json* culprit_named(const json& trace, const std::string& kind, const std::string& name) {
  for (const json& c : trace.at("culprits"))
    if (c.at("kind") == kind && c.value("name", "") == name) return &c;
  return nullptr;
}

// A flood of pings into a network namespace whose receive queue is steered
// (RPS) to CPU 1: its packets are processed in NET_RX softirqs on CPU 1,
// while the sender runs on CPU 0.
TEST_F(ProbeTrace, PacketsSteeredToCpu1AreNamedAsItsNetRxSoftirq) {
  const std::string setup =
      "ip netns del cn-trace 2>/dev/null; ip link del cntr0 2>/dev/null; "
      "ip netns add cn-trace && ip link add cntr0 type veth peer name cntr1 && "
      "ip link set cntr1 netns cn-trace && ip addr add 10.79.0.1/24 dev cntr0 && "
      "ip link set cntr0 up && ip netns exec cn-trace sh -c '"
      "ip addr add 10.79.0.2/24 dev cntr1 && ip link set cntr1 up && ip link set lo up && "
      "echo 2 > /sys/class/net/cntr1/queues/rx-0/rps_cpus'";
  const auto made = run_command(setup);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  struct Teardown {
    ~Teardown() { run_command("ip netns del cn-trace; ip link del cntr0 2>/dev/null"); }
  } teardown;
  BackgroundProcess flood({"/usr/bin/taskset", "-c", "0", "/usr/bin/ping", "-f", "-q", "-s", "1200",
                           "-w", "30", "10.79.0.2"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto r = run_command(kCorenoise + " probe --cpus 1 --trace on --confirm no --json -");
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  const json trace = trace_of(json::parse(r.out), 1);
  const json* net_rx = culprit_named(trace, "softirq", "NET_RX");
  ASSERT_NE(net_rx, nullptr) << trace.dump(1);
  EXPECT_EQ((*net_rx)["id"], 3);
  EXPECT_GT((*net_rx)["detours"].get<int>(), 0);
}

// Work the kernel queues on every CPU: each write to vm.stat_refresh runs
// refresh_vm_stats in a kworker of each CPU, CPU 1 among them.
TEST_F(ProbeTrace, AKernelWorkItemOnCpu1IsNamedByItsFunction) {
  BackgroundProcess refresh({"/usr/bin/taskset", "-c", "0", "/bin/sh", "-c",
                             "end=$(($(date +%s) + 30)); while [ $(date +%s) -lt $end ]; do "
                             "echo 1 > /proc/sys/vm/stat_refresh; done"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto r = run_command(kCorenoise + " probe --cpus 1 --trace on --confirm no --json -");
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  const json trace = trace_of(json::parse(r.out), 1);
  const json* work = culprit_named(trace, "work", "refresh_vm_stats");
  ASSERT_NE(work, nullptr) << trace.dump(1);
  EXPECT_GT((*work)["seconds"].get<double>(), 0);
}

TEST_F(ProbeTrace, EveryDetourSecondIsChargedAndTheRestSaidToBeBelowTheKernel) {
  const auto r = run_command(kCorenoise + " probe --cpus 0 --trace on --confirm no --json -");
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  const json doc = json::parse(r.out);
  const json& cpu0 = doc["cpus"][0];
  const json& trace = cpu0["detour"]["trace"];
  double charged = 0;
  for (const json& c : trace["culprits"]) charged += c["seconds"].get<double>();
  EXPECT_NEAR(charged, trace["matched_seconds"].get<double>(), 1e-9);
  EXPECT_NEAR(trace["matched_seconds"].get<double>(), cpu0["detour"]["total_seconds"].get<double>(),
              1e-6)
      << "every detour of a clean core was kept for the matcher";
  // What a guest's kernel never sees (the hypervisor's share here) is
  // reported under its own name, not spread over the tasks.
  bool below = false;
  for (const json& c : trace["culprits"]) below = below || c["kind"] == "below_kernel";
  EXPECT_TRUE(below || cpu0["detour"]["count"] == 0) << trace.dump(1);
}

// corenoised with `trace = on`: the injector named in its status and its
// metrics, and the instance gone when it stops.
TEST_F(ProbeTrace, TheDaemonNamesTheInjectorInItsStatusAndMetrics) {
  BackgroundProcess injector(
      {NOISE_INJECTOR_BIN, "--cpu", "1", "--busy-ms", "1", "--period-ms", "10", "--seconds", "60"});
  ASSERT_EQ(injector.wait_line().rfind("ready", 0), 0u);
  testing::TempDir dir;
  std::string text, status;
  pid_t daemon_pid = 0;
  {
    // The probe's own window (7 of 25 ms): the quick rounds' 3 of 10 ms
    // hold three of the injector's periods, its share then 0.07-0.13.
    testing::DaemonProcess daemon(testing::daemon_args(
        dir, {"--trace", "on", "--cpus", "0,1", "--samples", "7", "--detour-window", "0.025"}));
    const int port = daemon.port();
    ASSERT_GT(port, 0) << daemon.log();
    daemon_pid = daemon.pid();
    const std::string series =
        "corenoise_culprit_ratio{cpu=\"1\",kind=\"task\",name=\"noise_injector\"}";
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < end) {
      text = testing::http_get(port, "/metrics").second;
      if (testing::metric_value(text, series)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    const auto share = testing::metric_value(text, series);
    ASSERT_TRUE(share) << text << daemon.log();
    EXPECT_NEAR(*share, 0.10, 0.03) << text;
    EXPECT_FALSE(testing::metric_value(
        text, "corenoise_culprit_ratio{cpu=\"0\",kind=\"task\",name=\"noise_injector\"}"));
    status = run_command(kCorenoise + " status --socket " + testing::socket_path(dir)).out;
  }
  EXPECT_NE(status.find("named culprits (last round"), std::string::npos) << status;
  EXPECT_NE(status.find("noise_injector["), std::string::npos) << status;
  EXPECT_TRUE(corenoise_instances(daemon_pid).empty())
      << "left: " << corenoise_instances(daemon_pid).front();
}

TEST_F(ProbeTrace, ItsInstanceIsGoneAfterTheRunAndAStaleOneIsRemoved) {
  // What a crashed run leaves: an instance whose process is gone.
  const std::string stale = kInstances + "/corenoise-999999999";
  ASSERT_EQ(run_command("mkdir -p /sys/kernel/tracing && (mountpoint -q /sys/kernel/tracing || "
                        "mount -t tracefs nodev /sys/kernel/tracing) && mkdir " +
                        stale)
                .exit_code,
            0);
  // The top-level buffer is anyone else's: ours never changes it.
  const std::string top =
      "cat /sys/kernel/tracing/tracing_on "
      "/sys/kernel/tracing/events/sched/sched_switch/enable";
  const std::string top_before = run_command(top).out;
  const auto r = run_command(kCorenoise + " probe --cpus 0 --trace on --quiet --confirm no");
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  EXPECT_FALSE(std::filesystem::exists(stale)) << "the stale instance was left";
  EXPECT_EQ(run_command(top).out, top_before);
}

// Ctrl-C or a batch system's SIGTERM mid-round: the instance goes with the
// process, which still dies of the signal.
TEST_F(ProbeTrace, ASignalMidRoundRemovesTheInstance) {
  for (int signal_number : {SIGINT, SIGTERM}) {
    BackgroundProcess probe({CORENOISE_BIN, "probe", "--cpus", "0", "--trace", "on", "--samples",
                             "400", "--confirm", "no", "--quiet"});
    // Once its instance is made and the signals are caught (SigCgt).
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((corenoise_instances(probe.pid()).empty() || !catches(probe.pid(), signal_number)) &&
           std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_FALSE(corenoise_instances(probe.pid()).empty()) << "no instance appeared";
    ASSERT_TRUE(catches(probe.pid(), signal_number));
    const pid_t pid = probe.pid();
    probe.signal(signal_number);
    EXPECT_EQ(probe.wait_exit(5), 128 + signal_number);
    EXPECT_TRUE(corenoise_instances(pid).empty()) << "left: " << corenoise_instances(pid).front();
  }
}

// `sweep --rank-per-core`: each rank traces its own core through its node
// leader's instance (trace_source.h, attach_trace_source), in both kinds of
// round -- an isolated round switches recording per window, rank by rank; a
// concurrent one is recorded whole -- and the culprits travel to the leader
// with the rank's samples. 30 % injected, so that CPU 1 is noisy and its
// cause printed in every draw on this VM (detection of 10 % is
// ProbeCli.InjectedNoiseOnCpu1IsFoundOnCpu1Only's). No instance is left.
TEST_F(ProbeTrace, ARankPerCoreSweepNamesTheInjectorOnItsRanksCore) {
  // Outlives both sweeps' timeouts.
  BackgroundProcess injector({NOISE_INJECTOR_BIN, "--cpu", "1", "--busy-ms", "3", "--period-ms",
                              "10", "--seconds", "300"});
  const std::string ready = injector.wait_line();
  ASSERT_EQ(ready.rfind("ready", 0), 0u) << ready;
  const std::vector<std::string> before = corenoise_instances();
  const std::string path = "/tmp/corenoise-trace-test-" + std::to_string(getpid()) + ".json";
  struct RemovedAtTheEnd {
    std::string path;
    ~RemovedAtTheEnd() { std::remove(path.c_str()); }
  } report_file{path};
  for (const char* mode : {"isolated", "concurrent"}) {
    SCOPED_TRACE(mode);
    const auto r = run_command(
        "timeout -k 10 120 " + testing::shell_word(MPIEXEC_MPICH_BIN) + " -n 2 -bind-to core " +
        kCorenoise + " sweep --rank-per-core --trace on --full --mode " + mode + " --json " + path);
    ASSERT_EQ(r.exit_code, 2) << r.out << r.err;
    std::ifstream in(path);
    const json report = json::parse(in);
    EXPECT_EQ(report["nodes"][0]["trace"], "on") << report["nodes"].dump();
    for (const json& cell : report["cells"][0]["cores"]) {
      const std::string cause = cell["cause"];
      if (cell["cpu"] == 1) {
        EXPECT_EQ(cell["state"], "noisy") << cell.dump();
        // The injector's thread, named by the rank that probed CPU 1.
        EXPECT_NE(cause.find("preempted by noise_injector["), std::string::npos) << cause;
        EXPECT_NE(cause.find("(FIFO "), std::string::npos) << cause;
      } else {
        EXPECT_EQ(cause.find("noise_injector"), std::string::npos) << cell.dump();
      }
    }
    // None of the sweep's is left (others may come and go beside it: a
    // stale one that its leader removed, another corenoise's).
    for (const std::string& name : corenoise_instances())
      EXPECT_NE(std::find(before.begin(), before.end(), name), before.end())
          << "left by the sweep: " << name;
  }
}

TEST_F(ProbeTrace, OnWithoutPrivilegesFailsSayingWhyAndAutoCarriesOn) {
  const std::string as_nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups " +
                                testing::shell_word(testing::reachable_by_everyone(CORENOISE_BIN));
  const auto on = run_command(as_nobody + " probe --cpus 0 --trace on --quiet");
  EXPECT_EQ(on.exit_code, 1) << on.err;
  EXPECT_NE(on.err.find("--trace on: tracing needs root"), std::string::npos) << on.err;
  EXPECT_TRUE(on.out.empty()) << on.out;
  const auto automatic =
      run_command(as_nobody + " probe --cpus 0 --trace auto --json - --confirm no");
  ASSERT_TRUE(automatic.exit_code == 0 || automatic.exit_code == 2) << automatic.err;
  const json doc = json::parse(automatic.out);
  EXPECT_EQ(doc["trace"], "unavailable: tracing needs root (tracefs)");
  EXPECT_FALSE(doc["cpus"][0]["detour"].contains("trace"));
}

}  // namespace
}  // namespace corenoise
