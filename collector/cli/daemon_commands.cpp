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
#include "probe/units.h"
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

std::string local_time_text(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  if (localtime_r(&t, &tm) == nullptr) return std::to_string(unix_seconds);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

std::optional<double> number(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::optional<std::string> text(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// "120 CPUs: 118 ok, 1 noisy, 1 throttled" from a reply's "cpus" and "states".
std::string states_text(const json& reply) {
  std::string out;
  if (const auto cpus = number(reply, "cpus")) {
    out = std::to_string(static_cast<long>(*cpus)) + " CPUs";
  }
  std::string states;
  if (reply.contains("states") && reply["states"].is_object()) {
    for (const auto& [state, count] : reply["states"].items()) {
      if (!count.is_number() || count.get<double>() == 0) continue;
      states += (states.empty() ? "" : ", ") + std::to_string(count.get<long>()) + " " + state;
    }
  }
  if (!states.empty()) out += (out.empty() ? "" : ": ") + states;
  return out.empty() ? "no figures yet" : out;
}

std::optional<bool> healthy(const json& reply) {
  const auto it = reply.find("healthy");
  if (it == reply.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

// "  cpu 3  noisy (round: ok, 2 of 3 rounds unhealthy): CAUSE", for the
// reply's unhealthy CPUs, then its transient ones.
void print_unhealthy(std::ostream& out, const json& reply) {
  for (const char* list : {"unhealthy", "transient"}) {
    if (!reply.contains(list) || !reply[list].is_array()) continue;
    for (const json& core : reply[list]) {
      const auto cpu = number(core, "cpu");
      out << "  cpu " << (cpu ? std::to_string(static_cast<long>(*cpu)) : "?") << "  "
          << text(core, "state").value_or("?");
      std::string detail;
      if (const auto mode = text(core, "mode")) detail = *mode;
      if (const auto round = text(core, "round_state")) {
        detail += (detail.empty() ? "" : ", ") + std::string("round: ") + *round;
      }
      const auto bad = number(core, "unhealthy_rounds"), rounds = number(core, "rounds");
      if (bad && rounds) {
        detail += (detail.empty() ? "" : ", ") + std::to_string(static_cast<long>(*bad)) + " of " +
                  std::to_string(static_cast<long>(*rounds)) + " rounds unhealthy";
      }
      if (!detail.empty()) out << " (" << detail << ")";
      if (const auto cause = text(core, "cause"); cause && !cause->empty()) out << ": " << *cause;
      out << '\n';
    }
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

int execute(const std::string& command, const Options& options) {
  const ControlRequest request = make_request(command, options);
  const ControlClient client(socket_for(request, options.socket));
  const json reply = client.request(request, reply_timeout(request, options));
  const bool ok = reply.value("ok", false);
  if (options.json) std::cout << reply.dump(2) << '\n';
  if (!ok) {
    std::cerr << "corenoise " << command << ": " << reply.value("error", std::string("refused"))
              << '\n';
    return kExitFailure;
  }
  const double now = unix_seconds_now();
  const bool waited_run = command == "run" && options.wait;
  if (!options.json) {
    if (command == "status") {
      print_status(std::cout, reply, now);
    } else if (waited_run) {
      print_run(std::cout, reply);
    } else if (command == "run") {
      const auto at = number(reply, "scheduled_unix_seconds");
      std::cout << "corenoise: " << options.mode << " round scheduled"
                << (at ? " for " + local_time_text(*at) : std::string()) << '\n';
    } else if (command == "pause") {
      const auto until = number(reply, "paused_until_unix_seconds");
      std::cout << "corenoise: probing paused "
                << (until ? "until " + local_time_text(*until) + " (for " +
                                duration_text(*until - now) + ")"
                          : std::string("until resumed"))
                << '\n';
    } else if (command == "resume") {
      std::cout << "corenoise: probing resumed\n";
    } else if (command == "calibrate") {
      print_run(std::cout, reply);
      std::cout << "corenoise: calibrated: these figures are now each core's baseline\n";
    }
  }
  if (command == "status" || waited_run) {
    if (healthy(reply) == false) return kExitUnhealthy;
  }
  return kExitHealthy;
}

}  // namespace

bool is_daemon_command(std::string_view command) { return find_help(command) != nullptr; }

// "named culprits (last round, share of each CPU's detour windows):" and a
// line per traced CPU; where the daemon's trace setting asked for tracing
// and it was not possible, why.
void print_culprits(std::ostream& out, const json& reply) {
  const auto trace = text(reply, "trace");
  if (trace && trace->rfind("unavailable", 0) == 0) out << "named culprits: " << *trace << '\n';
  if (!reply.contains("culprits") || !reply["culprits"].is_array() || reply["culprits"].empty())
    return;
  out << "named culprits (last round, share of each CPU's detour windows):\n";
  for (const json& cpu : reply["culprits"]) {
    const auto index = number(cpu, "cpu");
    out << "  cpu " << (index ? std::to_string(static_cast<long>(*index)) : "?") << ":";
    const char* separator = " ";
    if (cpu.contains("top") && cpu["top"].is_array()) {
      for (const json& c : cpu["top"]) {
        char share[16];
        std::snprintf(share, sizeof share, "%.1f%%", 100 * number(c, "share").value_or(0));
        out << separator << share << ' ' << text(c, "text").value_or("?");
        separator = ", ";
      }
    }
    out << '\n';
  }
}

void print_status(std::ostream& out, const json& reply, double now) {
  out << "corenoised";
  if (const auto version = text(reply, "version")) out << ' ' << *version;
  if (const auto host = text(reply, "hostname"); host && !host->empty()) out << " on " << *host;
  if (const auto started = number(reply, "started_unix_seconds")) {
    out << ", up " << duration_text(now - *started);
  }
  out << '\n';

  out << "probing: ";
  if (reply.value("paused", false)) {
    if (const auto until = number(reply, "paused_until_unix_seconds")) {
      out << "paused until " << local_time_text(*until) << " (another "
          << duration_text(*until - now) << ")";
    } else {
      out << "paused until resumed";
    }
  } else {
    out << (reply.value("round_running", false) ? "a round is running" : "active");
    if (const auto next = number(reply, "next_round_unix_seconds")) {
      out << ", next round " << (*next > now ? "in " + duration_text(*next - now) : "now");
    }
  }
  out << '\n';

  if (reply.contains("rounds") && reply["rounds"].is_object()) {
    for (const auto& [mode, stats] : reply["rounds"].items()) {
      const auto count = number(stats, "count");
      out << mode << " rounds: " << (count ? static_cast<long>(*count) : 0);
      if (const auto last = number(stats, "last_unix_seconds")) {
        out << ", last " << duration_text(now - *last) << " ago";
      }
      if (const auto took = number(stats, "last_duration_seconds")) {
        out << ", took " << duration_text(*took);
      }
      out << '\n';
    }
  }
  if (reply.contains("cluster") && reply["cluster"].is_object()) {
    if (const auto published = number(reply["cluster"], "published_unix_seconds")) {
      out << "cluster reference: published " << duration_text(now - *published) << " ago\n";
    }
  }
  if (const auto fresh = number(reply, "not_yet_probed")) {
    out << "cores: " << static_cast<long>(*fresh) << " CPUs, not yet probed";
    if (const auto next = number(reply, "next_round_unix_seconds")) {
      out << ": the first round comes "
          << (*next > now ? "in " + duration_text(*next - now) : "now");
    }
    out << '\n';
  } else {
    out << "cores: " << states_text(reply) << '\n';
  }
  if (text(reply, "access") == "user") {
    out << "(an ordinary user's view: the last job's id is left out; pause, resume, run and "
           "calibrate need root or the control group)\n";
  }
  print_unhealthy(out, reply);
  print_culprits(out, reply);
  const auto ok = healthy(reply);
  out << "corenoise: "
      << (reply.contains("not_yet_probed") ? "no verdict yet"
          : ok == std::nullopt             ? "health unknown"
          : *ok                            ? "no CPU persistently unhealthy"
                                           : "unhealthy CPUs found")
      << '\n';
}

void print_run(std::ostream& out, const json& reply) {
  if (reply.contains("rounds") && reply["rounds"].is_array()) {
    for (const json& round : reply["rounds"]) {
      out << text(round, "mode").value_or("?") << " round";
      if (const auto cpus = number(round, "cpus")) {
        out << " on " << static_cast<long>(*cpus) << " CPUs";
      }
      if (const auto took = number(round, "duration_seconds")) {
        out << " took " << duration_text(*took);
      }
      out << '\n';
    }
  }
  print_unhealthy(out, reply);
  out << "corenoise: " << states_text(reply);
  if (healthy(reply) == false) out << "; unhealthy CPUs found";
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
