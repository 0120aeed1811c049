#include "collector/cli/daemon_commands.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "collector/cli/command_line.h"
#include "collector/cli/exit_codes.h"
#include "daemon/control/control_client.h"
#include "daemon/control/control_protocol.h"
#include "daemon/control/control_replies.h"
#include "probe/units.h"
#include "probe/verdict_text.h"
#include "probe/wall_clock.h"

namespace corenoise {
namespace {

using nlohmann::json;

constexpr const char* kCommonOptions = R"(
Options:
  --socket PATH       corenoised's control socket (default: $CORENOISE_SOCKET,
                      else /run/corenoise/ctl.sock)
  --json              print the daemon's reply as JSON (schema: docs/control.md)
  --timeout SECONDS   how long to wait for the reply (default: 10; run and
                      calibrate: 120, plus the wait until --at)
  --help              this text
)";

struct CommandHelp {
  const char* name;
  const char* usage;
};

constexpr CommandHelp kHelp[] = {
    {"status", R"(Usage: corenoise status [OPTIONS]

Shows what this node's corenoised knows: whether probing is paused, its
latest rounds, how many CPUs are in each state, and which are unhealthy or
transient, each with its latest round's own verdict and how many of its last
rounds were unhealthy. States are persistent: a CPU is unhealthy only when
persist-bad of its last persist-rounds measured rounds were (corenoised
--help), transient when fewer were.

Exit status: 0 no CPU persistently unhealthy (transient ones included),
1 error (daemon unreachable), 2 the daemon reports unhealthy CPUs.
)"},
    {"pause", R"(Usage: corenoise pause [--seconds N] [OPTIONS]

Pauses corenoised's periodic rounds (e.g. while a benchmark runs), for N
seconds or until `corenoise resume`. Needs root or the daemon's control group.

  --seconds N         resume by itself after N seconds (N > 0)
)"},
    {"resume", R"(Usage: corenoise resume [OPTIONS]

Resumes corenoised's periodic rounds. Needs root or the daemon's control group.
)"},
    {"run", R"(Usage: corenoise run [--at UNIX_SECONDS] [--mode MODE] [--no-wait] [OPTIONS]

Asks corenoised for one round now (or at a given time, so that the daemons
of many nodes measure together) and prints its summary. Needs root or the
daemon's control group.

Exit status: 0 no CPU persistently unhealthy after the round (or scheduled,
with --no-wait), 1 error, 2 unhealthy CPUs. It follows the persistent state,
as `status` does: a CPU bad in this round alone is transient (exit 0) until
persist-bad of its last persist-rounds measured rounds were bad.

  --at UNIX_SECONDS   start the round at this time (default: now)
  --mode MODE         isolated (default), concurrent or both
  --no-wait           return once the round is scheduled
)"},
    {"calibrate", R"(Usage: corenoise calibrate [OPTIONS]

Asks corenoised to measure every core and keep the result as each core's
own baseline (the reference of corenoise_baseline_slowdown_ratio). Run it on
a quiet, healthy node. Needs root or the daemon's control group.
)"},
};

const CommandHelp* find_help(std::string_view command) {
  for (const auto& help : kHelp) {
    if (command == help.name) return &help;
  }
  return nullptr;
}

double parse_number(const std::string& option, const std::string& text, bool positive) {
  double value = 0;
  std::size_t used = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(value) ||
      (positive ? !(value > 0) : !(value >= 0))) {
    throw UsageError("--" + option + ": expected a number " + (positive ? "> 0" : ">= 0") +
                     ", got '" + text + "'");
  }
  return value;
}

// "120 CPUs: 118 ok, 1 noisy, 1 throttled", the states a CPU is in
// (alphabetical, as the reply's object has them); a run's reply counts no
// CPUs, so its line starts at the states.
std::string states_text(std::optional<std::size_t> cpus, const CpuStates& states) {
  std::string out = cpus ? std::to_string(*cpus) + " CPUs" : std::string();
  std::string counted;
  for (const auto& [state, count] : states.states) {
    if (count == 0) continue;
    counted += (counted.empty() ? "" : ", ") + std::to_string(count) + " " + state;
  }
  if (!counted.empty()) out += (out.empty() ? "" : ": ") + counted;
  return out.empty() ? "no figures yet" : out;
}

// "  cpu 3  noisy (round: ok, 2 of 3 rounds unhealthy): CAUSE", for the
// unhealthy CPUs, then the transient ones.
void print_unhealthy(std::ostream& out, const CpuStates& states) {
  for (const auto* list : {&states.unhealthy, &states.transient}) {
    for (const CpuVerdictEntry& core : *list) {
      out << "  cpu " << core.cpu << "  " << core.state << " (round: " << core.round_state << ", "
          << core.unhealthy_rounds << " of " << core.rounds << " rounds unhealthy)";
      if (const std::string cause = cause_text(core.cause); !cause.empty()) out << ": " << cause;
      out << '\n';
    }
  }
}

// "named culprits (last round, share of each CPU's detour windows):" and a
// line per traced CPU; where the daemon's trace setting asked for tracing
// and it was not possible, why.
void print_culprits(std::ostream& out, const StatusReply& reply) {
  if (reply.trace.rfind("unavailable", 0) == 0) out << "named culprits: " << reply.trace << '\n';
  if (!reply.culprits || reply.culprits->empty()) return;
  out << "named culprits (last round, share of each CPU's detour windows):\n";
  for (const CpuCulprits& cpu : *reply.culprits) {
    out << "  cpu " << cpu.cpu << ":";
    const char* separator = " ";
    for (const CulpritShare& c : cpu.top) {
      out << separator << compact_percent_text(c.share) << ' ' << c.text;
      separator = ", ";
    }
    out << '\n';
  }
}

// "corenoised 0.1.0, up 3.5 min" and "probing: active, next round in 40 s".
void print_daemon(std::ostream& out, const StatusReply& reply, double now) {
  out << "corenoised " << reply.version << ", up "
      << duration_text(now - reply.started_unix_seconds) << '\n';
  out << "probing: ";
  if (reply.paused) {
    if (const auto until = reply.paused_until_unix_seconds) {
      out << "paused until " << local_time_text(*until) << " (another "
          << duration_text(*until - now) << ")";
    } else {
      out << "paused until resumed";
    }
  } else {
    out << (reply.round_running ? "a round is running" : "active");
    if (const auto next = reply.next_round_unix_seconds) {
      out << ", next round " << (*next > now ? "in " + duration_text(*next - now) : "now");
    }
  }
  out << '\n';
}

// A line per mode's rounds, the cluster reference's age, and the cores'.
void print_rounds(std::ostream& out, const StatusReply& reply, double now) {
  for (const auto& [mode, rounds] : reply.rounds) {
    out << mode << " rounds: " << rounds.count;
    if (const auto last = rounds.last_unix_seconds) {
      out << ", last " << duration_text(now - *last) << " ago";
    }
    if (const auto took = rounds.last_duration_seconds) out << ", took " << duration_text(*took);
    out << '\n';
  }
  if (reply.cluster) {
    out << "cluster reference: published "
        << duration_text(now - reply.cluster->published_unix_seconds) << " ago\n";
  }
  if (const auto fresh = reply.not_yet_probed) {
    out << "cores: " << *fresh << " CPUs, not yet probed";
    if (const auto next = reply.next_round_unix_seconds) {
      out << ": the first round comes "
          << (*next > now ? "in " + duration_text(*next - now) : "now");
    }
    out << '\n';
  } else {
    out << "cores: " << states_text(reply.cpus, reply.cpu_states) << '\n';
  }
}

struct Options {
  std::string socket;
  bool json = false;
  std::optional<double> timeout_seconds;
  std::optional<double> seconds;  // pause
  std::optional<double> at;       // run
  std::string mode = "isolated";  // run
  bool wait = true;               // run
};

Options parse(const std::string& command, const std::vector<std::string>& args) {
  std::set<std::string> values{"socket", "timeout"};
  std::set<std::string> flags{"json", "help"};
  if (command == "pause") values.insert("seconds");
  if (command == "run") {
    values.insert({"at", "mode"});
    flags.insert("no-wait");
  }
  const ParsedArgs parsed = parse_args(args, values, flags);
  if (!parsed.positional.empty()) {
    throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  }
  Options options;
  const char* env = std::getenv("CORENOISE_SOCKET");
  options.socket = env != nullptr && *env != '\0' ? env : kDefaultControlSocket;
  for (const auto& [name, value] : parsed.options) {
    if (name == "socket") {
      if (value.empty()) throw UsageError("--socket: expected a path");
      options.socket = value;
    } else if (name == "json") {
      options.json = true;
    } else if (name == "timeout") {
      options.timeout_seconds = parse_number(name, value, true);
    } else if (name == "seconds") {
      options.seconds = parse_number(name, value, true);
    } else if (name == "at") {
      options.at = parse_number(name, value, false);
    } else if (name == "mode") {
      if (value != "isolated" && value != "concurrent" && value != "both") {
        throw UsageError("--mode: expected isolated, concurrent or both, got '" + value + "'");
      }
      options.mode = value;
    } else if (name == "no-wait") {
      options.wait = false;
    }
  }
  return options;
}

ControlRequest make_request(const std::string& command, const Options& options) {
  if (command == "status") return StatusRequest{};
  if (command == "resume") return ResumeRequest{};
  if (command == "calibrate") return CalibrateRequest{};
  if (command == "pause") return PauseRequest{options.seconds};
  RunRequest run;
  run.at_unix_seconds = options.at;
  run.wait = options.wait;
  if (options.mode == "concurrent") run.modes = {Mode::concurrent};
  if (options.mode == "both") run.modes = {Mode::isolated, Mode::concurrent};
  return run;
}

std::chrono::milliseconds reply_timeout(const ControlRequest& request, const Options& options) {
  using std::chrono::milliseconds;
  auto ms = [](double seconds) { return milliseconds(static_cast<long long>(seconds * 1000)); };
  if (options.timeout_seconds) return ms(*options.timeout_seconds);
  if (const auto* run = std::get_if<RunRequest>(&request)) {
    if (!run->wait) return std::chrono::seconds(10);
    // The round starts at --at; the reply comes when it is done.
    const double until = run->at_unix_seconds ? *run->at_unix_seconds - unix_seconds_now() : 0;
    return default_reply_timeout(request) + ms(std::clamp(until, 0.0, 365.0 * 86400));
  }
  return default_reply_timeout(request);
}

// The socket to send `request` to: the control socket, or for a caller who
// may not open it and a command that needs no privilege, the user socket
// beside it (docs/control.md, "Where: two sockets").
std::string socket_for(const ControlRequest& request, const std::string& control_socket) {
  if (needs_privilege(request) || ::access(control_socket.c_str(), W_OK) == 0 || errno != EACCES) {
    return control_socket;
  }
  std::string user = user_socket_beside(control_socket);
  return ::access(user.c_str(), W_OK) == 0 ? user : control_socket;
}

// What a reply that is not a round's says to a person.
void print_acknowledgement(const std::string& command, const Options& options, const json& reply,
                           double now) {
  if (command == "run") {
    const auto scheduled = reply.get<ScheduledReply>();
    std::cout << "corenoise: " << options.mode << " round scheduled for "
              << local_time_text(scheduled.scheduled_unix_seconds) << '\n';
  } else if (command == "pause") {
    const auto until = reply.get<PauseReply>().paused_until_unix_seconds;
    std::cout << "corenoise: probing paused "
              << (until ? "until " + local_time_text(*until) + " (for " +
                              duration_text(*until - now) + ")"
                        : std::string("until resumed"))
              << '\n';
  } else if (command == "resume") {
    std::cout << "corenoise: probing resumed\n";
  }
}

// Prints an accepted reply for a person (nothing with --json, which has
// printed it whole); the exit status it gives.
int show_reply(const std::string& command, const Options& options, const json& reply) {
  const double now = unix_seconds_now();
  if (command == "status") {
    const auto status = reply.get<StatusReply>();
    if (!options.json) print_status(std::cout, status, now);
    return status.cpu_states.healthy ? kExitHealthy : kExitUnhealthy;
  }
  if (command == "calibrate" || (command == "run" && options.wait)) {
    const auto run = reply.get<RunReply>();
    if (!options.json) print_run(std::cout, run);
    if (command == "calibrate") {
      if (!options.json) {
        std::cout << "corenoise: calibrated: these figures are now each core's baseline\n";
      }
      return kExitHealthy;
    }
    return run.cpu_states.healthy ? kExitHealthy : kExitUnhealthy;
  }
  if (!options.json) print_acknowledgement(command, options, reply, now);
  return kExitHealthy;
}

int execute(const std::string& command, const Options& options) {
  const ControlRequest request = make_request(command, options);
  const ControlClient client(socket_for(request, options.socket));
  const json reply = client.request(request, reply_timeout(request, options));
  if (options.json) std::cout << reply.dump(2) << '\n';
  if (!reply.value("ok", false)) {
    std::cerr << "corenoise " << command << ": " << reply.value("error", std::string("refused"))
              << '\n';
    return kExitFailure;
  }
  try {
    return show_reply(command, options, reply);
  } catch (const json::exception& e) {
    throw std::runtime_error("the daemon's " + command + " reply is not as docs/control.md says (" +
                             e.what() + ")");
  }
}

}  // namespace

bool is_daemon_command(std::string_view command) { return find_help(command) != nullptr; }

void print_status(std::ostream& out, const StatusReply& reply, double now) {
  print_daemon(out, reply, now);
  print_rounds(out, reply, now);
  if (reply.access == "user") {
    out << "(an ordinary user's view: the last job's id is left out; pause, resume, run and "
           "calibrate need root or the control group)\n";
  }
  print_unhealthy(out, reply.cpu_states);
  print_culprits(out, reply);
  out << "corenoise: "
      << (reply.not_yet_probed       ? "no verdict yet"
          : reply.cpu_states.healthy ? "no CPU persistently unhealthy"
                                     : "unhealthy CPUs found")
      << '\n';
}

void print_run(std::ostream& out, const RunReply& reply) {
  for (const RoundDone& round : reply.rounds) {
    out << round.mode << " round on " << round.cpus << " CPUs took "
        << duration_text(round.duration_seconds) << '\n';
  }
  print_unhealthy(out, reply.cpu_states);
  out << "corenoise: " << states_text(std::nullopt, reply.cpu_states);
  if (!reply.cpu_states.healthy) out << "; unhealthy CPUs found";
  out << '\n';
}

int run_daemon_command(const std::string& command, const std::vector<std::string>& args) {
  const CommandHelp* help = find_help(command);
  if (help == nullptr) {
    std::cerr << "corenoise: unknown command '" << command << "'\n";
    return kExitFailure;
  }
  try {
    if (std::find(args.begin(), args.end(), "--help") != args.end()) {
      std::cout << help->usage << kCommonOptions;
      return kExitHealthy;
    }
    return execute(command, parse(command, args));
  } catch (const UsageError& e) {
    std::cerr << "corenoise " << command << ": " << e.what() << " (see corenoise " << command
              << " --help)\n";
  } catch (const std::exception& e) {
    std::cerr << "corenoise " << command << ": " << e.what() << '\n';
  }
  return kExitFailure;
}

}  // namespace corenoise
