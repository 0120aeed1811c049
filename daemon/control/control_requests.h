// What travels over the control socket, decoded: the requests that
// control_protocol.* parses and renders, and who sent them. Plain data, so
// that the protocol, its clients (the `corenoise` command, the in-job
// library) and the daemon's handler (daemon/control_handler.h) share it.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "daemon/control/job_causes.h"
#include "probe/settings.h"

namespace corenoise {

struct PauseRequest {
  std::optional<double> seconds;  // nullopt: until resumed
};

struct RunRequest {
  std::optional<double> at_unix_seconds;  // nullopt: now
  std::vector<Mode> modes{Mode::isolated};
  bool wait = true;  // reply when the round is done (with its summary), not when it is scheduled
};

// One per-core cluster slowdown, as the collector computed it.
struct ClusterSlowdown {
  unsigned cpu = 0;
  RatioProbe probe = ratio_probe(ProbeKind::matmul);
  Mode mode = Mode::isolated;
  double ratio = 1;
};

struct PublishRequest {
  double published_unix_seconds = 0;
  nlohmann::json reference;  // the cluster reference, kept as given (shown by `status`)
  std::vector<ClusterSlowdown> slowdowns;
};

// What one CPU of this node lost while a job ran, as `corenoise job`
// measured it at the job's end.
struct JobCpuLoss {
  unsigned cpu = 0;               // OS index
  JobLostSeconds lost_seconds{};  // by cause; each 0 <= x <= the job's elapsed_seconds
};

// A job's report to one node (the protocol checks every bound of
// docs/control.md; the handler checks the CPUs are this node's, and that
// a rank sent it: daemon/job_admission.h).
struct JobRequest {
  std::string job_id;  // 1 to 128 printable ASCII characters; for the log and `status` only
  double ended_unix_seconds = 0;
  double elapsed_seconds = 1;    // wall time of the job, > 0
  unsigned ranks = 1;            // ranks of the whole job, >= 1
  std::vector<JobCpuLoss> cpus;  // each cpu at most once
};

// A rank's announcement at MPI_Init, on the node it runs on: the daemon
// notes when it saw the rank start, so that the rank's report at the job's
// end can claim no more time than that (daemon/job_admission.h).
struct JobStartRequest {
  std::string job_id;  // as in JobRequest; the report must name the same
  // The rank's line of /proc/self/cgroup that names a Slurm job's cgroup
  // (daemon/control/slurm_cgroup.h); empty when it runs in none.
  std::string cgroup;
};

// A rank's figures at one live epoch of its job (`corenoise job`'s live
// reduction): its share of the job so far, sent to its node's daemon after
// each epoch, for the running job's series (docs/metrics.md, "The running
// job"). Bounded by the protocol; taken only from a registered rank
// (daemon/job_admission.h).
struct JobLiveRequest {
  std::string job_id;            // as in its job-start
  long epoch = 1;                // >= 1
  double elapsed_seconds = 1;    // the job's wall time so far, > 0
  double interval_seconds = 30;  // the epochs' cadence
  unsigned ranks = 1;            // of the whole job
  unsigned rank = 0;             // this rank's, < ranks
  // The waiting this rank caused the others so far, <= elapsed x (ranks - 1).
  double wait_caused_seconds = 0;
  std::optional<JobCause> cause;  // its main cause, where it is late
  // The epoch's own window (since the previous epoch; 0: not sent): the
  // waiting this rank caused in it, <= window x (ranks - 1), and its main
  // cause there, where it was late in it.
  double window_seconds = 0;  // <= elapsed_seconds
  double window_wait_caused_seconds = 0;
  std::optional<JobCause> window_cause;
};

// A rank's question at a reduction of its job: what else ran on its job's
// CPUs on this node, as the daemon's tracer saw it (daemon/job_tracer.h).
// Taken only from a registered rank (daemon/job_admission.h).
struct JobCulpritsRequest {
  std::string job_id;  // as in its job-start
};

// Who is on the other end of a connection: SO_PEERCRED of the accepted
// socket, i.e. the process that called connect() (its process id, in the
// daemon's pid namespace) and its effective uid and gid at that moment.
struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
  // A pidfd of that process (SO_PEERPIDFD, or pidfd_open at accept), owned
  // by the connection: it tells whether the pid is still that process.
  // -1 where the kernel gave none.
  int pidfd = -1;
};

}  // namespace corenoise
