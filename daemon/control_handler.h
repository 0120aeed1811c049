// The daemon's side of the control socket: what each command does. The
// control server (control_server.*) owns framing, size limits, JSON parsing,
// validation and permissions, and calls these methods on the event-loop
// thread only, so implementations need no locking of their own.
#pragma once

#include <sys/types.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/job_causes.h"
#include "probe/settings.h"

namespace corenoise {

using Reply = std::function<void(nlohmann::json)>;  // call exactly once

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
  RatioProbe probe = RatioProbe::matmul;
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

// Who is on the other end of a connection: SO_PEERCRED of the accepted
// socket, i.e. the process that called connect() (its process id, in the
// daemon's pid namespace) and its effective uid and gid at that moment.
struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
};

class ControlHandler {
 public:
  virtual ~ControlHandler() = default;
  // Read-only.
  virtual nlohmann::json status() = 0;
  virtual nlohmann::json results() = 0;  // the `corenoise probe --json` document
  // Mutating (the server checks the caller may).
  virtual nlohmann::json pause(const PauseRequest& request) = 0;
  virtual nlohmann::json resume() = 0;
  virtual void run(const RunRequest& request, Reply reply) = 0;
  virtual nlohmann::json publish(const PublishRequest& request) = 0;
  virtual void calibrate(Reply reply) = 0;
  // Not restricted to root or the control group: the job's own ranks send
  // it, as the job's user. It may only add to the job counters, and the
  // handler decides from `peer` (nullopt: the kernel gave no credentials)
  // whether the sender is a rank that may report (daemon/job_admission.h).
  virtual nlohmann::json job(const JobRequest& request,
                             const std::optional<PeerCredentials>& peer) = 0;
  // A `job` line the protocol refused (`error` is the reply the client
  // gets), from `peer`: for the handler to count. Nothing by default.
  virtual void job_malformed(std::string_view error, const std::optional<PeerCredentials>& peer) {
    static_cast<void>(error);
    static_cast<void>(peer);
  }
};

}  // namespace corenoise
