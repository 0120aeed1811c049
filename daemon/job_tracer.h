// What else ran on a running job's CPUs, as the kernel's tracer saw it:
// the daemon records the CPUs its registered ranks may run on, from their
// job-start until the last of them has exited, and charges each job's
// CPUs' time to the tasks, IRQs, softirqs and work items that had them
// (not the idle task, not the job's own processes). A rank asks with
// `job-culprits` (docs/control.md, "Traced culprits", the threat model;
// docs/job.md, "Named culprits").
//
// Recording: a tracefs instance of its own (probe/trace/trace_source.h),
// beside the probe rounds' one, switched on for the union of the followed
// jobs' CPUs and off when none is. Its own thread reads each recorded CPU's
// ring buffer four times a second (charge_span, probe/trace/span_charges.h) into
// bounded per-job, per-CPU ledgers: at most kMaxNamed entries, a task by its
// command (the smallest goes to `other` when a span's larger comes: a
// culprit evicted and back starts again from that span, so a recurring one
// may read low on a CPU of more than kMaxNamed names), at most kMaxJobs
// jobs.
//
// Threads: follow() and charges() from the daemon's event loop, the reads
// on the tracer's own thread; one mutex guards the ledgers, never held
// across a read of the trace.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "probe/trace/culprit_matcher.h"
#include "probe/trace/span_charges.h"
#include "probe/trace/trace_source.h"

namespace corenoise {

// A running job on this node, as its registrations say: its user, its id,
// its ranks' processes and the CPUs they were admitted on.
struct TracedJob {
  uid_t uid = 0;
  std::string job_id;
  std::set<pid_t> pids;
  std::set<unsigned> cpus;
  // Its ranks' threads' commands: how its own tasks are told where the
  // trace's thread ids are not the daemon's (JobTracer's foreign_pids).
  std::set<std::string> commands;
};

// What ran on one of a job's CPUs since the job began there.
struct TracedCpu {
  unsigned cpu = 0;
  double seconds = 0;                    // recorded for the job
  std::vector<trace::Culprit> culprits;  // most time first; `other` last where any
  double other_seconds = 0;              // entries past kMaxNamed, summed
  bool overran = false;                  // the ring buffer dropped events
};

// Who a task is, as /proc says now (the trace gives thread ids alone).
struct TaskOwner {
  pid_t tgid = 0;
  uid_t uid = 0;
  bool kernel_thread = false;
};

class JobTracer {
 public:
  static constexpr std::size_t kMaxNamed = 32;
  static constexpr std::size_t kMaxJobs = 64;
  static constexpr std::size_t kMaxJobsPerUser = 8;

  // `owner_of`: a task's owner, nullopt where it is gone (task_owner, below,
  // in the daemon). `hidden`: /proc hides other users' processes (hidepid),
  // so their tasks are not named. `foreign_pids`: the daemon runs in a PID
  // namespace of its own (a container), where the tracer's thread ids, the
  // host's, name nothing in its /proc: a job's own tasks are then told by
  // their commands (TracedJob::commands: another process of the same
  // command on the CPU goes unnamed with them), no task's owner is known
  // (under `hidden` every other task is then unnamed, the kernel's too),
  // and no thread id is given. Without `hidden`, tasks outside the
  // namespace are named by command, as the host's /proc would show them.
  // Starts the reading thread.
  using OwnerLookup = std::function<std::optional<TaskOwner>(pid_t)>;
  JobTracer(std::unique_ptr<trace::TraceSource> source, OwnerLookup owner_of, bool hidden,
            double read_every_seconds = 1, bool foreign_pids = false);
  ~JobTracer();
  JobTracer(const JobTracer&) = delete;
  JobTracer& operator=(const JobTracer&) = delete;

  // The running jobs now: recording follows their CPUs; a job no longer
  // listed is dropped with its ledgers. At most kMaxJobs are followed (those
  // followed already first), kMaxJobsPerUser a user. Returns how many of their ranks' processes
  // the owner lookup cannot see (their threads would be charged as others').
  std::size_t follow(const std::vector<TracedJob>& jobs);
  // A rank just registered (its job, its process, its CPUs): recorded from
  // now, without waiting for the next follow().
  void watch(const TracedJob& rank);
  // The job's charges on its CPUs; nullopt where the job is not followed
  // (beyond kMaxJobs, or not registered).
  std::optional<std::vector<TracedCpu>> charges(uid_t uid, const std::string& job_id) const;
  // One read of every recorded CPU (the thread's step; tests call it).
  void read_now();

 private:
  struct Ledger {
    std::uint64_t since = 0;  // the first span charged starts here or later
    std::uint64_t ticks = 0;
    std::vector<trace::Culprit> named;
    std::uint64_t other_ticks = 0;
    bool overran = false;
  };
  struct Job {
    TracedJob ranks;
    std::map<unsigned, Ledger> cpus;
  };
  struct CpuState {
    std::uint64_t from = 0;  // the next span's start
    trace::SpanCarry carry;
  };
  using Owners = std::map<pid_t, std::optional<TaskOwner>>;
  using Key = std::pair<uid_t, std::string>;

  void run();
  // Under mutex_: the job's entry made (within kMaxJobs) or updated, its
  // ranks replaced by `ranks` or, with `add`, joined by them; its new
  // CPUs' ledgers from `now`.
  void take_job(const TracedJob& ranks, std::uint64_t now, bool add);
  // Under mutex_: the source records the followed jobs' CPUs.
  void record(std::uint64_t now);
  // Adds one CPU's span [from, to) to the ledgers of the jobs on it.
  void charge(unsigned cpu, std::uint64_t from, std::uint64_t to, const trace::Attribution& span,
              const Owners& owners);
  void add(Ledger& ledger, trace::Culprit c, const Job& job, const Owners& owners) const;

  std::unique_ptr<trace::TraceSource> source_;
  OwnerLookup owner_of_;
  const bool hidden_;
  const double read_every_seconds_;
  const bool foreign_pids_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<Key, Job> jobs_;
  std::set<unsigned> recording_;             // what the source records now
  std::map<unsigned, std::uint64_t> fresh_;  // recorded from this TSC on, not yet read
  std::map<unsigned, CpuState> states_;      // the reading thread's own
  std::thread thread_;
};

// The owner of thread `tid` from `proc_root`/TID/status; nullopt if gone.
std::optional<TaskOwner> task_owner(const std::string& proc_root, pid_t tid);
// The commands of process `pid`'s threads, from `proc_root`/PID/task.
std::set<std::string> thread_commands(const std::string& proc_root, pid_t pid);
// Whether this process runs in the initial PID namespace, the tracer's
// (its namespace's inode is the kernel's fixed PROC_PID_INIT_INO).
bool in_initial_pid_namespace(const std::string& proc_root);
// Whether the /proc of `mountinfo` (a mount table, /proc/1/mountinfo's
// text: the host's, not the daemon's sandbox) hides other users'
// processes: hidepid=1, 2, noaccess, invisible or ptraceable.
bool proc_hides_pids(const std::string& mountinfo);

}  // namespace corenoise
