// The control-socket protocol between corenoised and the `corenoise` command:
// newline-delimited JSON, one request object per line, one reply object per
// line, replies in request order. docs/control.md is the contract (every
// command, field, reply and error); this file is its only implementation.
//
// Pure: no I/O, no clock, no global state, so every function here is safe
// to call from any thread and to feed arbitrary bytes (a fuzzer's target).
// Parsing never throws anything but ProtocolError (and std::bad_alloc).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>

#include "daemon/control/control_requests.h"

namespace corenoise {

// Where corenoised listens unless configured otherwise (the `corenoise`
// command also reads $CORENOISE_SOCKET).
inline constexpr const char* kDefaultControlSocket = "/run/corenoise/ctl.sock";
// The user socket's file name, beside the control socket unless configured
// otherwise: every local user may connect to it, for the commands that
// need no privilege (docs/control.md, "Where: two sockets").
inline constexpr const char* kUserSocketName = "user.sock";

// The user socket beside `control_socket`: "/run/corenoise/ctl.sock" gives
// "/run/corenoise/user.sock", "ctl.sock" gives "user.sock".
std::string user_socket_beside(std::string_view control_socket);

// Requests without fields, as tags for the variant.
struct StatusRequest {};
struct ResultsRequest {};
struct ResumeRequest {};
struct CalibrateRequest {};

using ControlRequest = std::variant<StatusRequest, ResultsRequest, PauseRequest, ResumeRequest,
                                    RunRequest, PublishRequest, CalibrateRequest, JobRequest,
                                    JobStartRequest, JobLiveRequest, JobCulpritsRequest>;

// Bounds of a `job` report. Every local user who can connect may send one
// (the daemon takes it only from a rank: daemon/job_admission.h), so each
// bounds what a report can add: no CPU loses more than the job's wall time
// to all causes together, and no job is reported as longer than ~116 days. 4096 CPUs
// is more than any node has today.
inline constexpr std::size_t kMaxJobCpus = 4096;
inline constexpr std::size_t kMaxJobIdChars = 128;
inline constexpr double kMaxJobElapsedSeconds = 1e7;
// A job's ranks, at most (a `job-live` line's rank is below it).
inline constexpr unsigned kMaxJobRanks = 10'000'000;
// A live epoch's cadence: `corenoise job --live-interval`'s range.
inline constexpr double kMinLiveIntervalSeconds = 1;
inline constexpr double kMaxLiveIntervalSeconds = 86400;

// A request line the daemon refuses; what() is the message for the client,
// naming the command, the field and what was expected.
struct ProtocolError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
  // The request's "command" where the line was an object naming one in a
  // string ("job"), else empty: so the server can count refused reports.
  std::string command;
};

// Deepest JSON nesting a request may have. The reference of a publish is
// kept and echoed by `status`, and serializing JSON recurses, so a deep
// value must be refused at the door rather than overflow the daemon's stack.
inline constexpr int kMaxRequestDepth = 32;
// The same for a reply, which the client dumps (--json) and echoes in
// errors. Replies nest the results document and a publish's reference (at
// most kMaxRequestDepth), so twice that is ample.
inline constexpr int kMaxReplyDepth = 2 * kMaxRequestDepth;

// One request line (without its '\n'; a trailing '\r' is tolerated).
// Unknown commands and unknown fields are errors, so a typo never silently
// falls back to a default. Throws ProtocolError.
ControlRequest parse_request(std::string_view line);
// The same, from an already parsed value (not a parse_request overload: a
// string converts to json, and the call would be ambiguous).
ControlRequest request_from_json(const nlohmann::json& request);

// The request as sent on the wire (what parse_request accepts). Throws
// std::invalid_argument for values the protocol cannot express (e.g. a
// RunRequest whose modes are not isolated, concurrent or both, or a
// non-finite number).
nlohmann::json to_json(const ControlRequest& request);

// "status", "pause", ... as on the wire.
std::string_view command_name(const ControlRequest& request);
// True for pause, resume, run, publish and calibrate: the commands only root
// or the control group may send, on the control socket only. False for
// status and results, which only read, and for job-start, job-live, job-culprits and job, which the
// job's own ranks send as the job's user, which can only add bounded
// amounts to the job counters, and which the daemon takes only within what
// the kernel says of the sender (daemon/job_admission.h).
bool needs_privilege(const ControlRequest& request);

// Replies. A handler's reply fields become {"ok":true, ...fields}; a reply
// that already has "ok" is passed through, so a handler can refuse
// ({"ok":false,"error":...}); a non-object result is wrapped as "result".
nlohmann::json ok_reply(nlohmann::json fields = nlohmann::json::object());
nlohmann::json error_reply(std::string_view message);

// `value` as one line with its '\n'. Never throws on content: strings that
// are not valid UTF-8 are repaired (U+FFFD), so a bad byte in some handler's
// message cannot turn a reply into an exception.
std::string encode_line(const nlohmann::json& value);

// A reply line as the client reads it: an object with a boolean "ok" (and a
// string "error" when ok is false), nested at most kMaxReplyDepth. Throws
// ProtocolError otherwise.
nlohmann::json parse_reply(std::string_view line);

}  // namespace corenoise
