// Which `job` reports corenoised takes: only one from a rank of a job, for
// CPUs that rank's user runs instrumented processes on, once. What jobs
// report is exported as corenoise_job_lost_seconds_total, so without this
// any local user who can connect could make any CPU of the node look as if
// jobs lost time on it.
//
// A report is taken only when all of these hold (docs/control.md, `job`):
//   1. the connection's SO_PEERCRED credentials are known, and their pid is
//      a live process whose effective uid is the credentials' uid (the pid
//      was not recycled by another user's process, and the sender did not
//      change user after connecting);
//   2. that process has the job library mapped: /proc/PID/maps names a file
//      whose basename starts with "libcorenoise-job-";
//   3. every CPU of the report is in the union of the affinities
//      (Cpus_allowed_list) of the live processes of that uid that have the
//      job library mapped, the sender's included;
//   4. no report with the same (sender pid, job id) was taken before (the
//      last kRememberedJobReports are remembered).
// The protocol (control_protocol.h) has already bounded every figure; the
// daemon checks that the CPUs are this node's.
//
// Why the union of the user's ranks, not the job's own ranks: the node's
// first rank reports the loss of all the node's ranks, so its own affinity
// (one core under --bind-to core) is narrower than the report. Which
// processes belong to the same job cannot be told cheaply and reliably
// from /proc: mpirun forks the ranks itself, hydra through a proxy, srun
// through slurmstepd, a wrapper script adds a shell per rank, and each
// launcher names the job in another environment variable (which only a
// reader with ptrace rights may see). A test that guessed wrong would drop
// genuine reports; the union bounds a forged one to CPUs where the user's
// own instrumented processes may run right now. A user running two jobs on
// one node can thus report one job's loss on the other's CPUs, and no more.
//
// Condition 2 is no barrier against a determined user, who can preload the
// job library into any program of theirs; it keeps reports to processes
// that are meant to send them. The barriers are 1 and 3: no report for
// another user's process, nor for CPUs none of the user's ranks may use.
//
// Reading another user's /proc/PID/maps needs ptrace read access: corenoised
// as root, or with CAP_SYS_PTRACE (docs/operations.md). Without it every
// report of another user is refused as not_a_rank.
//
// Every /proc read goes through `proc_root` (the daemon's proc-root), so a
// test can point it at a fixture tree. A missing or unreadable file is a
// refusal, never an exception. Cost: the sender's status and maps, and only
// when a CPU lies outside the sender's own affinity, one pass over
// /proc/*/status and the maps of that user's processes; reports come once
// per job per node.
//
// Threading: not thread-safe; the daemon calls it on its event-loop thread.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/control_handler.h"

namespace corenoise {

// Why a report was refused: the `reason` label of
// corenoise_job_reports_refused_total, a fixed set.
enum class JobRefusal {
  no_credentials,        // no SO_PEERCRED, or the sender is no longer a live process
  wrong_user,            // the process at the sender's pid is not the sender's user's
  not_a_rank,            // the sender has no job library mapped (or its maps are unreadable)
  cpu_outside_affinity,  // a CPU none of the user's ranks may run on
  duplicate,             // the same (sender pid, job id) was taken before
  invalid,               // the protocol refused the line, or a CPU is not this node's
};

inline constexpr JobRefusal kJobRefusals[] = {
    JobRefusal::no_credentials,       JobRefusal::wrong_user, JobRefusal::not_a_rank,
    JobRefusal::cpu_outside_affinity, JobRefusal::duplicate,  JobRefusal::invalid,
};
inline constexpr std::size_t kJobRefusalCount = std::size(kJobRefusals);

constexpr std::size_t index_of(JobRefusal refusal) { return static_cast<std::size_t>(refusal); }

// The label value: "no_credentials", ...
constexpr std::string_view to_string(JobRefusal refusal) {
  switch (refusal) {
    case JobRefusal::no_credentials:
      return "no_credentials";
    case JobRefusal::wrong_user:
      return "wrong_user";
    case JobRefusal::not_a_rank:
      return "not_a_rank";
    case JobRefusal::cpu_outside_affinity:
      return "cpu_outside_affinity";
    case JobRefusal::duplicate:
      return "duplicate";
    case JobRefusal::invalid:
      return "invalid";
  }
  return "?";
}

// The basename prefix of the in-job libraries (libcorenoise-job-mpich.so,
// libcorenoise-job-openmpi.so).
inline constexpr std::string_view kJobLibraryPrefix = "libcorenoise-job-";

// How many taken reports are remembered for refusing duplicates.
inline constexpr std::size_t kRememberedJobReports = 4096;

// What one process's /proc/PID/status says that admission uses.
struct ProcessStatus {
  uid_t effective_uid = 0;         // Uid: line, second field (what SO_PEERCRED records)
  std::vector<unsigned> affinity;  // Cpus_allowed_list, sorted
};

// The status of `pid` under `proc_root`; nullopt if the file is missing,
// unreadable, or lacks a well-formed Uid: or Cpus_allowed_list: line.
std::optional<ProcessStatus> read_process_status(const std::string& proc_root, pid_t pid);

// True if `proc_root`/PID/maps names a file whose basename starts with
// kJobLibraryPrefix; false if not, or if the file cannot be read.
bool maps_job_library(const std::string& proc_root, pid_t pid);

// The verdict on one report: accepted, or refused with a reason and a
// message for the client and the log ("job: refused (not_a_rank): ...").
struct JobAdmissionVerdict {
  std::optional<JobRefusal> refusal;  // nullopt: accepted
  std::string error;                  // empty when accepted
};

class JobAdmission {
 public:
  explicit JobAdmission(std::size_t remembered = kRememberedJobReports);

  // Checks conditions 1 to 4 of the header for `report` from `peer`,
  // reading under `proc_root`; an accepted report is remembered (so the
  // next with the same sender pid and job id is a duplicate). Never throws
  // but std::bad_alloc.
  JobAdmissionVerdict admit(const std::string& proc_root,
                            const std::optional<PeerCredentials>& peer, const JobRequest& report);

  std::size_t remembered() const { return order_.size(); }

 private:
  std::size_t capacity_;
  std::set<std::pair<pid_t, std::string>> taken_;
  std::deque<std::pair<pid_t, std::string>> order_;  // oldest first, to forget it first
};

}  // namespace corenoise
