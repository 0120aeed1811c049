#include "daemon/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>

#include "daemon/web_config.h"
#include "probe/cpu_list.h"

namespace corenoise {
namespace {

// Control bytes (a NUL, an escape sequence from a binary file) are shown as
// \xNN, so a message about a garbage line cannot garble the log.
std::string single_quoted(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    } else {
      out += c;
    }
  }
  return out + "'";
}

// A config file is a few KiB; anything bigger is the wrong file (or
// /dev/zero), and is refused before it fills memory.
constexpr std::size_t kMaxConfigBytes = 1 << 20;

// The config file's text, or nullopt for an absent default file. Every other
// failure is an error naming the file: the default file unreadable (a wrong
// owner or mode must not silently drop the site's settings), a directory,
// a file too large.
std::optional<std::string> read_config_file(const std::string& path, bool given) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT && !given) return std::nullopt;
    throw ConfigError(path + ": cannot open the config file: " + std::strerror(error));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    throw ConfigError(path + ": is a directory, not a config file");
  }
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) return text;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ConfigError(path + ": cannot read the config file: " + std::strerror(errno));
    }
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > kMaxConfigBytes) {
      throw ConfigError(path + ": larger than " + std::to_string(kMaxConfigBytes >> 20) +
                        " MiB; is this the config file?");
    }
  }
}

long long parse_integer(std::string_view text, long long lo, long long hi, std::string_view what,
                        int base = 10) {
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < lo ||
      value > hi) {
    throw std::invalid_argument("got " + single_quoted(text) + ", expected " + std::string(what));
  }
  return value;
}

std::string nonempty(std::string_view text, std::string_view what) {
  if (text.empty()) throw std::invalid_argument("got '', expected " + std::string(what));
  return std::string(text);
}

// persist-rounds and persist-bad; their relation is checked in load_config().
std::size_t parse_round_count(std::string_view text) {
  return static_cast<std::size_t>(parse_integer(text, 1, static_cast<long long>(kMaxPersistRounds),
                                                "a round count from 1 to 64"));
}

std::vector<DaemonOptionSpec> make_specs() {
  std::vector<DaemonOptionSpec> specs = {
      {"listen", "HOST:PORT",
       "address of the Prometheus exporter (/metrics and a landing page at /); an IPv6 "
       "address in brackets, [::] for both families (default: 0.0.0.0:19847)",
       [](DaemonConfig& c, std::string_view v) {
         const auto colon = v.rfind(':');
         if (colon == std::string_view::npos || colon == 0) {
           throw std::invalid_argument("got " + single_quoted(v) + ", expected HOST:PORT");
         }
         try {
           parse_integer(v.substr(colon + 1), 0, 65535, "");
         } catch (const std::invalid_argument&) {
           // The whole value in the message: the port alone is hard to place.
           throw std::invalid_argument("got " + single_quoted(v) +
                                       ", expected HOST:PORT with a port from 0 to 65535");
         }
         c.listen = std::string(v);
       }},
      {"web-config-file", "PATH",
       "the exporter's TLS and basic auth: a web config file as node_exporter reads it (the "
       "command line also takes node_exporter's spelling, web.config.file); re-read on SIGHUP "
       "(default: none, plain HTTP)",
       [](DaemonConfig& c, std::string_view v) { c.web_config_file = std::string(v); }},
      {"interval", "SECONDS", "mean time between rounds (default: 300)",
       [](DaemonConfig& c, std::string_view v) {
         c.interval_seconds = parse_real_value(v, 0.1, 86400, "seconds");
       }},
      {"interval-spread", "RATIO",
       "each wait is the interval × (1 ± this), at random, so nodes never probe in lockstep "
       "(default: 0.2)",
       [](DaemonConfig& c, std::string_view v) {
         c.interval_spread = parse_real_value(v, 0, 0.9, "a ratio");
       }},
      {"concurrent-every", "N",
       "with mode isolated, every Nth round runs all cores at once instead; 0 = never "
       "(default: 12)",
       [](DaemonConfig& c, std::string_view v) {
         c.concurrent_every =
             static_cast<int>(parse_integer(v, 0, 1000000, "a round count from 0 to 1000000"));
       }},
      {"round-deadline", "SECONDS",
       "a round still running after this is cut short: each CPU stops at its next sample, and "
       "one still in a sample half a second later is abandoned and reported skipped as having "
       "overrun its deadline; auto = 10 × the mode's last round (scaled to the CPUs probed), at "
       "least 60 s; before the first round, 60 s per CPU (isolated) or 60 s (concurrent) "
       "(default: auto)",
       [](DaemonConfig& c, std::string_view v) {
         if (v == "auto") {
           c.round_deadline_seconds.reset();
         } else {
           c.round_deadline_seconds = parse_real_value(v, 0.01, 86400, "seconds or auto");
         }
       }},
      {"socket", "PATH", "control socket (default: /run/corenoise/ctl.sock)",
       [](DaemonConfig& c, std::string_view v) { c.socket_path = nonempty(v, "a path"); }},
      {"socket-mode", "OCTAL",
       "permissions of the control socket; whoever may connect may read status and results, "
       "and root and the control group may act (default: 0660)",
       [](DaemonConfig& c, std::string_view v) {
         // Base 8 reads the customary leading 0 as a digit; the message
         // shows the value as written.
         c.socket_mode =
             static_cast<mode_t>(parse_integer(v, 0, 0777, "an octal mode from 0 to 0777", 8));
       }},
      {"control-group", "GROUP",
       "group owning the control socket, whose members may also pause, resume, run, publish "
       "and calibrate (default: none, root only)",
       [](DaemonConfig& c, std::string_view v) { c.control_group = std::string(v); }},
      {"user-socket", "on|off",
       "on: user.sock beside the control socket, mode 0666, for every local user's status, "
       "results and jobs' reports, never a mutating command; off: none, and only root's and "
       "the control group's jobs report (default: on)",
       [](DaemonConfig& c, std::string_view v) {
         if (v != "on" && v != "off") {
           throw std::invalid_argument("got " + single_quoted(v) + ", expected on or off");
         }
         c.user_socket = v == "on";
       }},
      {"max-job-ranks-per-user", "N",
       "running ranks of one user whose job-start the daemon keeps (each holds a pidfd); past "
       "it a job-start is refused as too_many_ranks (default: 1024)",
       [](DaemonConfig& c, std::string_view v) {
         c.job_limits.ranks_per_user =
             static_cast<std::size_t>(parse_integer(v, 1, 65536, "a count from 1 to 65536"));
       }},
      {"state-dir", "DIR", "where per-core calibrations persist (default: /var/lib/corenoise)",
       [](DaemonConfig& c, std::string_view v) { c.state_dir = nonempty(v, "a directory"); }},
      {"busy-threshold", "RATIO",
       "a CPU busier than this since the last round is skipped as busy (default: 0.5)",
       [](DaemonConfig& c, std::string_view v) {
         c.busy_threshold = parse_real_value(v, 0, 1, "a ratio");
       }},
      {"busy-policy", "POLICY",
       "skip (leave busy CPUs alone, so that a running job is not disturbed) or probe "
       "(default: skip)",
       [](DaemonConfig& c, std::string_view v) {
         if (v == "skip") {
           c.busy_policy = BusyPolicy::skip;
         } else if (v == "probe") {
           c.busy_policy = BusyPolicy::probe;
         } else {
           throw std::invalid_argument("got " + single_quoted(v) + ", expected skip or probe");
         }
       }},
      {"cpus", "LIST", "CPUs to watch, e.g. 0-63 (default: every CPU the daemon may use)",
       [](DaemonConfig& c, std::string_view v) { c.cpus = parse_cpu_list(v); }},
      {"housekeeping-cpus", "LIST",
       "CPUs for the event loop and exporter threads (default: any; they always leave the CPU "
       "being measured)",
       [](DaemonConfig& c, std::string_view v) { c.housekeeping_cpus = parse_cpu_list(v); }},
      {"topology", "SPEC", "native, an hwloc XML file or synthetic:DESC (default: native)",
       [](DaemonConfig& c, std::string_view v) { c.topology = nonempty(v, "a topology"); }},
      {"sys-root", "DIR",
       "where /sys is mounted, for thermal throttle counters, cpufreq and CPPC (default: /sys)",
       [](DaemonConfig& c, std::string_view v) { c.sys_root = nonempty(v, "a directory"); }},
      {"persist-rounds", "N",
       "a core is unhealthy only when persist-bad of its last N measured rounds were; fewer make "
       "it transient, which never drains or alerts; 1 to 64, at least persist-bad (default: 3)",
       [](DaemonConfig& c, std::string_view v) { c.persistence.rounds = parse_round_count(v); }},
      {"persist-bad", "K",
       "unhealthy rounds among the last persist-rounds that make a core unhealthy; 1 with "
       "persist-rounds 1 judges each round alone (default: 2)",
       [](DaemonConfig& c, std::string_view v) { c.persistence.bad = parse_round_count(v); }},
      {"log-level", "LEVEL", "error, warning, notice, info or debug (default: info)",
       [](DaemonConfig& c, std::string_view v) {
         static const std::map<std::string_view, LogLevel> levels = {{"error", LogLevel::error},
                                                                     {"warning", LogLevel::warning},
                                                                     {"notice", LogLevel::notice},
                                                                     {"info", LogLevel::info},
                                                                     {"debug", LogLevel::debug}};
         const auto it = levels.find(v);
         if (it == levels.end()) {
           throw std::invalid_argument("got " + single_quoted(v) +
                                       ", expected error, warning, notice, info or debug");
         }
         c.log_level = it->second;
       }},
  };
  for (const auto& probe : probe_option_specs()) {
    const std::string help =
        probe.name == "trace"
            ? "name what took each detour's time from the kernel's tracer (exported as "
              "corenoise_culprit_ratio): auto (when root and tracefs is mounted or can "
              "be), on (the daemon does not start where it cannot), off (default: off; "
              "docs/daemon.md)"
            : probe.help;
    specs.push_back(
        {probe.name, probe.value_name, help,
         [apply = probe.apply](DaemonConfig& c, std::string_view v) { apply(c.probe, v); }});
  }
  return specs;
}

const DaemonOptionSpec* find_spec(std::string_view name) {
  for (const auto& spec : daemon_option_specs()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

// Levenshtein distance, for "did you mean" on misspelt keys.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string unknown_option(std::string_view name) {
  std::string best;
  std::size_t best_distance = 3;  // suggest only close matches
  for (const auto& spec : daemon_option_specs()) {
    const std::size_t d = edit_distance(name, spec.name);
    if (d < best_distance) {
      best_distance = d;
      best = spec.name;
    }
  }
  return "unknown option " + single_quoted(name) +
         (best.empty() ? "" : " (did you mean '" + best + "'?)");
}

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

}  // namespace

const std::vector<DaemonOptionSpec>& daemon_option_specs() {
  static const std::vector<DaemonOptionSpec> specs = make_specs();
  return specs;
}

void apply_config_text(DaemonConfig& config, const std::string& text, const std::string& source) {
  std::map<std::string, int> seen;  // option -> line
  std::istringstream lines(text);
  int number = 0;
  for (std::string raw; std::getline(lines, raw);) {
    ++number;
    const std::string where = source + ":" + std::to_string(number) + ": ";
    std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) {
      throw ConfigError(where + "expected 'NAME = VALUE', got " + single_quoted(line));
    }
    const std::string name(trim(line.substr(0, eq)));
    const std::string_view value = trim(line.substr(eq + 1));
    const DaemonOptionSpec* spec = find_spec(name);
    if (spec == nullptr) throw ConfigError(where + unknown_option(name));
    if (const auto it = seen.find(name); it != seen.end()) {
      throw ConfigError(where + "option " + single_quoted(name) + " is already set on line " +
                        std::to_string(it->second));
    }
    seen[name] = number;
    try {
      spec->apply(config, value);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(where + "option " + single_quoted(name) + ": " + e.what());
    }
  }
}

DaemonConfig load_config(const std::vector<std::string>& args) {
  DaemonConfig config;
  // Pass 1: find --config, so the file is applied before the other options.
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config" || args[i].starts_with("--config=")) {
      if (args[i] == "--config" && i + 1 >= args.size()) {
        throw ConfigError("command line: option --config needs a value");
      }
      config.config_path = args[i] == "--config" ? args[i + 1] : args[i].substr(9);
      config.config_path_given = true;
    }
  }
  if (const auto text = read_config_file(config.config_path, config.config_path_given)) {
    apply_config_text(config, *text, config.config_path);
  }
  // Pass 2: the other options override the file.
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!arg.starts_with("--")) {
      throw ConfigError("command line: unexpected argument " + single_quoted(arg));
    }
    std::string name = arg.substr(2);
    std::string value;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else {
      if (i + 1 >= args.size())
        throw ConfigError("command line: option --" + name + " needs a value");
      value = args[++i];
    }
    if (name == "config") continue;
    if (name == "web.config.file") name = "web-config-file";  // node_exporter's spelling
    const DaemonOptionSpec* spec = find_spec(name);
    if (spec == nullptr) throw ConfigError("command line: " + unknown_option(name));
    try {
      spec->apply(config, value);
    } catch (const std::invalid_argument& e) {
      throw ConfigError("command line: option --" + name + ": " + e.what());
    }
  }
  // Checked once every source has had its say, so that a file's
  // persist-rounds 5 and a command line's persist-bad 4 are judged together.
  if (config.persistence.bad > config.persistence.rounds) {
    throw ConfigError("option 'persist-bad': got " + std::to_string(config.persistence.bad) +
                      ", expected at most persist-rounds (" +
                      std::to_string(config.persistence.rounds) + ")");
  }
  // Read here, so that --check-config and a reload check it too, and a
  // reload re-reads the certificate, the key and the users.
  if (!config.web_config_file.empty()) {
    try {
      config.web_config = load_web_config(config.web_config_file);
    } catch (const std::runtime_error& e) {
      throw ConfigError(std::string("option 'web-config-file': ") + e.what());
    }
  }
  return config;
}

}  // namespace corenoise
