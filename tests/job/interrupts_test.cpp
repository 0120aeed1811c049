// The interrupt lines a late rank's report names without privilege
// (collector/job/rank/interrupt_lines.h), end to end on real jobs of both
// families: /proc is a tree of the test's own (every entry the real one's
// but /proc/interrupts and /proc/softirqs, which the test writes), and
// while the job runs a disk's IRQ and its BLOCK softirq fire 60,000 times
// on rank 1's CPU. Rank 1, doing twice the work, is late; its report names
// both lines, with their counts; rank 0's names neither. A real IRQ load
// on this VM is in docs/job.md ("Interrupt lines"): a disk's IRQ cannot be
// steered from a test without root, nor its cost kept off the other CPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "json_file.h"
#include "mpi_launchers.h"
#include "process.h"

namespace corenoise {
namespace {

using nlohmann::json;
using testing::MpiLauncher;

const MpiLauncher kOpenMpi{"openmpi", MPIRUN_OPENMPI_BIN, "Open MPI v", false};
const MpiLauncher kMpich{"mpich", MPIEXEC_MPICH_BIN, "MPICH Version:", true};

// A /proc whose every entry links to the real one's, but the two tables.
struct ProcTree {
  explicit ProcTree(const std::string& name)
      : path("/tmp/corenoise-interrupts-test-" + std::to_string(::getpid()) + "-" + name) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      const std::string leaf = entry.path().filename().string();
      if (leaf == "interrupts" || leaf == "softirqs") continue;
      std::filesystem::create_symlink(entry.path(), path + "/" + leaf);
    }
    write(0);
  }
  ~ProcTree() { std::filesystem::remove_all(path); }

  // The tables with `extra` disk IRQs and BLOCK softirqs on CPU 1, written
  // whole and renamed into place (a reader sees one or the other).
  void write(unsigned extra) const {
    const std::string disk = std::to_string(1000 + extra);
    write_file("interrupts",
               "           CPU0       CPU1       \n"
               " 36:          5 " +
                   disk +
                   "  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n"
                   "LOC:     100000     100000   Local timer interrupts\n");
    write_file("softirqs",
               "                    CPU0       CPU1       \n"
               "       BLOCK:          0 " +
                   disk +
                   "\n"
                   "       TIMER:     500000     500000\n");
  }

  std::string path;

 private:
  void write_file(const std::string& leaf, const std::string& text) const {
    std::ofstream(path + "/" + leaf + ".new") << text;
    std::filesystem::rename(path + "/" + leaf + ".new", path + "/" + leaf);
  }
};

const json* rank_in(const json& report, int rank) {
  for (const json& r : report["ranks"]) {
    if (r["rank"] == rank) return &r;
  }
  return nullptr;
}

void expect_lines_named(const MpiLauncher& mpi) {
  ProcTree proc(mpi.family);
  const std::string app =
      testing::shell_word(mpi.family == "openmpi" ? BSP_STEP_APP_OPENMPI_BIN : BSP_STEP_APP_BIN);
  const std::string live = proc.path + "-live.json", report_path = proc.path + "-report.json";
  testing::CommandResult job;
  std::thread runner([&] {
    job = testing::run_command(
        "CORENOISE_JOB_PROC_ROOT=" + proc.path + " timeout -k 5 120 " + mpi.bound_job(2) +
        testing::shell_word(CORENOISE_BIN) + " job --no-daemon --live-interval 1 --live " + live +
        " --json " + report_path + " -- " + app +
        " --steps 600 --step-products 96 --late-rank 1 --late-steps 1:600 --late-factor 2");
  });
  // Once the ranks have read the tables at MPI_Init (an epoch came).
  for (int i = 0; i < 600 && !std::filesystem::exists(live); ++i) usleep(50000);
  proc.write(60000);
  runner.join();
  std::filesystem::remove(live);
  SCOPED_TRACE(mpi.family + "\n" + job.err);
  ASSERT_EQ(job.exit_code, 0);
  const json report = testing::read_json(report_path);
  std::filesystem::remove(report_path);
  const json* late = rank_in(report, 1);
  const json* clean = rank_in(report, 0);
  ASSERT_TRUE(late != nullptr && clean != nullptr) << report.dump(1);
  ASSERT_EQ((*late)["cause"], "more-work") << late->dump(1);
  json named = json::array();
  for (const json& c : (*late)["culprits"]) {
    if (c["kind"] == "irq" || c["kind"] == "softirq") named.push_back(c);
  }
  const json expected = json::array({{{"kind", "irq"},
                                      {"line", "36"},
                                      {"name", "virtio1-req.0"},
                                      {"cpu", 1},
                                      {"count", 60000.0},
                                      {"more_than_other_cpus", 60000.0}},
                                     {{"kind", "softirq"},
                                      {"line", "BLOCK"},
                                      {"name", ""},
                                      {"cpu", 1},
                                      {"count", 60000.0},
                                      {"more_than_other_cpus", 60000.0}}});
  // The two lines tie: either may come first.
  EXPECT_TRUE(named == expected || named == json::array({expected[1], expected[0]}))
      << named.dump(1);
  for (const json& c : (*clean)["culprits"]) EXPECT_NE(c["kind"], "irq") << clean->dump(1);
  EXPECT_NE(job.err.find("IRQ 36 (virtio1-req.0) on cpu 1: 60000 times, 60000 more than the "
                         "node's other CPUs"),
            std::string::npos);
}

TEST(JobInterrupts, TheLinesThatFiredOnALateRanksCpuAreNamedWithoutPrivilege) {
  for (const MpiLauncher* mpi : {&kOpenMpi, &kMpich}) expect_lines_named(*mpi);
}

}  // namespace
}  // namespace corenoise
