#include "daemon/job_admission.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <utility>

#include "probe/cpu_list.h"
#include "probe/units.h"

namespace corenoise {

struct JobAdmission::Registration {
  uid_t uid = 0;
  std::string job_id;
  AdmissionTime started;
  std::vector<unsigned> affinity;  // sorted, at job-start
  // The Slurm job the kernel's cgroups put the rank in, where it named one
  // and cgroupfs confirmed it.
  std::optional<SchedulerJob> scheduler_job;
  std::unique_ptr<ProcessWatch> process;  // the registered process, past its connection
  bool reported = false;
  // Its latest live line (job-live), and when it came (steady seconds).
  std::optional<JobLiveRequest> live;
  AdmissionTime live_at;
};

namespace {

JobAdmissionVerdict refuse(JobRefusal reason, const std::string& why) {
  return {reason, "job: refused (" + std::string(to_string(reason)) + "): " + why, std::nullopt};
}

std::string sender_text(const PeerCredentials& peer) {
  return "process " + std::to_string(peer.pid) + " (uid " + std::to_string(peer.uid) + ")";
}

JobAdmissionVerdict exited_before_affinity(const PeerCredentials& peer) {
  return refuse(JobRefusal::no_credentials,
                sender_text(peer) + " exited before the kernel said where it may run");
}

// The CPUs of `cpus` in neither `a` nor `b` (all sorted).
std::vector<unsigned> outside(const std::vector<unsigned>& cpus, const std::vector<unsigned>& a,
                              const std::vector<unsigned>& b) {
  std::vector<unsigned> allowed;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(allowed));
  std::vector<unsigned> missing;
  std::set_difference(cpus.begin(), cpus.end(), allowed.begin(), allowed.end(),
                      std::back_inserter(missing));
  return missing;
}

}  // namespace

std::string_view to_string(JobRefusal refusal) {
  switch (refusal) {
    case JobRefusal::no_credentials:
      return "no_credentials";
    case JobRefusal::wrong_user:
      return "wrong_user";
    case JobRefusal::unregistered:
      return "unregistered";
    case JobRefusal::wrong_job:
      return "wrong_job";
    case JobRefusal::duplicate:
      return "duplicate";
    case JobRefusal::cpu_outside_affinity:
      return "cpu_outside_affinity";
    case JobRefusal::too_long:
      return "too_long";
    case JobRefusal::bad_time:
      return "bad_time";
    case JobRefusal::too_many_ranks:
      return "too_many_ranks";
    case JobRefusal::rate_limited:
      return "rate_limited";
    case JobRefusal::invalid:
      return "invalid";
  }
  return "?";
}

JobAdmission::JobAdmission(const ProcessFacts& facts, JobAdmissionLimits limits)
    : facts_(facts), limits_(limits) {}

JobAdmission::~JobAdmission() = default;

namespace {

// Rules 1 and 2 of the header: what every line must pass before its
// content is looked at.
std::optional<JobAdmissionVerdict> check_sender(const ProcessFacts& facts,
                                                const std::optional<PeerCredentials>& peer) {
  if (!peer || peer->pid <= 0) {
    return refuse(JobRefusal::no_credentials,
                  "the kernel gave no credentials (SO_PEERCRED) for the sender");
  }
  if (peer->pidfd < 0) {
    return refuse(JobRefusal::no_credentials,
                  "the kernel gave no pidfd for " + sender_text(*peer) +
                      " (SO_PEERPIDFD or pidfd_open), so it cannot tell that the pid is still "
                      "the sender's");
  }
  if (!facts.running(*peer)) {
    return refuse(JobRefusal::no_credentials, sender_text(*peer) +
                                                  " has exited since it connected (its pid may "
                                                  "name another process now)");
  }
  if (const std::optional<uid_t> now = facts.effective_uid(*peer); now && *now != peer->uid) {
    return refuse(JobRefusal::wrong_user,
                  "process " + std::to_string(peer->pid) + " runs as uid " + std::to_string(*now) +
                      ", not as the uid it connected as (" + std::to_string(peer->uid) + ")");
  }
  return std::nullopt;
}

}  // namespace

std::optional<JobAdmissionVerdict> JobAdmission::spend(uid_t uid, double steady_seconds) {
  auto [it, fresh] = budgets_.try_emplace(uid);
  Budget& budget = it->second;
  if (fresh) {
    budget = {limits_.line_burst, steady_seconds};
  } else {
    const double elapsed = std::max(0.0, steady_seconds - budget.refilled_at);
    budget.tokens =
        std::min(limits_.line_burst, budget.tokens + elapsed * limits_.lines_per_second);
    budget.refilled_at = steady_seconds;
  }
  if (budget.tokens < 1) {
    return refuse(JobRefusal::rate_limited,
                  "uid " + std::to_string(uid) + " sent more than " +
                      std::to_string(std::lround(limits_.lines_per_second)) +
                      " job-start and job lines a second (bursts of " +
                      std::to_string(std::lround(limits_.line_burst)) + ")");
  }
  budget.tokens -= 1;
  return std::nullopt;
}

std::size_t JobAdmission::registered_by(uid_t uid) const {
  return static_cast<std::size_t>(
      std::count_if(registrations_.begin(), registrations_.end(),
                    [&](const auto& r) { return r.second.uid == uid; }));
}

std::size_t JobAdmission::forget_exited(std::optional<uid_t> uid) {
  return std::erase_if(registrations_, [&](const auto& entry) {
    const Registration& r = entry.second;
    const bool forget = (!uid || r.uid == *uid) && !r.process->running();
    // A rank that was live and never reported: killed, or ended without
    // MPI_Finalize (the running job's series say so).
    if (forget && r.live && !r.reported) ++ended_without_finalize_;
    return forget;
  });
}

JobAdmissionVerdict JobAdmission::start(const std::optional<PeerCredentials>& peer,
                                        const JobStartRequest& request, AdmissionTime now) {
  if (auto refused = check_sender(facts_, peer)) return *refused;
  if (auto refused = spend(peer->uid, now.steady_seconds)) return *refused;
  const pid_t pid = peer->pid;
  if (const auto it = registrations_.find(pid); it != registrations_.end()) {
    // A live registration of this pid is this very process (it is running,
    // and so is the registered one: the pid cannot name two).
    if (it->second.process->running()) {
      return refuse(JobRefusal::duplicate,
                    sender_text(*peer) + " already started job '" + it->second.job_id + "'");
    }
    registrations_.erase(it);  // an exited process whose pid came round again
  }
  if (registered_by(peer->uid) >= limits_.ranks_per_user) forget_exited(peer->uid);
  if (registrations_.size() >= limits_.ranks_total) forget_exited();
  const std::size_t mine = registered_by(peer->uid);
  if (mine >= limits_.ranks_per_user || registrations_.size() >= limits_.ranks_total) {
    return refuse(JobRefusal::too_many_ranks,
                  "uid " + std::to_string(peer->uid) + " has " + std::to_string(mine) +
                      " running ranks on this node (at most " +
                      std::to_string(limits_.ranks_per_user) + " a user, " +
                      std::to_string(limits_.ranks_total) + " in all)");
  }
  std::optional<std::vector<unsigned>> affinity = facts_.affinity(*peer);
  std::unique_ptr<ProcessWatch> process = facts_.watch(*peer);
  if (!affinity || !process) return exited_before_affinity(*peer);
  // Whole before it is kept: a registration without its watch must never be.
  Registration r;
  r.uid = peer->uid;
  r.job_id = request.job_id;
  r.started = now;
  r.affinity = std::move(*affinity);
  r.process = std::move(process);
  // A cgroup the kernel does not confirm (a false claim, or a rank in a
  // cgroup namespace of its own) is passed over: the rank is then taken on
  // its own word for the job id, as one that names no cgroup.
  if (!request.cgroup.empty()) {
    if (const std::optional<SlurmCgroup> cgroup = parse_slurm_cgroup(request.cgroup)) {
      r.scheduler_job = facts_.slurm_job(*peer, *cgroup);
    }
  }
  JobAdmissionVerdict verdict;
  if (r.scheduler_job) verdict.scheduler_job_id = r.scheduler_job->id;
  registrations_.insert_or_assign(pid, std::move(r));
  return verdict;
}

std::optional<JobAdmissionVerdict> JobAdmission::check_cpus(const PeerCredentials& peer,
                                                            const JobRequest& report,
                                                            const Registration& r,
                                                            const std::string& sender) const {
  std::vector<unsigned> cpus;
  for (const JobCpuLoss& loss : report.cpus) cpus.push_back(loss.cpu);
  std::sort(cpus.begin(), cpus.end());
  const std::optional<std::vector<unsigned>> affinity_now = facts_.affinity(peer);
  if (!affinity_now) return exited_before_affinity(peer);
  if (const auto missing = outside(cpus, *affinity_now, r.affinity); !missing.empty()) {
    return refuse(JobRefusal::cpu_outside_affinity,
                  "cpu " + format_cpu_list(missing) + " is outside the affinity of " + sender +
                      " (" + format_cpu_list(*affinity_now) + " now, " +
                      format_cpu_list(r.affinity) + " at its job-start)");
  }
  if (r.scheduler_job && r.scheduler_job->cpus) {
    const std::vector<unsigned>& job_cpus = *r.scheduler_job->cpus;
    if (const auto missing = outside(cpus, job_cpus, {}); !missing.empty()) {
      return refuse(JobRefusal::cpu_outside_affinity,
                    "cpu " + format_cpu_list(missing) + " is outside the cpuset of Slurm job " +
                        r.scheduler_job->id + " (" + format_cpu_list(job_cpus) + "), which " +
                        sender + " runs in");
    }
  }
  return std::nullopt;
}

std::optional<JobAdmissionVerdict> JobAdmission::check_times(const JobRequest& report,
                                                             const Registration& r,
                                                             AdmissionTime now,
                                                             const std::string& sender) {
  const double lived = now.steady_seconds - r.started.steady_seconds;
  if (report.elapsed_seconds > lived + kJobStartSlackSeconds) {
    return refuse(JobRefusal::too_long, sender + " reports " + fixed(report.elapsed_seconds, 3) +
                                            " s of job, but started it " + fixed(lived, 3) +
                                            " s ago");
  }
  if (report.ended_unix_seconds > now.unix_seconds + kJobEndSlackSeconds ||
      report.ended_unix_seconds < r.started.unix_seconds - kJobEndSlackSeconds) {
    return refuse(JobRefusal::bad_time, sender + " says its job ended at " +
                                            fixed(report.ended_unix_seconds, 3) +
                                            " (Unix seconds), outside its job-start (" +
                                            fixed(r.started.unix_seconds, 3) + ") to now (" +
                                            fixed(now.unix_seconds, 3) + ")");
  }
  return std::nullopt;
}

std::variant<JobAdmission::Registration*, JobAdmissionVerdict> JobAdmission::registration_of(
    const PeerCredentials& peer, const std::string& job_id, const std::string& sender) {
  const auto it = registrations_.find(peer.pid);
  // The registration must be this process's: its own watch still running
  // means the pid still names it, and so the sender.
  if (it == registrations_.end() || it->second.uid != peer.uid || !it->second.process->running()) {
    return refuse(JobRefusal::unregistered,
                  sender +
                      " sent no job-start to this corenoised (a rank sends it at MPI_Init; "
                      "a daemon restarted since knows none)");
  }
  Registration& r = it->second;
  if (r.job_id != job_id) {
    return refuse(JobRefusal::wrong_job,
                  sender + " started job '" + r.job_id + "', not '" + job_id + "'");
  }
  if (r.reported) {
    return refuse(JobRefusal::duplicate, sender + " already reported job '" + r.job_id + "'");
  }
  return &r;
}

JobAdmissionVerdict JobAdmission::admit(const std::optional<PeerCredentials>& peer,
                                        const JobRequest& report, AdmissionTime now) {
  if (auto refused = check_sender(facts_, peer)) return *refused;
  if (auto refused = spend(peer->uid, now.steady_seconds)) return *refused;
  const std::string sender = sender_text(*peer);
  auto found = registration_of(*peer, report.job_id, sender);
  if (auto* refused = std::get_if<JobAdmissionVerdict>(&found)) return *refused;
  Registration& r = *std::get<Registration*>(found);
  if (auto refused = check_cpus(*peer, report, r, sender)) return *refused;
  if (auto refused = check_times(report, r, now, sender)) return *refused;
  r.reported = true;
  if (r.live) ++ended_with_finalize_;
  JobAdmissionVerdict verdict;
  if (r.scheduler_job) verdict.scheduler_job_id = r.scheduler_job->id;
  return verdict;
}

JobAdmissionVerdict JobAdmission::admit_live(const std::optional<PeerCredentials>& peer,
                                             const JobLiveRequest& live, AdmissionTime now) {
  if (auto refused = check_sender(facts_, peer)) return *refused;
  if (auto refused = spend(peer->uid, now.steady_seconds)) return *refused;
  const std::string sender = sender_text(*peer);
  auto found = registration_of(*peer, live.job_id, sender);
  if (auto* refused = std::get_if<JobAdmissionVerdict>(&found)) return *refused;
  Registration& r = *std::get<Registration*>(found);
  const double lived = now.steady_seconds - r.started.steady_seconds;
  if (live.elapsed_seconds > lived + kJobStartSlackSeconds) {
    return refuse(JobRefusal::too_long, sender + " reports " + fixed(live.elapsed_seconds, 3) +
                                            " s of job, but started it " + fixed(lived, 3) +
                                            " s ago");
  }
  r.live = live;
  r.live_at = now;
  JobAdmissionVerdict verdict;
  if (r.scheduler_job) verdict.scheduler_job_id = r.scheduler_job->id;
  return verdict;
}

JobAdmissionVerdict JobAdmission::admit_question(const std::optional<PeerCredentials>& peer,
                                                 const std::string& job_id, AdmissionTime now) {
  if (auto refused = check_sender(facts_, peer)) return *refused;
  if (auto refused = spend(peer->uid, now.steady_seconds)) return *refused;
  auto found = registration_of(*peer, job_id, sender_text(*peer));
  if (auto* refused = std::get_if<JobAdmissionVerdict>(&found)) return *refused;
  const Registration& r = *std::get<Registration*>(found);
  JobAdmissionVerdict verdict;
  if (r.scheduler_job) verdict.scheduler_job_id = r.scheduler_job->id;
  return verdict;
}

namespace {

// A registration's job, process and admitted CPUs (its affinity at
// job-start, within its Slurm job's cpuset), into `job`.
template <typename Registration>
void add_rank(pid_t pid, const Registration& r, TracedJob& job) {
  job.uid = r.uid;
  job.job_id = r.job_id;
  job.pids.insert(pid);
  const std::vector<unsigned>* cpuset =
      r.scheduler_job && r.scheduler_job->cpus ? &*r.scheduler_job->cpus : nullptr;
  for (unsigned cpu : r.affinity) {
    if (!cpuset || std::find(cpuset->begin(), cpuset->end(), cpu) != cpuset->end())
      job.cpus.insert(cpu);
  }
}

}  // namespace

TracedJob JobAdmission::registered_rank(pid_t pid) const {
  TracedJob job;
  if (const auto it = registrations_.find(pid); it != registrations_.end())
    add_rank(pid, it->second, job);
  return job;
}

std::vector<TracedJob> JobAdmission::running_jobs() const {
  std::map<std::pair<uid_t, std::string>, TracedJob> jobs;
  for (const auto& [pid, r] : registrations_) {
    if (r.process->running()) add_rank(pid, r, jobs[{r.uid, r.job_id}]);
  }
  std::vector<TracedJob> out;
  out.reserve(jobs.size());
  for (auto& [key, job] : jobs) out.push_back(std::move(job));
  return out;
}

namespace {

// The `top` ranks that caused the most waiting, one per rank and cause:
// two jobs' ranks of one number and cause (two jobs sharing the node) show
// as the one that caused more.
void keep_most_caused(std::vector<JobLiveRank>& ranks, std::size_t top) {
  const auto most_first = [](const JobLiveRank& a, const JobLiveRank& b) {
    return a.wait_caused_seconds > b.wait_caused_seconds ||
           (a.wait_caused_seconds == b.wait_caused_seconds && a.rank < b.rank);
  };
  std::sort(ranks.begin(), ranks.end(), most_first);
  std::set<std::pair<unsigned, int>> shown;
  std::erase_if(ranks, [&](const JobLiveRank& r) {
    return !shown.emplace(r.rank, r.cause ? static_cast<int>(*r.cause) : -1).second;
  });
  if (ranks.size() > top) ranks.resize(top);
}

}  // namespace

JobLiveView JobAdmission::live_view(std::size_t top) const {
  JobLiveView view;
  view.ended_with_finalize = ended_with_finalize_;
  view.ended_without_finalize = ended_without_finalize_;
  const Registration* newest = nullptr;
  for (const auto& [pid, r] : registrations_) {
    // A rank gone since is the next forget_exited's; a reported one ended.
    if (!r.live || r.reported || !r.process->running()) continue;
    ++view.ranks;
    view.worst.push_back({r.live->rank, r.live->wait_caused_seconds, r.live->cause});
    if (r.live->window_seconds > 0) {
      view.window_worst.push_back(
          {r.live->rank, r.live->window_wait_caused_seconds, r.live->window_cause});
    }
    if (newest == nullptr || r.live_at.steady_seconds > newest->live_at.steady_seconds) newest = &r;
  }
  keep_most_caused(view.worst, top);
  keep_most_caused(view.window_worst, top);
  if (newest != nullptr) {
    view.last_unix_seconds = newest->live_at.unix_seconds;
    view.interval_seconds = newest->live->interval_seconds;
  }
  return view;
}

}  // namespace corenoise
