// The `corenoise` command's side of the control socket: one blocking
// request/reply exchange with the local corenoised (docs/control.md).
//
// Thread-safety: a ControlClient holds only its options; request() opens its
// own connection each call, so one client may be used from several threads.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "daemon/control/control_protocol.h"

namespace corenoise {

// How long a reply may take by default: run and calibrate measure first
// (120 s), everything else answers at once (10 s). A `run` scheduled for
// later should add the wait until then (the `corenoise run` command does).
std::chrono::milliseconds default_reply_timeout(const ControlRequest& request);

class ControlClient {
 public:
  explicit ControlClient(std::string socket_path,
                         std::chrono::milliseconds connect_timeout = std::chrono::seconds(5));

  // Connects, sends `request` as one line, reads one reply line and returns
  // it parsed. A reply with "ok": false is returned, not thrown: it is the
  // daemon's answer. Throws std::runtime_error, naming the socket path, when
  // there is no answer: no such socket, permission denied, connection
  // refused, timeout, the daemon closed the connection, or a malformed reply.
  nlohmann::json request(const ControlRequest& request) const;
  nlohmann::json request(const ControlRequest& request, std::chrono::milliseconds timeout) const;
  // The same with a raw request object (tests, and requests this build's
  // parser would refuse). `timeout` covers sending and the reply.
  nlohmann::json request(const nlohmann::json& request, std::chrono::milliseconds timeout) const;

  // A job's report, as `corenoise job` sends it from MPI_Finalize: waits at
  // most `timeout` to connect (at most this client's connect timeout) and
  // `timeout` for the reply, so an absent or stuck daemon costs the job
  // that and no more. Returns and throws as request(); a job must catch
  // the exception. The job's user can connect only where the socket lets
  // it (socket-mode 0666, or the control group): docs/control.md.
  nlohmann::json report_job(const JobRequest& report, std::chrono::milliseconds timeout) const;

  const std::string& socket_path() const { return socket_path_; }

 private:
  std::string socket_path_;
  std::chrono::milliseconds connect_timeout_;
};

}  // namespace corenoise
