#include "daemon/config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>

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

TEST(Config, EveryProbeOptionIsADaemonOption) {
  std::set<std::string> daemon_names;
  for (const auto& spec : daemon_option_specs()) daemon_names.insert(spec.name);
  for (const auto& spec : probe_option_specs())
    EXPECT_TRUE(daemon_names.contains(spec.name)) << spec.name;
}

}  // namespace
}  // namespace corenoise
