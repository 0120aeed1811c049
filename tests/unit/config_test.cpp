#include "daemon/config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <utility>
#include <vector>

#include "../temp_file.h"

namespace corenoise {
namespace {

std::string error_of(const std::string& text) {
  DaemonConfig config;
  try {
    apply_config_text(config, text, "/etc/corenoise/corenoised.conf");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

using testing::TempFile;

TEST(Config, DefaultsAreDocumentedValues) {
  const DaemonConfig c;
  EXPECT_EQ(c.listen, "0.0.0.0:19847");
  EXPECT_EQ(c.socket_path, "/run/corenoise/ctl.sock");
  EXPECT_EQ(c.state_dir, "/var/lib/corenoise");
  EXPECT_EQ(c.socket_mode, 0660u);
  EXPECT_DOUBLE_EQ(c.busy_threshold, 0.5);
  for (const auto& spec : daemon_option_specs()) {
    EXPECT_NE(spec.help.find("default"), std::string::npos) << spec.name;
  }
}

TEST(Config, FileWithCommentsBlanksAndProbeOptions) {
  DaemonConfig c;
  apply_config_text(c,
                    "# corenoised.conf\n"
                    "\n"
                    "interval = 60\n"
                    "  listen=127.0.0.1:9999   \n"
                    "socket-mode = 0666\n"
                    "busy-policy = probe\n"
                    "cpus = 0-3,8\n"
                    "matmul-size = 96\n"
                    "noisy-excess-noise = 0.02\n",
                    "test.conf");
  EXPECT_DOUBLE_EQ(c.interval_seconds, 60);
  EXPECT_EQ(c.listen, "127.0.0.1:9999");
  EXPECT_EQ(c.socket_mode, 0666u);
  EXPECT_EQ(c.busy_policy, BusyPolicy::probe);
  EXPECT_EQ(*c.cpus, (std::vector<unsigned>{0, 1, 2, 3, 8}));
  EXPECT_EQ(c.probe.matmul_size, 96);
  EXPECT_DOUBLE_EQ(c.probe.thresholds.noisy_excess_noise, 0.02);
}

TEST(Config, ErrorsNameFileLineOptionValueAndExpectation) {
  const std::string typo = error_of("interval = 60\nintervall = 30\n");
  EXPECT_NE(typo.find("/etc/corenoise/corenoised.conf:2:"), std::string::npos) << typo;
  EXPECT_NE(typo.find("unknown option 'intervall'"), std::string::npos) << typo;
  EXPECT_NE(typo.find("did you mean 'interval'"), std::string::npos) << typo;

  const std::string bad = error_of("\n\ninterval = soon\n");
  EXPECT_NE(bad.find(":3: option 'interval': got 'soon', expected seconds"), std::string::npos)
      << bad;
  EXPECT_NE(error_of("interval = 0").find("expected seconds from 0.1"), std::string::npos);
  EXPECT_NE(error_of("listen = localhost").find("expected HOST:PORT"), std::string::npos);
  EXPECT_NE(error_of("listen = :99999").find("expected HOST:PORT"), std::string::npos);
  EXPECT_NE(error_of("listen = h:99999").find("a port from 0 to 65535"), std::string::npos);
  EXPECT_NE(error_of("socket-mode = 0999").find("octal"), std::string::npos);
  EXPECT_NE(error_of("busy-policy = maybe").find("expected skip or probe"), std::string::npos);
  EXPECT_NE(error_of("log-level = loud").find("expected error, warning"), std::string::npos);
  EXPECT_NE(error_of("cpus = 3-1").find("3-1"), std::string::npos);
  EXPECT_NE(error_of("dtype = f16").find(":1: option 'dtype': got 'f16', expected f32 or f64"),
            std::string::npos);
  EXPECT_NE(error_of("just words").find(":1: expected 'NAME = VALUE'"), std::string::npos);
  const std::string twice = error_of("samples = 3\n# again\nsamples = 4\n");
  EXPECT_NE(twice.find(":3: option 'samples' is already set on line 1"), std::string::npos)
      << twice;
}

TEST(Config, CommandLineOverridesTheFile) {
  TempFile file("interval = 60\nsamples = 3\n");
  const DaemonConfig c =
      load_config({"--config", file.path(), "--interval", "5", "--listen=127.0.0.1:0"});
  EXPECT_TRUE(c.config_path_given);
  EXPECT_DOUBLE_EQ(c.interval_seconds, 5);
  EXPECT_EQ(c.probe.samples, 3);
  EXPECT_EQ(c.listen, "127.0.0.1:0");
}

TEST(Config, MissingFilesAndBadCommandLines) {
  // The default file may be absent (a fresh install without one)...
  EXPECT_NO_THROW(load_config({"--interval", "5"}));
  // ...but a file the user names must exist.
  try {
    load_config({"--config", "/nonexistent/corenoised.conf"});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/corenoised.conf"), std::string::npos);
  }
  EXPECT_THROW(load_config({"--intervall", "5"}), ConfigError);
  EXPECT_THROW(load_config({"--interval"}), ConfigError);
  EXPECT_THROW(load_config({"stray"}), ConfigError);
  EXPECT_THROW(load_config({"--config"}), ConfigError);
  TempFile broken("interval = 60\nbogus = 1\n");
  try {
    load_config({"--config", broken.path()});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(broken.path() + ":2:"), std::string::npos) << e.what();
  }
}

// persist-rounds N and persist-bad K: defaults 3 and 2; K <= N is judged
// once the file and the command line are both applied, and a K above N is a
// start-up error naming the option, its value and the bound.
TEST(Config, PersistenceRoundsAndBad) {
  const DaemonConfig defaults;
  EXPECT_EQ(defaults.persistence.rounds, 3u);
  EXPECT_EQ(defaults.persistence.bad, 2u);
  TempFile file("persist-rounds = 5\n");
  const DaemonConfig c = load_config({"--config", file.path(), "--persist-bad", "4"});
  EXPECT_EQ(c.persistence.rounds, 5u);
  EXPECT_EQ(c.persistence.bad, 4u);
  const DaemonConfig one =
      load_config({"--config", "/dev/null", "--persist-bad", "1", "--persist-rounds", "1"});
  EXPECT_EQ(one.persistence.rounds, 1u);
  EXPECT_EQ(one.persistence.bad, 1u);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--config", "/dev/null", "--persist-rounds", "1"},
        std::vector<std::string>{"--config", file.path(), "--persist-bad", "6"}}) {
    try {
      load_config(args);
      ADD_FAILURE() << "expected a ConfigError for " << args.back();
    } catch (const ConfigError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(
                    "option 'persist-bad': got " + std::string(args.back() == "6" ? "6" : "2") +
                    ", expected at most persist-rounds (" + (args.back() == "6" ? "5" : "1") + ")"),
                std::string::npos)
          << message;
    }
  }
  try {
    load_config({"--config", "/dev/null", "--persist-rounds", "0"});
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("option --persist-rounds: got '0', expected a round count "
                                         "from 1 to 64"),
              std::string::npos)
        << e.what();
  }
}

// Every numeric option has a range: a value no site means (negative, not a
// number, infinite, astronomically large) is refused, whatever the option.
// Options added later are checked too, by the kind of value they take.
TEST(Config, EveryNumericOptionRefusesValuesOutsideItsRange) {
  const std::set<std::string> numeric = {"SECONDS", "RATIO", "N", "K", "BYTES", "OCTAL"};
  int checked = 0;
  for (const auto& spec : daemon_option_specs()) {
    if (!numeric.contains(spec.value_name)) continue;
    ++checked;
    for (const std::string bad :
         {"-1", "nan", "inf", "-inf", "1e300", "99999999999999999999", "", "5x", "0x10", "1,5"}) {
      const std::string message = error_of(spec.name + " = " + bad);
      EXPECT_NE(message.find(":1: option '" + spec.name + "': got '" + bad + "', expected"),
                std::string::npos)
          << spec.name << " = " << bad << " -> " << message;
    }
  }
  EXPECT_GE(checked, 16);
}

// The edges of the ranges the docs promise: an interval > 0, ports 0 to
// 65535, fractions within [0, 1].
TEST(Config, RangeEdges) {
  const std::vector<std::pair<std::string, bool>> cases = {
      {"interval = 0.1", true},
      {"interval = 0.09", false},
      {"interval = 86400", true},
      {"interval = 86401", false},
      {"listen = 127.0.0.1:0", true},
      {"listen = 127.0.0.1:65535", true},
      {"listen = 127.0.0.1:65536", false},
      {"listen = 127.0.0.1:-1", false},
      {"listen = 127.0.0.1:", false},
      {"busy-threshold = 0", true},
      {"busy-threshold = 1", true},
      {"busy-threshold = 1.01", false},
      {"noisy-excess-noise = 1", true},
      {"noisy-excess-noise = 1.5", false},
      {"interval-spread = 0.9", true},
      {"interval-spread = 1", false},
      {"samples = 1", true},
      {"samples = 0", false},
      {"socket-mode = 0777", true},
      {"socket-mode = 01777", false},
      {"concurrent-every = 0", true},
      {"slow-ratio = 0.5", false},
      {"throttled-clock-ratio = 1", true},
      {"detour-window = 0", false},
      {"cpus = 65536", false},
      {"cpus = 0-", false},
      {"persist-rounds = 1", true},
      {"persist-rounds = 64", true},
      {"persist-rounds = 0", false},
      {"persist-rounds = 65", false},
      {"persist-bad = 1", true},
      {"persist-bad = 0", false},
      {"persist-bad = 65", false},
  };
  for (const auto& [line, ok] : cases) {
    const std::string message = error_of(line);
    EXPECT_EQ(message.empty(), ok) << line << " -> " << message;
  }
}

// Binary garbage in the file: an error naming line 1, its bytes escaped so
// the message is one printable line.
TEST(Config, ControlBytesInAnErrorAreEscaped) {
  const std::string message = error_of(std::string("\x01\x1b[2J\0garbage\n", 14));
  EXPECT_NE(message.find(":1: expected 'NAME = VALUE', got '\\x01\\x1b[2J\\x00garbage'"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find('\0'), std::string::npos);
  EXPECT_EQ(message.find('\x1b'), std::string::npos);
}

// A directory, a device that never ends, and an unreadable default file are
// errors naming the file; only a missing default file is quietly skipped.
// (Unreadable as a non-root user: tests/integration/daemon_bad_input_test.cpp.)
TEST(Config, FilesThatAreNotConfigFiles) {
  auto error = [](const std::vector<std::string>& args) -> std::string {
    try {
      load_config(args);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error({"--config", "/tmp"}), "/tmp: is a directory, not a config file");
  EXPECT_EQ(error({"--config", "/dev/zero"}),
            "/dev/zero: larger than 1 MiB; is this the config file?");
  EXPECT_EQ(error({"--config", "/nonexistent/x.conf"}),
            "/nonexistent/x.conf: cannot open the config file: No such file or directory");
  EXPECT_EQ(error({"--config", "/dev/null"}), "") << "an empty file is a valid configuration";
}

TEST(Config, EveryProbeOptionIsADaemonOption) {
  std::set<std::string> daemon_names;
  for (const auto& spec : daemon_option_specs()) daemon_names.insert(spec.name);
  for (const auto& spec : probe_option_specs())
    EXPECT_TRUE(daemon_names.contains(spec.name)) << spec.name;
}

}  // namespace
}  // namespace corenoise
