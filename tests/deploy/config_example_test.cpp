// deploy/corenoised.conf, the example configuration, against corenoised's
// option table: every option in --help order, commented out, its help text
// as the comment and its built-in default as the value; and
// `corenoised --check-config` accepts the file as shipped and with every
// option uncommented.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "../temp_file.h"
#include "daemon/config.h"
#include "probe/cpu_list.h"

namespace corenoise {
namespace {

// Where an option's default has no spelling as a value (e.g. "every CPU"),
// the file shows an example and says so after the help text.
constexpr const char* kExampleMarker = ". For example:";

std::string read_file(const std::string& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file) << "cannot open " << path;
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// "#NAME = VALUE" (or "#NAME =" for an empty value): an option commented out.
const std::regex& setting_line() {
  static const std::regex re(R"(^#([a-z][a-z0-9-]*) =(?: (.*))?$)");
  return re;
}

struct Entry {
  std::string name;
  std::string value;
  std::string comment;  // the "# ..." lines above it, joined by spaces
  int line = 0;
};

// The file is blocks of lines separated by blank lines. A block ending in a
// setting line is that option's entry, its other lines "# " comments; any
// other block is free comment. Every line is commented out.
std::vector<Entry> parse_example(const std::string& text) {
  std::vector<Entry> entries;
  std::vector<std::pair<int, std::string>> block;
  const auto finish_block = [&] {
    std::smatch match;
    for (std::size_t i = 0; i < block.size(); ++i) {
      const auto& [number, line] = block[i];
      EXPECT_TRUE(line.starts_with("#")) << "line " << number << " is not commented out: " << line;
      const bool setting = std::regex_match(line, match, setting_line());
      if (setting && i + 1 != block.size()) {
        ADD_FAILURE() << "line " << number << ": a setting must end its block (a blank line "
                      << "after it): " << line;
      }
      if (!setting || i + 1 != block.size()) continue;
      Entry entry{match[1], match[2], "", number};
      for (std::size_t j = 0; j < i; ++j) {
        const std::string& comment = block[j].second;
        EXPECT_TRUE(comment.starts_with("# ")) << "line " << block[j].first << ": " << comment;
        entry.comment +=
            (j > 0 ? " " : "") + comment.substr(std::min<std::size_t>(2, comment.size()));
      }
      entries.push_back(entry);
    }
    block.clear();
  };
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (line.empty()) {
      finish_block();
    } else {
      block.emplace_back(number, line);
    }
  }
  finish_block();
  return entries;
}

// Everything a DaemonConfig holds that an option sets, as text: two configs
// with the same description behave the same. Keep in step with DaemonConfig
// and ProbeSettings.
std::string describe(const DaemonConfig& c) {
  const auto cpus = [](const std::optional<std::vector<unsigned>>& list) {
    return list ? "{" + format_cpu_list(*list) + "}" : std::string("unset");
  };
  std::ostringstream s;
  s.precision(17);
  s << "listen=" << c.listen << " interval=" << c.interval_seconds
    << " spread=" << c.interval_spread << " concurrent_every=" << c.concurrent_every
    << " socket=" << c.socket_path << " socket_mode=" << c.socket_mode
    << " group=" << c.control_group << " user_socket=" << c.user_socket
    << " job_ranks_per_user=" << c.job_limits.ranks_per_user << " state_dir=" << c.state_dir
    << " busy_threshold=" << c.busy_threshold << " busy_policy=" << static_cast<int>(c.busy_policy)
    << " cpus=" << cpus(c.cpus) << " housekeeping=" << cpus(c.housekeeping_cpus)
    << " topology=" << c.topology << " sys_root=" << c.sys_root
    << " log_level=" << static_cast<int>(c.log_level);
  const ProbeSettings& p = c.probe;
  s << " probes=";
  for (auto probe : p.probes) s << to_string(probe) << ',';
  s << " modes=";
  for (auto mode : p.modes) s << to_string(mode) << ',';
  s << " samples=" << p.samples << " matmul_size=" << p.matmul_size
    << " dtype=" << static_cast<int>(p.dtype) << " reps=" << p.reps
    << " isa=" << (p.isa ? static_cast<int>(*p.isa) : -1)
    << " detour_window=" << p.detour_window_seconds
    << " detour_threshold=" << p.detour_threshold_seconds << " stream_bytes=" << p.stream_bytes
    << " proc_root=" << p.proc_root << " throttled=" << p.thresholds.throttled_clock_ratio
    << " noisy=" << p.thresholds.noisy_excess_noise << " slow=" << p.thresholds.slow_ratio
    << " contended=" << p.thresholds.contended_stream_ratio;
  return s.str();
}

// The configuration after `spec` is set to `value` alone, or nothing if
// the value is invalid.
std::optional<std::string> describe_with(const DaemonOptionSpec& spec, const std::string& value) {
  DaemonConfig config;
  try {
    spec.apply(config, value);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
  return describe(config);
}

// The default the help states: "(default: X, ...)" up to the first ',', ';'
// or ')'. "none" is the empty value.
std::optional<std::string> documented_default(const std::string& help) {
  const std::string key = "(default: ";
  const auto at = help.find(key);
  if (at == std::string::npos) return std::nullopt;
  std::string value = help.substr(at + key.size());
  value = value.substr(0, value.find_first_of(",;)"));
  return value == "none" ? "" : value;
}

std::string expected_entry(const DaemonOptionSpec& spec) {
  return "# " + spec.help + "\n#" + spec.name + " = " + documented_default(spec.help).value_or("?");
}

TEST(ConfigExample, ListsEveryOptionWithItsDefault) {
  const std::vector<Entry> entries = parse_example(read_file(CONFIG_EXAMPLE));
  std::vector<std::string> file_names, table_names;
  for (const auto& entry : entries) file_names.push_back(entry.name);
  for (const auto& spec : daemon_option_specs()) table_names.push_back(spec.name);
  EXPECT_EQ(file_names, table_names) << "the options of " CONFIG_EXAMPLE
                                     << " differ from those of corenoised --help, or their order";

  const std::string defaults = describe(DaemonConfig{});
  for (const auto& spec : daemon_option_specs()) {
    SCOPED_TRACE("option " + spec.name);
    const auto entry = std::find_if(entries.begin(), entries.end(),
                                    [&](const Entry& e) { return e.name == spec.name; });
    if (entry == entries.end()) {
      ADD_FAILURE() << "missing from " CONFIG_EXAMPLE ", add:\n" << expected_entry(spec);
      continue;
    }
    SCOPED_TRACE(CONFIG_EXAMPLE ":" + std::to_string(entry->line));
    const auto documented = documented_default(spec.help);
    ASSERT_TRUE(documented) << "the help states no '(default: ...)': " << spec.help;
    const auto with_file_value = describe_with(spec, entry->value);
    ASSERT_TRUE(with_file_value) << "invalid value '" << entry->value << "'";
    if (const auto with_documented = describe_with(spec, *documented)) {
      // The help's default is a value: the file writes exactly it, and it is
      // the built-in default.
      EXPECT_EQ(entry->value, *documented) << "the file's default differs from --help's";
      EXPECT_EQ(*with_documented, defaults) << "--help's default is not the built-in one";
      EXPECT_EQ(entry->comment, spec.help) << "expected:\n" << expected_entry(spec);
    } else if (*with_file_value == defaults) {
      // The help says it in words ("all"); the file spells it out.
      EXPECT_EQ(entry->comment, spec.help);
    } else {
      // No value means the default ("every CPU"): the file shows an example.
      EXPECT_EQ(entry->comment, spec.help + kExampleMarker)
          << "'" << entry->value << "' is not the default, so the comment must say it is an "
          << "example";
    }
  }
}

struct CheckResult {
  int status = -1;
  std::string output;
};

CheckResult check_config(const std::string& path) {
  const std::string command =
      "'" CORENOISED_BIN "' --check-config --config '" + path + "' 2>&1 </dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {};
  CheckResult result;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
    result.output.append(buffer, n);
  }
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

using testing::TempFile;

TEST(ConfigExample, IsAcceptedAsShipped) {
  const CheckResult result = check_config(CONFIG_EXAMPLE);
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("configuration OK (" CONFIG_EXAMPLE ")"), std::string::npos)
      << result.output;
}

TEST(ConfigExample, IsAcceptedUncommented) {
  std::istringstream lines(read_file(CONFIG_EXAMPLE));
  std::string text;
  std::size_t uncommented = 0;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_match(line, setting_line())) {
      line.erase(0, 1);
      ++uncommented;
    }
    text += line + "\n";
  }
  EXPECT_EQ(uncommented, daemon_option_specs().size());

  const TempFile all_set(text);
  const CheckResult result = check_config(all_set.path());
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("configuration OK (" + all_set.path() + ")"), std::string::npos)
      << result.output;

  // The same check fails once the file has a bad line: it did read this file.
  const TempFile misspelt(text + "intervall = 60\n");
  const CheckResult bad = check_config(misspelt.path());
  EXPECT_EQ(bad.status, 1) << bad.output;
  EXPECT_NE(bad.output.find("did you mean 'interval'"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace corenoise
