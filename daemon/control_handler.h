// The daemon's side of the control socket: what each command does. The
// control server (control_server.*) owns framing, size limits, JSON parsing,
// validation and permissions, and calls these methods on the event-loop
// thread only, so implementations need no locking of their own.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

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
};

}  // namespace corenoise
