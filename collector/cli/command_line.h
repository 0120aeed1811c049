// A small, strict command-line parser: `--name VALUE`, `--name=VALUE` and
// value-less flags. Unknown options and missing values are errors that name
// the option, so a typo never silently falls back to a default.
#pragma once

#include <functional>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace corenoise {

// Bad command-line input; what() is the message for the user.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ParsedArgs {
  std::vector<std::pair<std::string, std::string>>
      options;  // name without "--", value ("" for flags)
  std::vector<std::string> positional;

  bool has(const std::string& name) const;
};

// `value_options` take a value; `flags` do not. Throws UsageError.
ParsedArgs parse_args(const std::vector<std::string>& args,
                      const std::set<std::string>& value_options,
                      const std::set<std::string>& flags);

// What every command of one node does around its work: answers --help, runs
// `work`, and turns a UsageError (pointing at --help) or any other error into
// one line on stderr naming the command, and exit status 1.
int run_local_command(const std::string& name, const std::vector<std::string>& args,
                      const std::function<void(std::ostream&)>& print_usage,
                      const std::function<int()>& work);

}  // namespace corenoise
