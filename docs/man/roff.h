// Help text to man(7) roff. Output is plain ASCII: every non-ASCII
// character becomes a \[uXXXX] glyph, so the pages render the same with or
// without preconv. Option names are written with \- (a dash that is typed,
// searchable and never a line-break point) and \% (never hyphenated).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "docs/man/help_text.h"

namespace corenoise::man {

// Running text: escapes roff's special characters; with `markup`, a `quoted`
// span becomes bold and so does each --option.
std::string roff_text(std::string_view text, bool markup = true);

// One input line of running text, guarded against reading as a request
// (a leading '.' or '\'').
std::string roff_line(std::string_view text, bool markup = true);

// A synopsis line or list term: options and lowercase words (programs,
// commands) bold, upper-case placeholders italic, the rest roman.
std::string roff_term(std::string_view term);

// How a heading of the help text appears: a .SS subsection (if it fits on
// one line), or a bold paragraph where the help is itself inside a
// subsection.
enum class HeadingStyle { subsection, bold_paragraph };

// Blocks of a help text: paragraphs (.PP), headings, lists (.TP).
std::string render_blocks(const std::vector<HelpBlock>& blocks, HeadingStyle style);

// The synopsis lines, one output line each.
std::string render_usage(const std::vector<std::string>& usage);

}  // namespace corenoise::man
