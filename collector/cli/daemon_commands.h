// The `corenoise` commands that talk to this node's corenoised over its
// control socket (docs/control.md): status, pause, resume, run, calibrate.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/control/control_replies.h"

namespace corenoise {

// True for status, pause, resume, run and calibrate.
bool is_daemon_command(std::string_view command);

// Runs `command` with its arguments. Exit codes (rtla's scheme): 0 done and
// healthy, 1 error (daemon unreachable, request refused, bad input), 2 status
// or a waited-for run reports unhealthy cores.
int run_daemon_command(const std::string& command, const std::vector<std::string>& args);

// The human view of a status / completed-run reply (docs/control.md).
// `now_unix_seconds` makes "40 s ago" testable.
void print_status(std::ostream& out, const StatusReply& reply, double now_unix_seconds);
void print_run(std::ostream& out, const RunReply& reply);

}  // namespace corenoise
