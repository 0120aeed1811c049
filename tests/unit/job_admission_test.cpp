// Which job-start and job lines the daemon takes (daemon/job_admission.h),
// one test for each forgery docs/control.md's threat model names. The
// kernel's answers come from FakeFacts, so that a test can state what a
// test process could not arrange (a pid recycled, a user changed); the
// daemon's integration tests (DaemonJobAdmission.*) ask the real kernel.
#include "daemon/job_admission.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace corenoise {
namespace {

constexpr uid_t kUser = 1000;
constexpr uid_t kOther = 1001;
constexpr double kStart = 1795962000;  // Unix seconds of the first line

// One process as the kernel would describe it. `alive` is shared with the
// watches taken of it: a process that exits makes them all say so.
struct FakeProcess {
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);
  std::optional<uid_t> euid;
  std::vector<unsigned> affinity;
  // The Slurm cgroup it runs in (a /proc/PID/cgroup path) and that job.
  std::string slurm_cgroup;
  SchedulerJob slurm_job;
};

class FakeWatch final : public ProcessWatch {
 public:
  explicit FakeWatch(std::shared_ptr<bool> alive) : alive_(std::move(alive)) {}
  bool running() const override { return *alive_; }

 private:
  std::shared_ptr<bool> alive_;
};

// The processes by pid; a peer's pidfd is its pid (any value >= 0), -1 none.
class FakeFacts final : public ProcessFacts {
 public:
  bool running(const PeerCredentials& peer) const override {
    const FakeProcess* p = find(peer);
    return p != nullptr && *p->alive;
  }
  std::optional<uid_t> effective_uid(const PeerCredentials& peer) const override {
    const FakeProcess* p = find(peer);
    return p != nullptr ? p->euid : std::nullopt;
  }
  std::optional<std::vector<unsigned>> affinity(const PeerCredentials& peer) const override {
    const FakeProcess* p = find(peer);
    if (p == nullptr || !*p->alive) return std::nullopt;
    return p->affinity;
  }
  std::unique_ptr<ProcessWatch> watch(const PeerCredentials& peer) const override {
    const FakeProcess* p = find(peer);
    if (p == nullptr) return nullptr;
    return std::make_unique<FakeWatch>(p->alive);
  }
  std::optional<SchedulerJob> slurm_job(const PeerCredentials& peer,
                                        const SlurmCgroup& cgroup) const override {
    const FakeProcess* p = find(peer);
    if (p == nullptr || !*p->alive || p->slurm_cgroup != cgroup.path) return std::nullopt;
    return p->slurm_job;
  }

  std::map<pid_t, FakeProcess> processes;

 private:
  const FakeProcess* find(const PeerCredentials& peer) const {
    if (peer.pidfd < 0) return nullptr;
    const auto it = processes.find(peer.pid);
    return it == processes.end() ? nullptr : &it->second;
  }
};

JobRequest report(const std::string& id, const std::vector<unsigned>& cpus, double elapsed = 10,
                  double ended = kStart + 10) {
  JobRequest r;
  r.job_id = id;
  r.ended_unix_seconds = ended;
  r.elapsed_seconds = elapsed;
  r.ranks = 2;
  for (unsigned cpu : cpus) r.cpus.push_back({cpu, {0.5, 0, 0, 0, 0, 0, 0}});
  return r;
}

class JobAdmissionTest : public ::testing::Test {
 protected:
  // A process `pid` of `uid` that may run on `cpus`: a new one, replacing
  // whatever had that pid.
  void process(pid_t pid, uid_t uid, std::vector<unsigned> cpus) {
    FakeProcess p;
    p.euid = uid;
    p.affinity = std::move(cpus);
    facts_.processes[pid] = p;
  }
  void exits(pid_t pid) { *facts_.processes.at(pid).alive = false; }

  static PeerCredentials peer(pid_t pid, uid_t uid) { return {pid, uid, uid, pid}; }
  // The daemon's clocks `seconds` after the first line.
  static AdmissionTime at(double seconds) { return {kStart + seconds, 1000 + seconds}; }

  JobAdmissionVerdict start(pid_t pid, uid_t uid, const std::string& id, double t = 0) {
    return admission_.start(peer(pid, uid), JobStartRequest{id, {}}, at(t));
  }
  JobAdmissionVerdict admit(pid_t pid, uid_t uid, const JobRequest& r, double t = 10) {
    return admission_.admit(peer(pid, uid), r, at(t));
  }

  FakeFacts facts_;
  JobAdmission admission_{facts_};
};

#define EXPECT_ACCEPTED(verdict)              \
  do {                                        \
    const JobAdmissionVerdict v_ = (verdict); \
    EXPECT_FALSE(v_.refusal) << v_.error;     \
    EXPECT_EQ(v_.error, "");                  \
  } while (0)

#define EXPECT_REFUSED(verdict, reason, fragment)                                                  \
  do {                                                                                             \
    const JobAdmissionVerdict v_ = (verdict);                                                      \
    EXPECT_EQ(v_.refusal, reason) << v_.error;                                                     \
    EXPECT_EQ(                                                                                     \
        v_.error.rfind(std::string("job: refused (") + std::string(to_string(reason)) + "): ", 0), \
        0u)                                                                                        \
        << v_.error;                                                                               \
    EXPECT_NE(v_.error.find(fragment), std::string::npos) << v_.error;                             \
  } while (0)

TEST_F(JobAdmissionTest, ARankReportingItsOwnCpusOnceIsAccepted) {
  process(4242, kUser, {0, 1, 2, 3});
  EXPECT_ACCEPTED(start(4242, kUser, "slurm-1"));
  EXPECT_EQ(admission_.registered(), 1u);
  EXPECT_ACCEPTED(admit(4242, kUser, report("slurm-1", {0, 3})));
  // Reported, it stays registered (a replay must be named one) until it exits.
  EXPECT_EQ(admission_.registered(), 1u);
  exits(4242);
  EXPECT_EQ(admission_.forget_exited(), 1u);
  EXPECT_EQ(admission_.registered(), 0u);
}

JobLiveRequest live_line(const std::string& id, unsigned rank, double caused,
                         std::optional<JobCause> cause, double elapsed = 5) {
  JobLiveRequest r;
  r.job_id = id;
  r.elapsed_seconds = elapsed;
  r.interval_seconds = 30;
  r.ranks = 4;
  r.rank = rank;
  r.wait_caused_seconds = caused;
  r.cause = cause;
  return r;
}

// A registered rank's live lines set the running job's view, its latest
// replacing its last; the view holds the worst few, most waiting first;
// a rank that reports at MPI_Finalize leaves it as ended with finalize, one
// that exits without as ended without.
TEST_F(JobAdmissionTest, LiveLinesOfRegisteredRanksMakeTheRunningJobsView) {
  for (pid_t pid : {101, 102, 103}) {
    process(pid, kUser, {static_cast<unsigned>(pid - 101)});
    EXPECT_ACCEPTED(start(pid, kUser, "j"));
  }
  EXPECT_ACCEPTED(
      admission_.admit_live(peer(101, kUser), live_line("j", 0, 0.1, std::nullopt), at(5)));
  EXPECT_ACCEPTED(
      admission_.admit_live(peer(102, kUser), live_line("j", 1, 2.0, JobCause::more_work), at(5)));
  EXPECT_ACCEPTED(admission_.admit_live(peer(102, kUser),
                                        live_line("j", 1, 3.0, JobCause::more_work, 8), at(8)));
  JobLiveView view = admission_.live_view(1);
  EXPECT_EQ(view.ranks, 2u);
  ASSERT_EQ(view.worst.size(), 1u);
  EXPECT_EQ(view.worst[0].rank, 1u);
  EXPECT_EQ(view.worst[0].wait_caused_seconds, 3.0);
  EXPECT_EQ(view.worst[0].cause, JobCause::more_work);
  EXPECT_EQ(view.last_unix_seconds, at(8).unix_seconds);
  EXPECT_EQ(view.interval_seconds, 30.0);
  EXPECT_TRUE(view.window_worst.empty());  // no line had a window
  // Windows: rank 0 caused less so far, but more in its newest window.
  JobLiveRequest windowed = live_line("j", 0, 0.5, std::nullopt, 8);
  windowed.window_seconds = 3;
  windowed.window_wait_caused_seconds = 0.4;
  windowed.window_cause = JobCause::interrupts;
  EXPECT_ACCEPTED(admission_.admit_live(peer(101, kUser), windowed, at(8)));
  windowed = live_line("j", 1, 3.0, JobCause::more_work, 8);
  windowed.window_seconds = 3;
  windowed.window_wait_caused_seconds = 0.1;
  EXPECT_ACCEPTED(admission_.admit_live(peer(102, kUser), windowed, at(8)));
  view = admission_.live_view(1);
  ASSERT_EQ(view.worst.size(), 1u);
  EXPECT_EQ(view.worst[0].rank, 1u);
  ASSERT_EQ(view.window_worst.size(), 1u);
  EXPECT_EQ(view.window_worst[0].rank, 0u);
  EXPECT_EQ(view.window_worst[0].wait_caused_seconds, 0.4);
  EXPECT_EQ(view.window_worst[0].cause, JobCause::interrupts);
  EXPECT_EQ(admission_.live_view(5).window_worst.size(), 2u);
  // Not registered, another job, more job than it lived: refused.
  process(104, kUser, {3});
  EXPECT_REFUSED(admission_.admit_live(peer(104, kUser), live_line("j", 3, 0, std::nullopt), at(9)),
                 JobRefusal::unregistered, "no job-start");
  EXPECT_REFUSED(admission_.admit_live(peer(103, kUser), live_line("k", 2, 0, std::nullopt), at(9)),
                 JobRefusal::wrong_job, "'k'");
  EXPECT_REFUSED(
      admission_.admit_live(peer(103, kUser), live_line("j", 2, 0, std::nullopt, 60), at(9)),
      JobRefusal::too_long, "60.000 s of job");
  // Rank 0 reports at MPI_Finalize; rank 1 is killed.
  EXPECT_ACCEPTED(admit(101, kUser, report("j", {0}, 9), 10));
  EXPECT_REFUSED(
      admission_.admit_live(peer(101, kUser), live_line("j", 0, 0.2, std::nullopt), at(11)),
      JobRefusal::duplicate, "already reported");
  exits(102);
  view = admission_.live_view(5);
  EXPECT_EQ(view.ranks, 0u);
  EXPECT_TRUE(view.worst.empty());
  EXPECT_EQ(view.ended_with_finalize, 1u);
  EXPECT_EQ(view.ended_without_finalize, 0u);  // until it is forgotten
  admission_.forget_exited();
  EXPECT_EQ(admission_.live_view(5).ended_without_finalize, 1u);
}

TEST_F(JobAdmissionTest, WithoutCredentialsOrAPidfdNothingIsTaken) {
  process(4242, kUser, {0});
  EXPECT_REFUSED(admission_.start(std::nullopt, JobStartRequest{"j", {}}, at(0)),
                 JobRefusal::no_credentials, "no credentials (SO_PEERCRED)");
  EXPECT_REFUSED(
      admission_.start(PeerCredentials{4242, kUser, kUser, -1}, JobStartRequest{"j", {}}, at(0)),
      JobRefusal::no_credentials, "no pidfd");
  EXPECT_REFUSED(admission_.admit(PeerCredentials{0, kUser, kUser, 0}, report("j", {0}), at(1)),
                 JobRefusal::no_credentials, "SO_PEERCRED");
}

// Forgery: a report for a rank that has exited, its pid now another's.
TEST_F(JobAdmissionTest, APidRecycledUnderAnOpenConnectionIsRefused) {
  process(4242, kUser, {0});
  EXPECT_ACCEPTED(start(4242, kUser, "j"));
  exits(4242);  // the connection's process, and the registered one
  EXPECT_REFUSED(admit(4242, kUser, report("j", {0})), JobRefusal::no_credentials,
                 "has exited since it connected");
  // A new process of another user with the same pid: its own connection is
  // not the registered process's.
  process(4242, kOther, {0});
  EXPECT_REFUSED(admit(4242, kOther, report("j", {0})), JobRefusal::unregistered,
                 "sent no job-start");
  // Even of the same user: the registration was the exited process's.
  process(4242, kUser, {0});
  EXPECT_REFUSED(admit(4242, kUser, report("j", {0})), JobRefusal::unregistered,
                 "process 4242 (uid 1000) sent no job-start");
  // It may register itself, replacing the stale registration.
  EXPECT_ACCEPTED(start(4242, kUser, "j", 11));
  EXPECT_ACCEPTED(admit(4242, kUser, report("j", {0}, 5, kStart + 16), 16));
}

// Forgery: a sender that changed user after connecting.
TEST_F(JobAdmissionTest, ASenderThatChangedUserIsRefused) {
  process(4242, kOther, {0});  // runs as kOther now
  EXPECT_REFUSED(start(4242, kUser, "j"), JobRefusal::wrong_user,
                 "process 4242 runs as uid 1001, not as the uid it connected as (1000)");
  // Where the kernel does not say (before Linux 6.13), it counts as the
  // user it connected as.
  facts_.processes[4242].euid.reset();
  EXPECT_ACCEPTED(start(4242, kUser, "j"));
}

// Forgery: a report from a process that never sent job-start (or to a
// daemon that restarted since).
TEST_F(JobAdmissionTest, AReportWithoutJobStartIsRefused) {
  process(4242, kUser, {0});
  EXPECT_REFUSED(admit(4242, kUser, report("j", {0})), JobRefusal::unregistered,
                 "sent no job-start to this corenoised");
}

// Forgeries: a replay, and a new job id for the same rank.
TEST_F(JobAdmissionTest, AReplayAndANewJobIdForTheSameRankAreRefused) {
  process(4242, kUser, {0});
  EXPECT_ACCEPTED(start(4242, kUser, "job-a"));
  EXPECT_REFUSED(start(4242, kUser, "job-b"), JobRefusal::duplicate, "already started job 'job-a'");
  EXPECT_REFUSED(admit(4242, kUser, report("job-b", {0})), JobRefusal::wrong_job,
                 "started job 'job-a', not 'job-b'");
  EXPECT_ACCEPTED(admit(4242, kUser, report("job-a", {0})));
  EXPECT_REFUSED(admit(4242, kUser, report("job-a", {0})), JobRefusal::duplicate,
                 "already reported job 'job-a'");
  EXPECT_REFUSED(admit(4242, kUser, report("job-c", {0})), JobRefusal::wrong_job, "'job-c'");
}

// Forgery: a CPU outside the sender's affinity. Inside it now or at its
// job-start is enough (a rank may be moved while it runs).
TEST_F(JobAdmissionTest, ACpuOutsideTheSendersAffinityIsRefused) {
  process(4242, kUser, {2, 3});
  EXPECT_ACCEPTED(start(4242, kUser, "j"));
  EXPECT_REFUSED(admit(4242, kUser, report("j", {1, 2, 5})), JobRefusal::cpu_outside_affinity,
                 "cpu 1,5 is outside the affinity of process 4242 (uid 1000) (2-3 now, 2-3 at its "
                 "job-start)");
  facts_.processes[4242].affinity = {4};
  EXPECT_ACCEPTED(admit(4242, kUser, report("j", {2, 4})));
}

// Forgery: more loss than the sender lived, and an end in the future or
// before it started.
TEST_F(JobAdmissionTest, TimeTheSenderDidNotLiveIsRefused) {
  process(4242, kUser, {0});
  EXPECT_ACCEPTED(start(4242, kUser, "j", 0));
  EXPECT_REFUSED(admit(4242, kUser, report("j", {0}, 30, kStart + 20), 20), JobRefusal::too_long,
                 "reports 30.000 s of job, but started it 20.000 s ago");
  // A second of slack for the rank's own clock reading.
  EXPECT_REFUSED(admit(4242, kUser, report("j", {0}, 20, kStart + 3600 * 24 * 365), 20),
                 JobRefusal::bad_time, "outside its job-start");
  EXPECT_REFUSED(admit(4242, kUser, report("j", {0}, 20, kStart - 60), 20), JobRefusal::bad_time,
                 "says its job ended at");
  EXPECT_ACCEPTED(admit(4242, kUser, report("j", {0}, 20.9, kStart + 20), 20));
}

// A rank in a Slurm job's cgroup, which the kernel confirms: the job is
// the scheduler's (its id is Slurm's, whatever the rank calls it), and a
// CPU outside the job's cpuset is refused even where the rank's affinity
// has it. A cgroup the kernel does not confirm is not believed: the rank
// is taken on its own word, as one that names none.
TEST_F(JobAdmissionTest, ASlurmJobsCgroupIsBelievedOnlyWhereTheKernelConfirmsIt) {
  const std::string v2 = "/system.slice/slurmstepd.scope/job_42/step_0/user/task_0";
  process(4242, kUser, {0, 1, 2, 3});
  facts_.processes[4242].slurm_cgroup = v2;
  facts_.processes[4242].slurm_job = {"42", std::vector<unsigned>{0, 1}};
  const JobAdmissionVerdict started =
      admission_.start(peer(4242, kUser), JobStartRequest{"42", "0::" + v2}, at(0));
  EXPECT_FALSE(started.refusal) << started.error;
  EXPECT_EQ(started.scheduler_job_id, "42");
  EXPECT_REFUSED(admit(4242, kUser, report("42", {1, 2})), JobRefusal::cpu_outside_affinity,
                 "cpu 2 is outside the cpuset of Slurm job 42 (0-1)");
  const JobAdmissionVerdict taken = admit(4242, kUser, report("42", {0, 1}));
  EXPECT_FALSE(taken.refusal) << taken.error;
  EXPECT_EQ(taken.scheduler_job_id, "42");

  // Another job's cgroup, which does not hold this rank: passed over.
  process(4343, kUser, {0, 1, 2, 3});
  facts_.processes[4343].slurm_cgroup = v2;
  facts_.processes[4343].slurm_job = {"42", std::vector<unsigned>{0, 1}};
  const JobAdmissionVerdict claimed = admission_.start(
      peer(4343, kUser),
      JobStartRequest{"7", "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0"}, at(0));
  EXPECT_FALSE(claimed.refusal) << claimed.error;
  EXPECT_FALSE(claimed.scheduler_job_id);
  const JobAdmissionVerdict own_word = admit(4343, kUser, report("7", {2, 3}));
  EXPECT_FALSE(own_word.refusal) << own_word.error;
  EXPECT_FALSE(own_word.scheduler_job_id);
}

// What the daemon traces for the running jobs: each user's job with its
// ranks' processes and the CPUs they were admitted on, within the cpuset;
// a question about a job only from its own registered rank.
TEST_F(JobAdmissionTest, RunningJobsAreTheRegisteredRanksCpusAndOnlyTheirRanksMayAsk) {
  process(101, kUser, {0, 1});
  process(102, kUser, {2});
  process(103, kUser + 1, {3});
  process(104, kUser, {0, 1, 2, 3});
  facts_.processes[104].slurm_cgroup = "/system.slice/slurmstepd.scope/job_5/step_0/user/task_0";
  facts_.processes[104].slurm_job = {"5", std::vector<unsigned>{3}};
  EXPECT_ACCEPTED(start(101, kUser, "a"));
  EXPECT_ACCEPTED(start(102, kUser, "a"));
  EXPECT_ACCEPTED(start(103, kUser + 1, "a"));
  EXPECT_ACCEPTED(admission_.start(
      peer(104, kUser),
      JobStartRequest{"5", "0::/system.slice/slurmstepd.scope/job_5/step_0/user/task_0"}, at(0)));
  std::vector<TracedJob> jobs = admission_.running_jobs();
  ASSERT_EQ(jobs.size(), 3u);
  const auto find = [&](uid_t uid, const std::string& id) {
    for (const TracedJob& j : jobs)
      if (j.uid == uid && j.job_id == id) return j;
    ADD_FAILURE() << "no job " << id << " of uid " << uid;
    return TracedJob{};
  };
  EXPECT_EQ(find(kUser, "a").pids, (std::set<pid_t>{101, 102}));
  EXPECT_EQ(find(kUser, "a").cpus, (std::set<unsigned>{0, 1, 2}));
  EXPECT_EQ(find(kUser + 1, "a").cpus, (std::set<unsigned>{3}));
  EXPECT_EQ(find(kUser, "5").cpus, (std::set<unsigned>{3})) << "within its Slurm job's cpuset";
  EXPECT_EQ(admission_.registered_rank(104).cpus, (std::set<unsigned>{3}));
  EXPECT_EQ(admission_.registered_rank(101).pids, (std::set<pid_t>{101}));
  EXPECT_TRUE(admission_.registered_rank(999).pids.empty());

  EXPECT_ACCEPTED(admission_.admit_question(peer(101, kUser), "a", at(1)));
  EXPECT_REFUSED(admission_.admit_question(peer(101, kUser), "b", at(1)), JobRefusal::wrong_job,
                 "started job 'a'");
  process(105, kUser, {0});
  EXPECT_REFUSED(admission_.admit_question(peer(105, kUser), "a", at(1)), JobRefusal::unregistered,
                 "sent no job-start");
  exits(102);
  jobs = admission_.running_jobs();
  EXPECT_EQ(find(kUser, "a").pids, (std::set<pid_t>{101})) << "an exited rank is not the job's";
  EXPECT_EQ(find(kUser, "a").cpus, (std::set<unsigned>{0, 1}));
}

// A user's budget: live registrations, and lines a second.
TEST_F(JobAdmissionTest, AUsersRanksAndLinesAreBounded) {
  FakeFacts facts;
  JobAdmissionLimits limits;
  limits.ranks_per_user = 3;
  limits.lines_per_second = 10;
  limits.line_burst = 5;
  JobAdmission admission(facts, limits);
  for (pid_t pid = 100; pid < 110; ++pid) {
    FakeProcess p;
    p.euid = kUser;
    p.affinity = {0};
    facts.processes[pid] = p;
  }
  facts.processes[200] = FakeProcess{std::make_shared<bool>(true), kOther, {0}, {}, {}};
  auto start_at = [&](pid_t pid, uid_t uid, double t) {
    return admission.start(PeerCredentials{pid, uid, uid, pid}, JobStartRequest{"j", {}},
                           {kStart + t, t});
  };
  EXPECT_ACCEPTED(start_at(100, kUser, 0));
  EXPECT_ACCEPTED(start_at(101, kUser, 0));
  EXPECT_ACCEPTED(start_at(102, kUser, 0));
  EXPECT_REFUSED(start_at(103, kUser, 0), JobRefusal::too_many_ranks,
                 "uid 1000 has 3 running ranks on this node (at most 3 a user");
  // Another user is not held back by the first.
  EXPECT_ACCEPTED(start_at(200, kOther, 0));
  // A rank that exited makes room.
  *facts.processes[100].alive = false;
  EXPECT_ACCEPTED(start_at(103, kUser, 0));
  // The sixth line in one instant is past the burst of five...
  EXPECT_REFUSED(start_at(104, kUser, 0), JobRefusal::rate_limited,
                 "uid 1000 sent more than 10 job-start and job lines a second (bursts of 5)");
  // ... and a second later there are five again (the burst's worth).
  EXPECT_REFUSED(start_at(104, kUser, 1), JobRefusal::too_many_ranks, "at most 3 a user");
  EXPECT_EQ(admission.registered(), 4u);
}

TEST(JobRefusalNames, EveryReasonHasItsLabel) {
  std::vector<std::string> names;
  for (JobRefusal r : kJobRefusals) names.emplace_back(to_string(r));
  EXPECT_EQ(names,
            (std::vector<std::string>{"no_credentials", "wrong_user", "unregistered", "wrong_job",
                                      "duplicate", "cpu_outside_affinity", "too_long", "bad_time",
                                      "too_many_ranks", "rate_limited", "invalid"}));
}

}  // namespace
}  // namespace corenoise
