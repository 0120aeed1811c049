#include "docs/man/pages.h"

#include <algorithm>
#include <stdexcept>

#include "docs/man/roff.h"

namespace corenoise::man {

std::string help_sections(const HelpText& help, const std::string& options_section) {
  std::string out = ".SH SYNOPSIS\n" + render_usage(help.usage) + ".SH DESCRIPTION\n";
  std::vector<HelpBlock> description, options;
  for (const auto& block : help.blocks) {
    if (is_exit_status(block)) continue;
    // Paragraphs up to the first heading or list describe; the rest are options.
    const bool list = block.kind != HelpBlock::Kind::paragraph;
    const bool describes = options_section.empty() || (options.empty() && !list);
    (describes ? description : options).push_back(block);
  }
  out += render_blocks(description, HeadingStyle::subsection);
  if (!options.empty()) {
    out += ".SH " + options_section + "\n" + render_blocks(options, HeadingStyle::subsection);
  }
  return out;
}

std::string exit_status_section(const HelpText& help) {
  for (const auto& block : help.blocks) {
    if (!is_exit_status(block)) continue;
    HelpBlock status = block;
    // "Exit status: 0 ..." reads "0 ..." under its own heading.
    std::string& first = status.lines.front();
    first.erase(0, first.find(':') + 1);
    first.erase(0, std::min(first.find_first_not_of(' '), first.size()));
    if (first.empty()) status.lines.erase(status.lines.begin());
    return ".SH \"EXIT STATUS\"\n" + render_blocks({status}, HeadingStyle::subsection);
  }
  throw std::invalid_argument("the help text has no 'Exit status:' paragraph");
}

std::string command_sections(const std::string& program,
                             const std::vector<std::pair<std::string, HelpText>>& commands) {
  std::string out;
  for (const auto& [name, help] : commands) {
    out += ".SS \"" + program + " " + name + "\"\n.PP\n" + render_usage(help.usage) +
           render_blocks(help.blocks, HeadingStyle::bold_paragraph);
  }
  return out;
}

std::string config_option_list(const std::vector<ConfigOption>& options) {
  std::string out;
  for (const auto& option : options) {
    out += ".TP\n" + roff_term(option.name) + " = " + roff_term(option.value_name) + "\n" +
           roff_line(option.help);
  }
  return out;
}

std::string fill_template(const std::string& page,
                          const std::map<std::string, std::string>& values) {
  std::string out;
  std::size_t start = 0;
  while (true) {
    const auto open = page.find('@', start);
    const auto close = open == std::string::npos ? open : page.find('@', open + 1);
    if (close == std::string::npos) return out + page.substr(start);
    const std::string name = page.substr(open + 1, close - open - 1);
    const auto it = values.find(name);
    if (it == values.end()) {
      throw std::invalid_argument("page template has an unknown placeholder @" + name + "@");
    }
    std::string value = it->second;
    if (value.ends_with('\n')) value.pop_back();
    out += page.substr(start, open - start) + value;
    start = close + 1;
  }
}

}  // namespace corenoise::man
