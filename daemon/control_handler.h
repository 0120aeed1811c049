// The daemon's side of the control socket: what each command does. The
// control server (control_server.*) owns framing, size limits, JSON parsing,
// validation and permissions, and calls these methods on the event-loop
// thread only, so implementations need no locking of their own.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "daemon/control/control_requests.h"

namespace corenoise {

using Reply = std::function<void(nlohmann::json)>;  // call exactly once

class ControlHandler {
 public:
  virtual ~ControlHandler() = default;
  // Read-only. `everything` is false for a peer that is neither root nor in
  // the control group: what concerns other users (the last job's id) is
  // left out for it.
  virtual nlohmann::json status(bool everything) = 0;
  virtual nlohmann::json results() = 0;  // the `corenoise probe --json` document
  // Mutating (the server checks the caller may).
  virtual nlohmann::json pause(const PauseRequest& request) = 0;
  virtual nlohmann::json resume() = 0;
  virtual void run(const RunRequest& request, Reply reply) = 0;
  virtual nlohmann::json publish(const PublishRequest& request) = 0;
  virtual void calibrate(Reply reply) = 0;
  // Not restricted to root or the control group: the job's own ranks send
  // them, as the job's user. A job-start registers a rank; a job report may
  // only add to the job counters. The handler decides from `peer` (nullopt:
  // the kernel gave no credentials; its pidfd is valid during the call)
  // whether to take either (daemon/job_admission.h).
  virtual nlohmann::json job_start(const JobStartRequest& request,
                                   const std::optional<PeerCredentials>& peer) = 0;
  virtual nlohmann::json job(const JobRequest& request,
                             const std::optional<PeerCredentials>& peer) = 0;
  // A rank's figures at a live epoch of its job: may only set the running
  // job's series, within the same admission as `job`.
  virtual nlohmann::json job_live(const JobLiveRequest& request,
                                  const std::optional<PeerCredentials>& peer) = 0;
  // A rank's question about its job: what else ran on its job's CPUs, as
  // the daemon's tracer saw it, within the same admission as `job`.
  virtual nlohmann::json job_culprits(const JobCulpritsRequest& request,
                                      const std::optional<PeerCredentials>& peer) = 0;
  // A `job-start` or `job` line the protocol refused (`error` is the reply
  // the client gets), from `peer`: for the handler to count. Nothing by
  // default.
  virtual void job_malformed(std::string_view error, const std::optional<PeerCredentials>& peer) {
    static_cast<void>(error);
    static_cast<void>(peer);
  }
};

}  // namespace corenoise
