#include "docs/man/help_text.h"

#include <sstream>
#include <stdexcept>

namespace corenoise::man {
namespace {

constexpr std::string_view kUsage = "Usage:";
constexpr std::string_view kExitStatus = "Exit status:";
// Entries start at this indentation or less; their continuation lines are
// aligned under the description column, much further right.
constexpr std::size_t kMaxEntryIndent = 4;

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(' ') - first + 1);
}

std::invalid_argument bad_line(std::size_t number, const std::string& line, const char* why) {
  return std::invalid_argument("help text line " + std::to_string(number) + " '" + line +
                               "': " + why);
}

}  // namespace

HelpText parse_help(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    if (line.find('\t') != std::string::npos) throw bad_line(lines.size() + 1, line, "has a tab");
    lines.push_back(line.substr(0, line.find_last_not_of(' ') + 1));
  }

  HelpText help;
  std::size_t i = 0;
  while (i < lines.size() && lines[i].empty()) ++i;
  if (i == lines.size() || !lines[i].starts_with(kUsage)) {
    throw std::invalid_argument("help text does not start with '" + std::string(kUsage) + "'");
  }
  help.usage.push_back(trim(lines[i].substr(kUsage.size())));
  for (++i; i < lines.size() && lines[i].starts_with(' '); ++i) {
    help.usage.push_back(trim(lines[i]));
  }

  HelpBlock* current = nullptr;  // the block a non-blank line may continue
  for (; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.empty()) {
      current = nullptr;
      continue;
    }
    const std::size_t indent = line.find_first_not_of(' ');
    const std::string content = line.substr(indent);
    if (indent == 0) {
      // "Exit status:" may follow other lines without a blank line between.
      if (current == nullptr || current->kind != HelpBlock::Kind::paragraph ||
          content.starts_with(kExitStatus)) {
        current = &help.blocks.emplace_back();
      }
      current->lines.push_back(content);
    } else if (indent <= kMaxEntryIndent) {
      if (current == nullptr || current->kind != HelpBlock::Kind::entries) {
        if (current != nullptr && current->lines.back().ends_with(':')) {
          current->kind = HelpBlock::Kind::heading;
        }
        current = &help.blocks.emplace_back();
        current->kind = HelpBlock::Kind::entries;
      }
      // The term ends where the first run of two spaces does.
      const auto gap = content.find("  ");
      HelpEntry& entry = current->entries.emplace_back();
      entry.term = content.substr(0, gap);
      if (gap != std::string::npos) entry.text.push_back(trim(content.substr(gap)));
    } else {
      if (current == nullptr || current->kind != HelpBlock::Kind::entries) {
        throw bad_line(i + 1, line, "indented text outside an option list");
      }
      current->entries.back().text.push_back(content);
    }
  }
  return help;
}

bool is_exit_status(const HelpBlock& block) {
  return block.kind == HelpBlock::Kind::paragraph && block.lines.front().starts_with(kExitStatus);
}

std::vector<std::string> command_names(const HelpText& help) {
  std::vector<std::string> names;
  for (const auto& block : help.blocks) {
    for (const auto& entry : block.entries) {
      const bool word =
          !entry.term.empty() &&
          entry.term.find_first_not_of("abcdefghijklmnopqrstuvwxyz") == std::string::npos;
      if (word) names.push_back(entry.term);
    }
  }
  return names;
}

}  // namespace corenoise::man
