// `corenoise probe --trace`: the kernel's tracer names what took a probed
// CPU's time. Ground truth is noise this test makes itself: a SCHED_FIFO
// thread of a known process on CPU 1.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "probe/topology.h"
#include "process.h"

namespace corenoise {
namespace {

using nlohmann::json;
using testing::BackgroundProcess;
using testing::run_command;

const std::string kCorenoise = CORENOISE_BIN;
const std::string kInstances = "/sys/kernel/tracing/instances";

std::size_t native_pus() { return Topology::load("native").pus().size(); }

// The probe's JSON of one CPU's detour trace.
const json& trace_of(const json& doc, unsigned cpu) {
  for (const json& c : doc.at("cpus"))
    if (c.at("cpu") == cpu) return c.at("detour").at("trace");
  throw std::runtime_error("no CPU " + std::to_string(cpu) + " in the report");
}

std::vector<std::string> corenoise_instances() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(kInstances, ec)) {
    const std::string name = entry.path().filename();
    if (name.rfind("corenoise-", 0) == 0) names.push_back(name);
  }
  return names;
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

TEST_F(ProbeTrace, ItsInstanceIsGoneAfterTheRunAndAStaleOneIsRemoved) {
  // What a crashed run leaves: an instance whose process is gone.
  const std::string stale = kInstances + "/corenoise-999999999";
  ASSERT_EQ(run_command("mkdir -p /sys/kernel/tracing && (mountpoint -q /sys/kernel/tracing || "
                        "mount -t tracefs nodev /sys/kernel/tracing) && mkdir " +
                        stale)
                .exit_code,
            0);
  const auto r = run_command(kCorenoise + " probe --cpus 0 --trace on --quiet --confirm no");
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  EXPECT_TRUE(corenoise_instances().empty()) << "left: " << corenoise_instances().front();
  // The top-level buffer, anyone else's, was never switched on by us.
  const auto top = run_command("cat /sys/kernel/tracing/events/sched/sched_switch/enable");
  EXPECT_EQ(top.out, "0\n");
}

TEST_F(ProbeTrace, OnWithoutPrivilegesFailsSayingWhyAndAutoCarriesOn) {
  const std::string as_nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  const auto on = run_command(as_nobody + kCorenoise + " probe --cpus 0 --trace on --quiet");
  EXPECT_EQ(on.exit_code, 1) << on.err;
  EXPECT_NE(on.err.find("--trace on: tracing needs root"), std::string::npos) << on.err;
  EXPECT_TRUE(on.out.empty()) << on.out;
  const auto automatic =
      run_command(as_nobody + kCorenoise + " probe --cpus 0 --trace auto --json - --confirm no");
  ASSERT_TRUE(automatic.exit_code == 0 || automatic.exit_code == 2) << automatic.err;
  const json doc = json::parse(automatic.out);
  EXPECT_EQ(doc["trace"], "unavailable: tracing needs root (tracefs)");
  EXPECT_FALSE(doc["cpus"][0]["detour"].contains("trace"));
}

}  // namespace
}  // namespace corenoise
