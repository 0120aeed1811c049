// A late rank's traced culprits (docs/job.md, "Named culprits"), end to end
// as root: a real corenoised with `trace = on`, a real job of two
// bound ranks, and on one rank's CPU the two things the trace must name: a
// noise injector (`corenoise inject`, another process) and a disk's IRQ,
// driven by direct reads of a file on the test's own disk. The disk's IRQ
// goes where the kernel sends it (its affinity is often managed, and a test
// should not move it); the noise goes to that CPU, and the rank there is
// the late one. Its report names the injector's task and the IRQ by
// number and device; the other rank's names nothing traced.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "control_socket.h"
#include "daemon_process.h"
#include "json_file.h"
#include "mpi_launchers.h"
#include "process.h"
#include "quick_daemon.h"

namespace corenoise {
namespace {

using nlohmann::json;
using testing::MpiLauncher;

// Each numbered IRQ's count per CPU, from /proc/interrupts.
std::map<int, std::vector<long long>> irq_counts() {
  std::ifstream in("/proc/interrupts");
  std::string line;
  std::getline(in, line);
  std::map<int, std::vector<long long>> counts;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    int irq = 0;
    char colon = 0;
    if (!(fields >> irq >> colon) || colon != ':') continue;
    long long n = 0;
    for (unsigned cpu = 0; cpu < 2 && fields >> n; ++cpu) counts[irq].push_back(n);
  }
  return counts;
}

struct DiskIrq {
  int irq = -1;
  unsigned cpu = 0;
};

// The IRQ that direct reads of `file` fire most, and the CPU it fires on.
DiskIrq disk_irq_of(const std::string& file) {
  const auto before = irq_counts();
  testing::run_command("dd if=" + file +
                       " of=/dev/null iflag=direct bs=4k count=20000 2>/dev/null");
  const auto after = irq_counts();
  DiskIrq found;
  long long most = 0;
  for (const auto& [irq, counts] : after) {
    const auto old = before.find(irq);
    if (old == before.end()) continue;
    for (unsigned cpu = 0; cpu < counts.size() && cpu < old->second.size(); ++cpu) {
      const long long fired = counts[cpu] - old->second[cpu];
      if (fired > most) found = {irq, cpu}, most = fired;
    }
  }
  return most >= 10000 ? found : DiskIrq{};
}

std::vector<const json*> traced_of(const json& rank) {
  std::vector<const json*> out;
  for (const json& c : rank["culprits"])
    if (c["kind"] == "traced") out.push_back(&c);
  return out;
}

void expect_traced_named(const MpiLauncher& mpi) {
  SCOPED_TRACE(mpi.family);
  testing::TempDir dir;
  // Real blocks on this test's disk (not tmpfs, which takes no direct reads).
  const std::string file =
      std::string(TRACED_TEST_DATA_DIR) + "/traced-test-" + std::to_string(::getpid()) + ".data";
  // Gone at the end, whichever assertion ends the test (64 MB each).
  struct RemovedAtEnd {
    std::string path;
    ~RemovedAtEnd() {
      testing::run_command("pkill -f " + path);
      std::filesystem::remove(path);
    }
  } removed{file};
  ASSERT_EQ(testing::run_command("head -c 67108864 /dev/urandom > " + file + " && sync").exit_code,
            0);
  const DiskIrq disk = disk_irq_of(file);
  ASSERT_GE(disk.irq, 0) << "direct reads of " << file << " fired no IRQ 10,000 times";
  const std::string cpu = std::to_string(disk.cpu);
  SCOPED_TRACE("the disk's IRQ " + std::to_string(disk.irq) + " fires on cpu " + cpu);

  testing::DaemonProcess daemon(testing::daemon_args(dir, {"--trace", "on"}));
  ASSERT_TRUE(daemon.wait_for_log("tracing running jobs' CPUs")) << daemon.log();
  const int port = daemon.port();
  ASSERT_GT(port, 0) << daemon.log();
  for (int i = 0; i < 200 && testing::rounds(port) < 1; ++i) usleep(100000);
  testing::ControlSocket control(testing::socket_path(dir));
  ASSERT_EQ(control.request(R"({"command":"pause","seconds":600})")["ok"], true);
  testing::BackgroundProcess noise({CORENOISE_BIN, "inject", "--cpus", cpu, "--seconds", "60",
                                    "--duty", "0.3", "--period", "0.01", "--normal"});
  ASSERT_EQ(noise.wait_line().rfind("ready", 0), 0u);
  // The reads' loop names the file: the test's end kills it by that name.
  testing::BackgroundProcess reads(
      {"/usr/bin/taskset", "-c", cpu, "/bin/sh", "-c",
       "while :; do dd if=" + file + " of=/dev/null iflag=direct bs=4k 2>/dev/null; done"});
  const std::string report_path = dir.path() + "/report.json";
  const auto job = testing::run_command(
      "timeout -k 5 120 " + mpi.bound_job(2) + testing::shell_word(CORENOISE_BIN) +
      " job --socket " + testing::socket_path(dir) + " --json " + report_path + " -- " +
      testing::shell_word(mpi.family == "openmpi" ? BSP_STEP_APP_OPENMPI_BIN : BSP_STEP_APP_BIN) +
      " --steps 400 --step-products 96");
  testing::run_command("pkill -f " + file);
  ASSERT_EQ(job.exit_code, 0) << job.err;
  const json report = testing::read_json(report_path);
  const json *late = nullptr, *clean = nullptr;
  for (const json& r : report["ranks"]) (r["cpus"] == cpu ? late : clean) = &r;
  ASSERT_TRUE(late && clean) << report["ranks"].dump(1);
  ASSERT_NE((*late)["cause"], "none") << "the rank on the noisy CPU was not late\n"
                                      << late->dump(1);
  bool injector = false, irq = false;
  for (const json* c : traced_of(*late)) {
    EXPECT_EQ((*c)["cpu"], disk.cpu) << c->dump();
    const std::string name = (*c)["name"];
    injector = injector || ((*c)["traced_kind"] == "task" && name.rfind("corenoise[", 0) == 0);
    irq = irq || ((*c)["traced_kind"] == "irq" &&
                  name.rfind("IRQ " + std::to_string(disk.irq) + " (", 0) == 0);
  }
  EXPECT_TRUE(injector) << late->dump(1);
  EXPECT_TRUE(irq) << late->dump(1);
  EXPECT_TRUE(traced_of(*clean).empty()) << clean->dump(1);
  EXPECT_NE(job.err.find("(traced)"), std::string::npos) << job.err;
  // The banner's line of the late rank, for the record.
  const std::size_t at = job.err.find("(traced)");
  if (at != std::string::npos)
    std::cout << job.err.substr(job.err.rfind('\n', at) + 1,
                                job.err.find('\n', at) - job.err.rfind('\n', at))
              << "\n";
}

TEST(JobTraced, TheDaemonsTraceNamesTheInjectorAndTheDisksIrqForTheLateRankOnly) {
  if (geteuid() != 0) GTEST_FAIL() << "tracing needs root";
  for (const MpiLauncher& mpi : testing::mpi_launchers()) expect_traced_named(mpi);
}

}  // namespace
}  // namespace corenoise
