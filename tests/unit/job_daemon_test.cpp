// collector/job/rank/job_daemon.h: the daemon's verdicts from its `results`
// document, and the `job` request as the daemon's own parser reads it.
#include "collector/job/rank/job_daemon.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <array>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "daemon/control/control_protocol.h"
#include "daemon/control/control_replies.h"
#include "tests/tools/sample_causes.h"

namespace corenoise {
namespace {

using nlohmann::json;

Cause noisy_cause() { return sample_cause(CoreState::noisy); }

// The daemon's `results` reply as the daemon writes it (a ResultsReply):
// two CPUs, two rounds (isolated at 90 s, concurrent at 100 s, 2 s each);
// CPU 1 noisy in the latest.
json results_reply() {
  NodeReport r;
  r.hostname = "cn101";
  for (unsigned cpu : {0u, 1u}) {
    ProcessingUnit pu;
    pu.cpu = pu.core = cpu;
    pu.kind = "default";
    r.pus.push_back(pu);
  }
  for (const auto& [mode, started] : {std::pair{Mode::isolated, 90.0}, {Mode::concurrent, 100.0}}) {
    ModeReport m;
    m.mode = mode;
    m.started_unix_seconds = started;
    m.duration_seconds = 2;
    for (const ProcessingUnit& pu : r.pus) {
      CoreFigures c;
      c.cpu = pu.cpu;
      c.kind = pu.kind;
      c.state = CoreState::ok;
      c.figure[ProbeKind::matmul] = 1e-3;
      if (pu.cpu == 1 && mode == Mode::concurrent) {
        c.state = CoreState::noisy;
        c.cause = noisy_cause();
      }
      m.verdicts.cores.push_back(c);
    }
    r.modes.push_back(std::move(m));
  }
  return ResultsReply{r};
}

TEST(VerdictsFromResultsTest, PerCpuVerdictsWithTheirCauseAndAge) {
  const auto verdicts = verdicts_from_results(results_reply(), 110);
  ASSERT_TRUE(verdicts);
  ASSERT_EQ(verdicts->size(), 2u);
  EXPECT_EQ(verdicts->at(0), (DaemonVerdict{"ok", Cause{}, 8.0}));
  // The cause as data, whole: what the daemon judged, not a sentence.
  EXPECT_EQ(verdicts->at(1), (DaemonVerdict{"noisy", noisy_cause(), 8.0}));
  // A clock behind the daemon's: an age of 0, never negative.
  EXPECT_DOUBLE_EQ(*verdicts_from_results(results_reply(), 50)->at(1).age_seconds, 0.0);
  // And through the rank's record to rank 0 (the wire) unchanged.
  EXPECT_EQ(verdicts_from_json(verdicts_to_json(*verdicts)), *verdicts);
}

// Before its first round the daemon has measured nothing: each CPU is
// skipped, not probed, or where it cannot be, for the topology's reason.
TEST(VerdictsFromResultsTest, BeforeItsFirstRoundNoCpuIsProbedAndThereIsNoAge) {
  NodeReport r;
  for (unsigned cpu : {0u, 1u}) {
    ProcessingUnit pu;
    pu.cpu = cpu;
    r.pus.push_back(pu);
  }
  r.pus[1].skip_reason = "disallowed by cgroup/cpuset";
  const auto verdicts = verdicts_from_results(ResultsReply{r}, 110);
  ASSERT_TRUE(verdicts);
  EXPECT_EQ(verdicts->at(0),
            (DaemonVerdict{"skipped", skipped_cause(SkipReason::not_probed), std::nullopt}));
  EXPECT_EQ(verdicts->at(1).cause, skipped_cause(SkipReason::other, "disallowed by cgroup/cpuset"));
}

// A reply that is not a results document gives no verdicts rather than
// guessed ones.
TEST(VerdictsFromResultsTest, MalformedDocumentsGiveNone) {
  EXPECT_FALSE(verdicts_from_results(json(), 1));
  EXPECT_FALSE(verdicts_from_results(json::array(), 1));
  EXPECT_FALSE(verdicts_from_results(json{{"cpus", "all"}}, 1));
  EXPECT_FALSE(verdicts_from_results(json{{"cpus", json::array()}, {"rounds", json::array()}}, 1));
}

// One odd cause costs that cause, not the node's verdicts.
TEST(VerdictsFromResultsTest, AnOddCauseCostsOnlyItself) {
  json results = results_reply();
  results["cpus"][1]["concurrent"]["why"]["state"] = "sleepy";
  auto verdicts = verdicts_from_results(results, 110);
  ASSERT_TRUE(verdicts);
  EXPECT_EQ(verdicts->at(1), (DaemonVerdict{"noisy", Cause{}, 8.0}));
  results = results_reply();
  results["cpus"][1]["concurrent"]["why"].erase("lost");  // noisy, without its lost time
  verdicts = verdicts_from_results(results, 110);
  ASSERT_TRUE(verdicts);
  EXPECT_EQ(verdicts->at(1).cause, Cause{});
  EXPECT_EQ(verdicts->at(0).state, "ok");
}

std::vector<JobCpuLoss> node_loss() {
  JobCpuLoss cpu2{2, {}};
  cpu2.lost_seconds[index_of(JobCause::own_threads)] = 1.5;
  cpu2.lost_seconds[index_of(JobCause::interrupts)] = 0.25;
  JobCpuLoss cpu3{3, {}};
  cpu3.lost_seconds[index_of(JobCause::other_processes)] = 50;  // more than the job lasted
  return {cpu2, cpu3};
}

TEST(JobRequestTest, TheDaemonsParserAcceptsIt) {
  const json request = job_request("slurm-4242", 1700000100.5, 20, 4, node_loss());
  // Its shape (docs/control.md, `job`).
  EXPECT_EQ(request["command"], "job");
  EXPECT_EQ(request["job_id"], "slurm-4242");
  EXPECT_EQ(request["ranks"], 4);
  ASSERT_EQ(request["cpus"].size(), 2u);
  // Causes with nothing lost are left out; none exceeds the job's wall
  // time (50 is cut to 20), and all of them together are scaled down to it
  // (1.5 + 0.25 + 20 = 21.75 s: each times 20 / 21.75, to the microsecond
  // below), as one rank's loss split over its CPUs is no more than that.
  EXPECT_EQ(
      request["cpus"][0],
      json({{"cpu", 2}, {"lost_seconds", {{"own-threads", 1.37931}, {"interrupts", 0.229885}}}}));
  EXPECT_EQ(request["cpus"][1],
            json({{"cpu", 3}, {"lost_seconds", {{"other-processes", 18.390804}}}}));

  // And as the daemon reads it, from the line the library sends
  // (send_job_line: ControlClient writes encode_line(request)).
  std::string line = encode_line(request);
  ASSERT_EQ(line.back(), '\n');
  line.pop_back();
  const ControlRequest parsed = parse_request(line);
  ASSERT_TRUE(std::holds_alternative<JobRequest>(parsed));
  const JobRequest& job = std::get<JobRequest>(parsed);
  EXPECT_EQ(job.job_id, "slurm-4242");
  EXPECT_DOUBLE_EQ(job.ended_unix_seconds, 1700000100.5);
  EXPECT_DOUBLE_EQ(job.elapsed_seconds, 20);
  EXPECT_EQ(job.ranks, 4u);
  ASSERT_EQ(job.cpus.size(), 2u);
  EXPECT_EQ(job.cpus[0].cpu, 2u);
  EXPECT_DOUBLE_EQ(job.cpus[0].lost_seconds[index_of(JobCause::own_threads)], 1.37931);
  EXPECT_DOUBLE_EQ(job.cpus[0].lost_seconds[index_of(JobCause::interrupts)], 0.229885);
  EXPECT_DOUBLE_EQ(job.cpus[0].lost_seconds[index_of(JobCause::steal)], 0);
  EXPECT_EQ(job.cpus[1].cpu, 3u);
  EXPECT_DOUBLE_EQ(job.cpus[1].lost_seconds[index_of(JobCause::other_processes)], 18.390804);
  // request_from_json reads the same document, as it is and as parsed
  // from that line (the protocol's own encoding: to_json(JobRequest)).
  EXPECT_TRUE(std::holds_alternative<JobRequest>(request_from_json(json::parse(line))));
  EXPECT_TRUE(std::holds_alternative<JobRequest>(request_from_json(request)));
  EXPECT_EQ(command_name(parsed), "job");
  EXPECT_FALSE(needs_privilege(parsed));  // the job's own user sends it
}

TEST(JobRequestTest, ANodeWithoutLossIsStillAValidReport) {
  const json request = job_request("pid-77", 1700000000, 0.5, 1, {});
  EXPECT_EQ(request["cpus"], json::array());
  const JobRequest job = std::get<JobRequest>(parse_request(request.dump()));
  EXPECT_TRUE(job.cpus.empty());
  EXPECT_EQ(job.ranks, 1u);
}

// A live line as the library sends it: every figure brought within the
// daemon's bounds (a window no longer than the job, no more waiting caused
// than the others can have waited, rounded down to the microsecond), so
// that the daemon's parser takes it; a window's cause only with a window.
TEST(JobRequestTest, ALiveLineIsBroughtWithinTheDaemonsBounds) {
  JobLiveRequest live;
  live.job_id = "slurm-7";
  live.epoch = 0;  // to 1
  live.elapsed_seconds = 60;
  live.interval_seconds = 0.25;  // to the least cadence
  live.ranks = 3;
  live.rank = 7;                   // to the last rank
  live.wait_caused_seconds = 500;  // to 60 x 2
  live.window_seconds = 90;        // to the job's 60
  live.window_wait_caused_seconds = 0.1234567891;
  live.window_cause = JobCause::steal;
  const JobLiveRequest sent =
      std::get<JobLiveRequest>(parse_request(job_live_request(live).dump()));
  EXPECT_EQ(sent.epoch, 1);
  EXPECT_EQ(sent.interval_seconds, kMinLiveIntervalSeconds);
  EXPECT_EQ(sent.rank, 2u);
  EXPECT_EQ(sent.wait_caused_seconds, 120);
  EXPECT_EQ(sent.window_seconds, 60);
  EXPECT_EQ(sent.window_wait_caused_seconds, 0.123456);
  EXPECT_EQ(sent.window_cause, JobCause::steal);
  // No window (the epoch's was not judged): no window's cause either.
  live.window_seconds = 0;
  const json line = job_live_request(live);
  EXPECT_FALSE(line.contains("window_seconds"));
  EXPECT_FALSE(line.contains("window_cause"));
  EXPECT_NO_THROW(parse_request(line.dump()));
}

// The job's id from the launcher, else rank 0's pid; unset and restored
// around the test.
class JobIdTest : public ::testing::Test {
 protected:
  static constexpr const char* kNames[] = {
      "SLURM_JOB_ID", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid",
      "PMI_JOBID",    "PMI_RANK",       "PMI_FD"};
  void SetUp() override {
    for (const char* name : kNames) {
      const char* value = ::getenv(name);
      saved_.push_back(value == nullptr ? std::nullopt : std::optional<std::string>(value));
      ::unsetenv(name);
    }
  }
  void TearDown() override {
    for (std::size_t i = 0; i < saved_.size(); ++i) {
      if (saved_[i])
        ::setenv(kNames[i], saved_[i]->c_str(), 1);
      else
        ::unsetenv(kNames[i]);
    }
  }
  std::vector<std::optional<std::string>> saved_;
};

TEST_F(JobIdTest, LauncherIdFirstElseThePid) {
  EXPECT_EQ(job_id(4321), "pid-4321");
  // MPICH's Hydra: the node's proxy, the ranks' parent.
  ::setenv("PMI_RANK", "1", 1);
  ::setenv("PMI_FD", "8", 1);
  EXPECT_EQ(job_id(4321), "hydra-" + std::to_string(::getppid()));
  ::setenv("PMI_JOBID", "pmi-7", 1);
  EXPECT_EQ(job_id(4321), "pmi-7");
  ::setenv("SLURM_JOB_ID", "123456", 1);
  EXPECT_EQ(job_id(4321), "123456");  // Slurm's before the others
  ::setenv("SLURM_JOB_ID", "", 1);
  EXPECT_EQ(job_id(4321), "pmi-7");  // an empty one is none
  ::setenv("SLURM_JOB_ID", std::string(300, 'x').c_str(), 1);
  EXPECT_EQ(job_id(4321), std::string(kMaxJobIdChars, 'x'));  // what the daemon accepts
}

}  // namespace
}  // namespace corenoise
