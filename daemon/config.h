// corenoised's configuration: every probe option of `corenoise probe` plus
// the daemon's own, with the same names on the command line (--NAME VALUE)
// and in the config file (NAME = VALUE). The file is read first; the
// command line overrides it. Invalid input is an error naming the file,
// line, option, value and what was expected — a misspelt key included.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "daemon/job_limits.h"
#include "daemon/persistence.h"
#include "probe/settings.h"

namespace corenoise {

struct WebConfig;  // daemon/web_config.h

enum class LogLevel { error = 3, warning = 4, notice = 5, info = 6, debug = 7 };
enum class BusyPolicy { skip, probe };

struct DaemonConfig {
  std::string config_path = "/etc/corenoise/corenoised.conf";
  bool config_path_given = false;  // a missing default file is fine; a missing given one is not
  std::string listen = "0.0.0.0:19847";
  // The exporter's TLS and basic auth (web-config-file, or node_exporter's
  // --web.config.file): the path, and the file as load_config() read it;
  // empty and null for plain HTTP open to all.
  std::string web_config_file;
  std::shared_ptr<const WebConfig> web_config;
  double interval_seconds = 300;
  double interval_spread = 0.2;  // each wait is interval × (1 ± spread), uniformly at random
  int concurrent_every = 12;     // every Nth round is concurrent; 0 = never
  // A round (one mode) still running after this is cut short (Runner::run's
  // deadline); nullopt = auto, derived from the mode's last round.
  std::optional<double> round_deadline_seconds;
  std::string socket_path = "/run/corenoise/ctl.sock";
  // The user socket, user.sock beside socket_path (mode 0666: status,
  // results, job-start, job), or none.
  bool user_socket = true;
  mode_t socket_mode = 0660;
  // Group owning the socket, whose members may also pause/run/publish/
  // calibrate; empty = the daemon's group, root only. With socket-mode 0666
  // anyone may read status and results.
  std::string control_group;
  std::string state_dir = "/var/lib/corenoise";
  double busy_threshold = 0.5;  // busy share of a CPU since the last round
  BusyPolicy busy_policy = BusyPolicy::skip;
  std::optional<std::vector<unsigned>> cpus;               // default: every usable CPU
  std::optional<std::vector<unsigned>> housekeeping_cpus;  // event loop and exporter threads
  std::string topology = "native";
  std::string sys_root = "/sys";
  LogLevel log_level = LogLevel::info;
  // persist-rounds N and persist-bad K: a core is unhealthy when K of its
  // last N measured rounds were (daemon/persistence.h); 1 <= K <= N <= 64.
  PersistenceRule persistence;
  // What one user's jobs may hold of the daemon (daemon/job_admission.h).
  JobAdmissionLimits job_limits;
  // The probe's settings, but untraced unless the config says `trace`: a
  // daemon's rounds run on every node all the time, so tracing is opted into.
  ProbeSettings probe = [] {
    ProbeSettings s;
    s.trace = trace::TraceMode::off;
    return s;
  }();
};

// Bad configuration; what() names where it came from.
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct DaemonOptionSpec {
  std::string name;
  std::string value_name;
  std::string help;                                            // says the default
  std::function<void(DaemonConfig&, std::string_view)> apply;  // throws std::invalid_argument
};

// The daemon's own options followed by every probe option, in --help order.
const std::vector<DaemonOptionSpec>& daemon_option_specs();

// Applies `NAME = VALUE` lines of `text` (from `source`, for messages).
// Throws ConfigError("FILE:LINE: ...").
void apply_config_text(DaemonConfig& config, const std::string& text, const std::string& source);

// The whole start-up path: --config (or the default file if it exists),
// then the other command-line options, then the checks that involve more
// than one option (persist-bad <= persist-rounds). `args` excludes argv[0]
// and the flags --help, --version and --check-config, which the caller
// handles. Throws ConfigError.
DaemonConfig load_config(const std::vector<std::string>& args);

}  // namespace corenoise
