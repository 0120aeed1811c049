// Which `job-start` and `job` lines corenoised takes: what jobs report is
// exported as corenoise_job_lost_seconds_total, and any local user may send
// them (the user socket), so without this any user could make any CPU of
// the node look as if jobs lost time on it. docs/control.md ("Threat
// model") is the contract; every rule below is one of its refusals.
//
// Only what the kernel vouches for without privilege is used (the daemon
// runs as its own user, with no capability and other users' /proc hidden):
// the connection's SO_PEERCRED credentials and pidfd, the sender's user now
// (PIDFD_GET_INFO), its CPU affinity (sched_getaffinity) and, where it
// names the Slurm job cgroup it runs in, what cgroupfs says of that cgroup
// (daemon/slurm_job.h), all through ProcessFacts (daemon/peer_process.h);
// and the daemon's own clock.
//
// A rank sends `job-start` at MPI_Init: its registration (who, since when,
// where it may run). At MPI_Finalize it sends one `job` report for its own
// loss on its own CPUs, taken only if
//   1. the sender is still the process that connected (no_credentials),
//   2. runs as the user it connected as, where the kernel says (wrong_user),
//   3. registered from this very process, while this daemon ran
//      (unregistered), for the same job (wrong_job), and has not reported
//      since (duplicate),
//   4. may run on every CPU of the report, now or when it registered, and
//      within its Slurm job's cpuset where the kernel put it in one
//      (cpu_outside_affinity),
//   5. claims no more time than it lived since registering, and no end in
//      the future or before it registered (too_long, bad_time),
//   6. its user is within budget: live registrations, and lines a second
//      (too_many_ranks, rate_limited).
// The protocol (control_protocol.h) has already bounded every figure; the
// daemon checks the CPUs are this node's (invalid).
//
// Threading: not thread-safe; the daemon calls it on its event-loop thread.
// Cost: a few system calls a line; no file is read but, at a job-start
// naming a Slurm cgroup, that cgroup's cgroup.procs and its job's cpuset;
// no line scans the registrations but a job-start of a user at its cap
// (forget_exited); the daemon's timer does, every 30 s, and every second
// while it traces (running_jobs), never a user's line.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "daemon/control/control_requests.h"
#include "daemon/job_limits.h"
#include "daemon/job_tracer.h"
#include "daemon/peer_process.h"

namespace corenoise {

// Why a line was refused: the `reason` label of
// corenoise_job_reports_refused_total, a fixed set.
enum class JobRefusal {
  no_credentials,        // no SO_PEERCRED or pidfd, or the sender has exited
  wrong_user,            // the sender runs as another user than it connected as
  unregistered,          // no job-start from this process while this daemon ran
  wrong_job,             // the report names another job than the sender's job-start
  duplicate,             // a second job-start, or a second report, from one process
  cpu_outside_affinity,  // a CPU the sender may not run on
  too_long,              // more time than the sender lived since its job-start
  bad_time,              // ended in the future, or before the sender's job-start
  too_many_ranks,        // the user's live registrations are at their cap
  rate_limited,          // the user sent lines faster than its budget
  invalid,               // the protocol refused the line, or a CPU is not this node's
};

inline constexpr JobRefusal kJobRefusals[] = {
    JobRefusal::no_credentials, JobRefusal::wrong_user, JobRefusal::unregistered,
    JobRefusal::wrong_job,      JobRefusal::duplicate,  JobRefusal::cpu_outside_affinity,
    JobRefusal::too_long,       JobRefusal::bad_time,   JobRefusal::too_many_ranks,
    JobRefusal::rate_limited,   JobRefusal::invalid,
};
inline constexpr std::size_t kJobRefusalCount = std::size(kJobRefusals);

constexpr std::size_t index_of(JobRefusal refusal) { return static_cast<std::size_t>(refusal); }

// The label value: "no_credentials", ...
std::string_view to_string(JobRefusal refusal);

// How long a report may claim beyond what the daemon saw, and how far its
// end may lie ahead of the daemon's clock: the rank's own clock reads the
// same machine, so these only absorb the time between the rank's clock
// reading and the daemon's.
inline constexpr double kJobStartSlackSeconds = 1;
inline constexpr double kJobEndSlackSeconds = 5;

// The daemon's two clocks when a line came: the wall clock for the report's
// `ended_unix_seconds`, the steady one for ages (a wall-clock step must not
// age a rank).
struct AdmissionTime {
  double unix_seconds = 0;
  double steady_seconds = 0;
};

// The verdict on one line: accepted, or refused with a reason and a message
// for the client and the log ("job: refused (unregistered): ...").
struct JobAdmissionVerdict {
  std::optional<JobRefusal> refusal;  // nullopt: accepted
  std::string error;                  // empty when accepted
  // Accepted from a rank the kernel's cgroups put in a Slurm job: that
  // job's id, the scheduler's word rather than the rank's.
  std::optional<std::string> scheduler_job_id;
};

// The running jobs' live figures on this node (`job-live`), for the
// exporter: the ranks that caused the most waiting so far, and how fresh.
struct JobLiveRank {
  unsigned rank = 0;
  double wait_caused_seconds = 0;
  std::optional<JobCause> cause;  // where it is late
};
struct JobLiveView {
  std::vector<JobLiveRank> worst;  // most waiting caused first, at most the asked number
  // The same of the ranks' newest epoch windows (since the epoch before):
  // who makes the others wait now, however long the job ran before.
  std::vector<JobLiveRank> window_worst;
  std::size_t ranks = 0;                    // running ranks that sent a live line
  std::optional<double> last_unix_seconds;  // when the newest live line came
  std::optional<double> interval_seconds;   // that line's cadence
  // Ranks whose live lines ended with their job's report (MPI_Finalize),
  // and ranks that exited without one (killed, or ended without it).
  std::uint64_t ended_with_finalize = 0;
  std::uint64_t ended_without_finalize = 0;
};

class JobAdmission {
 public:
  // `facts` must outlive this.
  explicit JobAdmission(const ProcessFacts& facts, JobAdmissionLimits limits = {});
  ~JobAdmission();
  JobAdmission(const JobAdmission&) = delete;
  JobAdmission& operator=(const JobAdmission&) = delete;

  // A rank's job-start: registered, or refused. Never throws but
  // std::bad_alloc.
  JobAdmissionVerdict start(const std::optional<PeerCredentials>& peer,
                            const JobStartRequest& request, AdmissionTime now);
  // A rank's report: the rules of the header. An accepted one marks the
  // registration reported. Never throws but std::bad_alloc.
  JobAdmissionVerdict admit(const std::optional<PeerCredentials>& peer, const JobRequest& report,
                            AdmissionTime now);

  // A rank's live line: rules 1 to 3 and 6 of the header, and no more job
  // than the sender lived (too_long). An accepted one replaces the rank's
  // last. Never throws but std::bad_alloc.
  JobAdmissionVerdict admit_live(const std::optional<PeerCredentials>& peer,
                                 const JobLiveRequest& live, AdmissionTime now);
  // The live lines of the ranks still running, unreported: the `top` that
  // caused the most waiting.
  JobLiveView live_view(std::size_t top) const;

  // A rank's question about its job (`job-culprits`): rules 1 to 3 and 6 of
  // the header. Never throws but std::bad_alloc.
  JobAdmissionVerdict admit_question(const std::optional<PeerCredentials>& peer,
                                     const std::string& job_id, AdmissionTime now);
  // The jobs of the registered ranks still running, each by user and id:
  // their processes and the CPUs each was admitted on (its affinity at
  // job-start, within its Slurm job's cpuset where the kernel confirmed
  // one): what the daemon traces for them (daemon/job_tracer.h).
  std::vector<TracedJob> running_jobs() const;
  // The same of the one registration of `pid` (empty pids where none).
  TracedJob registered_rank(pid_t pid) const;

  // Drops the registrations whose process has exited (of `uid` only, if
  // given); returns how many.
  std::size_t forget_exited(std::optional<uid_t> uid = std::nullopt);
  // Live registrations (reported or not), of everyone.
  std::size_t registered() const { return registrations_.size(); }

 private:
  struct Registration;
  struct Budget {  // a token bucket of lines
    double tokens = 0;
    double refilled_at = 0;  // steady seconds
  };

  std::optional<JobAdmissionVerdict> spend(uid_t uid, double steady_seconds);
  // admit()'s steps, each a refusal or nullopt: the report's CPUs within
  // the sender's affinity (now and at its job-start) and its Slurm job's
  // cpuset; its wall time and end within the sender's life.
  std::optional<JobAdmissionVerdict> check_cpus(const PeerCredentials& peer,
                                                const JobRequest& report, const Registration& r,
                                                const std::string& sender) const;
  static std::optional<JobAdmissionVerdict> check_times(const JobRequest& report,
                                                        const Registration& r, AdmissionTime now,
                                                        const std::string& sender);
  std::size_t registered_by(uid_t uid) const;
  // admit()'s and admit_live()'s registration of the sender, or its refusal.
  std::variant<Registration*, JobAdmissionVerdict> registration_of(const PeerCredentials& peer,
                                                                   const std::string& job_id,
                                                                   const std::string& sender);

  const ProcessFacts& facts_;
  JobAdmissionLimits limits_;
  std::map<pid_t, Registration> registrations_;
  std::map<uid_t, Budget> budgets_;
  std::uint64_t ended_with_finalize_ = 0, ended_without_finalize_ = 0;
};

}  // namespace corenoise
