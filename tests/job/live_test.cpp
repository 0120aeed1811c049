// `corenoise job`'s live reduction (docs/job.md, "Live"), on real jobs of
// both MPI families: the --live file while the job runs, and the report a
// job killed with its launcher leaves (collector/job/rank/live_reduction.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "control_socket.h"
#include "host_draw.h"
#include "json_file.h"
#include "mpi_launchers.h"
#include "process.h"
#include "quick_daemon.h"

namespace corenoise {
namespace {

using nlohmann::json;
using testing::MpiLauncher;
using testing::read_json;
using testing::run_command;

const std::string kCorenoise = testing::shell_word(CORENOISE_BIN);
const MpiLauncher kOpenMpi{"openmpi", MPIRUN_OPENMPI_BIN, "Open MPI v", false};
const MpiLauncher kMpich{"mpich", MPIEXEC_MPICH_BIN, "MPICH Version:", true};

std::string bsp_of(const MpiLauncher& mpi) {
  return testing::shell_word(mpi.family == "openmpi" ? BSP_STEP_APP_OPENMPI_BIN : BSP_STEP_APP_BIN);
}
std::string halo_of(const MpiLauncher& mpi) {
  return testing::shell_word(mpi.family == "openmpi" ? HALO_APP_OPENMPI_BIN : HALO_APP_MPICH_BIN);
}

// A folder of the test's own, removed with it.
struct Folder {
  explicit Folder(const std::string& name)
      : path("/tmp/corenoise-live-test-" + std::to_string(::getpid()) + "-" + name) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~Folder() { std::filesystem::remove_all(path); }
  std::string path;
};

const json* rank_in(const json& report, int rank) {
  for (const json& r : report["ranks"]) {
    if (r["rank"] == rank) return &r;
  }
  return nullptr;
}

// The job's live file as it was every 0.2 s while the job ran, in order,
// the final report last.
std::vector<json> snapshots_in(const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("snap-", 0) == 0) names.push_back(entry.path().string());
  }
  std::sort(names.begin(), names.end());
  std::vector<json> out;
  for (const std::string& name : names) out.push_back(read_json(name));
  return out;
}

// bsp_step_app with rank 1 three times as slow from step 100 of 400 to the
// end (~5 s), live every second: while the job runs, an epoch within two of
// the slowdown names rank 1 first, for more work, chronic; the last live
// file is the final report.
void expect_live_naming(const MpiLauncher& mpi) {
  Folder folder("naming-" + mpi.family);
  const std::string live = folder.path + "/live.json";
  const std::string final_report = folder.path + "/final.json";
  struct Run {
    testing::CommandResult result;
    json report;
    std::vector<json> snapshots;
  };
  const Run run = testing::draw_on_a_fair_host(
      "live",
      [&] {
        for (const auto& e : std::filesystem::directory_iterator(folder.path))
          std::filesystem::remove_all(e.path());
        const std::string job =
            "timeout -k 5 120 " + mpi.bound_job(2) + kCorenoise +
            " job --no-daemon --live-interval 1 --live " + live + " --json " + final_report +
            " -- " + bsp_of(mpi) +
            " --steps 400 --step-products 96 --late-rank 1 --late-steps 100:400 "
            "--late-factor 3";
        // Numbered so that they sort in time order.
        const std::string script = "cd " + folder.path + " || exit 1; (" + job +
                                   ") > out.txt 2> err.txt & job=$!; n=1000; "
                                   "while kill -0 $job 2>/dev/null; do "
                                   "n=$((n+1)); cp live.json snap-$n.json 2>/dev/null; "
                                   "sleep 0.2; done; wait $job; rc=$?; "
                                   "cp live.json snap-9999.json; cat err.txt >&2; exit $rc";
        Run r;
        r.result = run_command("bash -c " + testing::shell_word(script));
        EXPECT_EQ(r.result.exit_code, 0) << r.result.err;
        r.report = read_json(final_report);
        r.snapshots = snapshots_in(folder.path);
        return r;
      },
      [](const Run& r) {
        // Rank 1 did 1 + 2 × 300 / 400 of rank 0's work.
        return testing::unfair_host_in_job(r.report,
                                           [](int rank) { return rank == 1 ? 2.5 : 1.0; });
      });
  SCOPED_TRACE(mpi.family + "\n" + run.result.err);
  ASSERT_GE(run.snapshots.size(), 3u);
  // The last is the final report, as the --json file has it.
  EXPECT_TRUE(run.snapshots.back()["live"].is_null());
  EXPECT_EQ(run.snapshots.back(), run.report);
  // Within two epochs of the slowdown (two collectives a step after the
  // start barrier and the 5 warm-up steps: step 100 is the 212th), an epoch
  // named rank 1 first, for more work, chronic since the slowdown (give or
  // take the jitter of an epoch's first late steps).
  constexpr long kSwitch = 212;
  long last_epoch = 0;
  std::vector<const json*> after_switch;
  for (const json& s : run.snapshots) {
    if (s["live"].is_null()) continue;
    const long epoch = s["live"]["epoch"].get<long>();
    EXPECT_GE(epoch, last_epoch) << "epochs out of order";
    if (epoch == last_epoch) continue;
    last_epoch = epoch;
    if (s["steps"].get<long>() > kSwitch + 10 && after_switch.size() < 2)
      after_switch.push_back(&s);
  }
  EXPECT_GE(last_epoch, 3);  // at ~1, ~2, ~3 s and on
  ASSERT_FALSE(after_switch.empty()) << "no live epoch after the slowdown";
  std::string seen;
  const auto names_rank1 = [&seen](const json* epoch) {
    const json* rank1 = rank_in(*epoch, 1);
    seen += "epoch " + (*epoch)["live"]["epoch"].dump() + " at step " + (*epoch)["steps"].dump() +
            ": worst " + (*epoch)["worst_ranks"].dump() +
            (rank1 != nullptr ? ", rank 1 " + (*rank1)["cause"].dump() + " " +
                                    (*rank1)["lateness_pattern"].dump()
                              : std::string()) +
            "\n";
    if (rank1 == nullptr || (*epoch)["worst_ranks"].empty() || (*epoch)["worst_ranks"][0] != 1)
      return false;
    const json& pattern = (*rank1)["lateness_pattern"];
    return (*rank1)["cause"] == "more-work" && (*rank1)["saving_seconds"].get<double>() > 0 &&
           pattern.is_object() && pattern["kind"] == "chronic" &&
           std::abs(pattern["onset_step"].get<double>() - kSwitch) <= 40;
  };
  EXPECT_TRUE(std::any_of(after_switch.begin(), after_switch.end(), names_rank1)) << seen;
  // Each epoch's own window (since the epoch before) names it too, in the
  // same two epochs.
  const auto window_names_rank1 = [](const json* epoch) {
    const json& late = (*epoch)["live"]["window"]["late_ranks"];
    return !late.empty() && late[0]["rank"] == 1 && late[0]["cause"] == "more-work" &&
           late[0]["wait_caused_seconds"].get<double>() > 0;
  };
  EXPECT_TRUE(std::any_of(after_switch.begin(), after_switch.end(), window_names_rank1)) << seen;
  // The windows follow one another: each starts where the epoch before ended.
  const json* previous = nullptr;
  for (const json& s : run.snapshots) {
    if (s["live"].is_null()) continue;
    const json& window = s["live"]["window"];
    EXPECT_LT(window["start_seconds"].get<double>(), window["end_seconds"].get<double>());
    if (previous != nullptr && (*previous)["live"]["epoch"].get<long>() + 1 == s["live"]["epoch"])
      EXPECT_EQ(window["start_seconds"], (*previous)["live"]["window"]["end_seconds"]);
    previous = &s;
  }
  EXPECT_LT(after_switch.front()->at("steps").get<long>(), run.report["steps"].get<long>())
      << "an epoch came before the end";
}

TEST(JobLive, TheLiveFileNamesTheLateRankAsChronicWhileTheJobRuns) {
  for (const MpiLauncher* mpi : {&kOpenMpi, &kMpich}) expect_live_naming(*mpi);
}

// The issue's own case: a ring of exchanges with a collective every 10
// steps, rank 1 doing 1.5 times the work, the launcher killed with SIGKILL
// mid-run (then every rank). `corenoise job --report` on the spill folder
// gives the last live epoch's report: the same figures as the live file
// had, the exchange charges and the phases included, and says the job
// ended without MPI_Finalize.
void expect_killed_keeps_last_epoch(const MpiLauncher& mpi) {
  Folder folder("killed-" + mpi.family);
  const std::string job = mpi.bound_job(2) + kCorenoise +
                          " job --no-daemon --quiet --live-interval 1 --live live.json -- " +
                          halo_of(mpi) +
                          " --steps 1000000 --step-ms 4 --exchange blocking --dims 1 "
                          "--allreduce-every 10 --larger 1:1.5";
  // setsid: the launcher leads a session of its own, which holds its ranks.
  const std::string script =
      "cd " + folder.path + " || exit 1; setsid " + job +
      " > out.txt 2> err.txt & launcher=$!; sleep 1; session=$(ps -o sid= -p $launcher); "
      "sleep 6; kill -KILL $launcher; "
      "for i in $(seq 100); do pgrep -s $session > /dev/null || break; sleep 0.1; done; "
      "pkill -KILL -s $session; sleep 0.5; cp live.json at-kill.json; cat err.txt >&2";
  const auto killed = run_command("bash -c " + testing::shell_word(script));
  SCOPED_TRACE(mpi.family + "\n" + killed.err);
  const json at_kill = read_json(folder.path + "/at-kill.json");
  ASSERT_TRUE(at_kill["live"].is_object()) << "the job was to be killed before its end";
  const std::string rebuilt_path = folder.path + "/rebuilt.json";
  const auto rebuilt_run = run_command(kCorenoise + " job --report " + folder.path +
                                       "/live.json.ranks --json " + rebuilt_path);
  ASSERT_EQ(rebuilt_run.exit_code, 0) << rebuilt_run.err;
  json rebuilt = read_json(rebuilt_path);
  EXPECT_NE(rebuilt_run.err.find("without MPI_Finalize"), std::string::npos) << rebuilt_run.err;
  ASSERT_TRUE(rebuilt["live"].is_object()) << rebuilt.dump(1);
  EXPECT_TRUE(rebuilt["live"]["ended_without_finalize"].get<bool>());
  EXPECT_TRUE(rebuilt["live"]["rebuilt_from_spill"].get<bool>());
  EXPECT_EQ(rebuilt["live"]["ranks_finalized"], 0);
  // The live file is written just after the epoch is kept: a kill between
  // the two would leave them an epoch apart (a window of milliseconds).
  ASSERT_EQ(rebuilt["live"]["epoch"], at_kill["live"]["epoch"]);
  EXPECT_GT(rebuilt["exchange_wait_caused_seconds"].get<double>(), 0.0) << rebuilt.dump(1);
  EXPECT_FALSE(rebuilt["worst_ranks"].empty());
  rebuilt["live"]["ended_without_finalize"] = false;
  rebuilt["live"]["rebuilt_from_spill"] = false;
  rebuilt["live"]["ranks_finalized"] = nullptr;
  EXPECT_EQ(rebuilt, at_kill) << "the rebuilt report differs from the live file's";
}

TEST(JobLive, AJobKilledWithItsLauncherKeepsTheLastEpochsReport) {
  for (const MpiLauncher* mpi : {&kOpenMpi, &kMpich}) expect_killed_keeps_last_epoch(*mpi);
}

// The node's corenoised while a live job runs: its series name the rank
// that made the others wait, with its cause, within two epochs of the
// slowdown; when the job ends at MPI_Finalize, both ranks' live figures
// are counted as ended with it, and the running job's ranks go to 0.
TEST(JobLive, TheNodesDaemonShowsTheRunningJobsWorstRankAndItsEnd) {
  testing::TempDir dir;
  testing::DaemonProcess daemon(testing::daemon_args(dir));
  const int port = daemon.port();
  ASSERT_GT(port, 0) << daemon.log();
  for (int i = 0; i < 200 && testing::rounds(port) < 1; ++i) usleep(100000);
  testing::ControlSocket control(testing::socket_path(dir));
  ASSERT_EQ(control.request(R"({"command":"pause","seconds":600})")["ok"], true);
  Folder folder("daemon");
  testing::CommandResult job;
  std::thread runner([&] {
    job = run_command("timeout -k 5 120 " + kMpich.bound_job(2) + kCorenoise +
                      " job --live-interval 1 --quiet --socket " + testing::socket_path(dir) +
                      " --json " + folder.path + "/final.json -- " + bsp_of(kMpich) +
                      " --steps 300 --step-products 96 --late-rank 1 --late-steps 50:300 "
                      "--late-factor 3");
  });
  const std::string series =
      "corenoise_job_live_wait_caused_seconds{rank=\"1\",cause=\"more-work\"}";
  const std::string window_series =
      "corenoise_job_live_window_wait_caused_seconds{rank=\"1\",cause=\"more-work\"}";
  std::string seen, window_seen, metrics;
  for (int i = 0; i < 600 && (seen.empty() || window_seen.empty()); ++i, usleep(50000)) {
    metrics = testing::http_get(port, "/metrics").second;
    if (seen.empty() && metrics.find(series) != std::string::npos) seen = metrics;
    if (window_seen.empty() && metrics.find(window_series) != std::string::npos)
      window_seen = metrics;
  }
  runner.join();
  ASSERT_EQ(job.exit_code, 0) << job.err;
  ASSERT_FALSE(seen.empty()) << "no live series named rank 1 while the job ran\n" << metrics;
  EXPECT_GT(testing::metric_value(seen, series).value_or(0), 0.0) << seen;
  // Who makes the others wait now: its newest window's waiting caused.
  ASSERT_FALSE(window_seen.empty()) << "no window series named rank 1\n" << metrics;
  EXPECT_GT(testing::metric_value(window_seen, window_series).value_or(0), 0.0) << window_seen;
  EXPECT_EQ(testing::metric_value(seen, "corenoise_job_live_ranks"), 2.0) << seen;
  EXPECT_EQ(testing::metric_value(seen, "corenoise_job_live_interval_seconds"), 1.0) << seen;
  EXPECT_TRUE(testing::metric_value(seen, "corenoise_job_live_last_epoch_timestamp_seconds"))
      << seen;
  // Rank 0, not late, is listed without a cause, below rank 1.
  const auto rank0 = testing::metric_value(
      seen, "corenoise_job_live_wait_caused_seconds{rank=\"0\",cause=\"none\"}");
  if (rank0) {
    EXPECT_LT(*rank0, *testing::metric_value(seen, series)) << seen;
  }
  for (int i = 0; i < 50; ++i, usleep(100000)) {
    metrics = testing::http_get(port, "/metrics").second;
    if (testing::metric_value(metrics, "corenoise_job_live_ended_total{how=\"finalize\"}")
            .value_or(0) >= 2)
      break;
  }
  EXPECT_EQ(testing::metric_value(metrics, "corenoise_job_live_ended_total{how=\"finalize\"}"), 2.0)
      << metrics;
  EXPECT_EQ(testing::metric_value(metrics, "corenoise_job_live_ranks"), 0.0) << metrics;
  EXPECT_EQ(metrics.find("corenoise_job_live_wait_caused_seconds{"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("corenoise_job_live_window_wait_caused_seconds{"), std::string::npos)
      << metrics;
  EXPECT_EQ(
      testing::metric_value(metrics, "corenoise_job_reports_refused_total{reason=\"invalid\"}"),
      0.0)
      << metrics;
}

}  // namespace
}  // namespace corenoise
