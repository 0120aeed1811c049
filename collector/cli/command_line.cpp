#include "collector/cli/command_line.h"

#include <algorithm>
#include <iostream>

namespace corenoise {

bool ParsedArgs::has(const std::string& name) const {
  for (const auto& [n, v] : options) {
    if (n == name) return true;
  }
  return false;
}

ParsedArgs parse_args(const std::vector<std::string>& args,
                      const std::set<std::string>& value_options,
                      const std::set<std::string>& flags) {
  ParsedArgs parsed;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
        throw UsageError("unknown option '" + arg + "' (options are spelt --name)");
      }
      parsed.positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::string value;
    bool inline_value = false;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
      inline_value = true;
    }
    if (flags.contains(name)) {
      if (inline_value) throw UsageError("option --" + name + " takes no value");
      parsed.options.emplace_back(name, "");
    } else if (value_options.contains(name)) {
      if (!inline_value) {
        if (i + 1 >= args.size()) throw UsageError("option --" + name + " needs a value");
        value = args[++i];
      }
      parsed.options.emplace_back(name, value);
    } else {
      throw UsageError("unknown option '--" + name + "'");
    }
  }
  return parsed;
}

int run_local_command(const std::string& name, const std::vector<std::string>& args,
                      const std::function<void(std::ostream&)>& print_usage,
                      const std::function<int()>& work) {
  const std::string prefix = "corenoise " + name + ": ";
  try {
    if (std::find(args.begin(), args.end(), "--help") != args.end()) {
      print_usage(std::cout);
      return 0;
    }
    return work();
  } catch (const UsageError& e) {
    std::cerr << prefix + e.what() + " (see corenoise " + name + " --help)\n";
  } catch (const std::exception& e) {
    std::cerr << prefix + e.what() + "\n";
  }
  return 1;
}

}  // namespace corenoise
