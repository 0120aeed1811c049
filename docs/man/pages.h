// The generated parts of the man pages, each the text of one placeholder of
// a page template (docs/man/*.in), and the template filling itself. Pure
// functions: gen_manpages.cpp does the I/O.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "docs/man/help_text.h"

namespace corenoise::man {

// SYNOPSIS from the Usage lines, then DESCRIPTION; with a non-empty
// `options_section`, that section starts at the first heading or list.
// The "Exit status:" paragraph is left to exit_status_section().
std::string help_sections(const HelpText& help, const std::string& options_section);

// EXIT STATUS from the help's "Exit status:" paragraph; throws
// std::invalid_argument if it has none (every command documents its codes).
std::string exit_status_section(const HelpText& help);

// One .SS per command ("PROGRAM COMMAND"), with its whole help.
std::string command_sections(const std::string& program,
                             const std::vector<std::pair<std::string, HelpText>>& commands);

// A config-file option: the name without dashes, its value placeholder and
// its one-line help.
struct ConfigOption {
  std::string name;
  std::string value_name;
  std::string help;
};
// ".TP / NAME = VALUE / help" for each option.
std::string config_option_list(const std::vector<ConfigOption>& options);

// Replaces each @NAME@ of `page` with values.at("NAME"), a value's trailing
// newline dropped (a block placeholder stands on a line of its own). Throws
// std::invalid_argument for a placeholder without a value.
std::string fill_template(const std::string& page,
                          const std::map<std::string, std::string>& values);

}  // namespace corenoise::man
