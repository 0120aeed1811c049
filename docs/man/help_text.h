// The layout every --help text of corenoise and corenoised follows, parsed
// so that the man pages are generated from the very text the programs print
// and cannot drift from it. Pure functions, no I/O.
//
//   Usage: PROGRAM ...          synopsis; indented lines below continue it
//                               (blank line)
//   Paragraph text at column 0; a paragraph ending in ':' right above an
//   option list is that list's heading.
//     --name VALUE   what it does, continued on lines indented further
//     command        what it does
#pragma once

#include <string>
#include <vector>

namespace corenoise::man {

// One item of an option or command list.
struct HelpEntry {
  std::string term;               // "--listen HOST:PORT", "--help, --version", "probe"
  std::vector<std::string> text;  // description lines, trimmed; may be empty
};

struct HelpBlock {
  enum class Kind { paragraph, heading, entries };
  Kind kind = Kind::paragraph;
  std::vector<std::string> lines;  // paragraph and heading text, trimmed
  std::vector<HelpEntry> entries;  // Kind::entries only
};

struct HelpText {
  std::vector<std::string> usage;  // synopsis lines without "Usage:", trimmed
  std::vector<HelpBlock> blocks;   // in the order of the text
};

// Throws std::invalid_argument naming the line when `text` does not follow
// the layout (no Usage line, indented text outside a list): a help text the
// generator cannot read must fail the build, not lose lines silently.
HelpText parse_help(const std::string& text);

// A paragraph starting "Exit status:" (it becomes its own man page section).
bool is_exit_status(const HelpBlock& block);

// The command names of a list like "Commands:": entries whose term is one
// lowercase word.
std::vector<std::string> command_names(const HelpText& help);

}  // namespace corenoise::man
