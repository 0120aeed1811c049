#include "docs/man/roff.h"

#include <cstdio>
#include <stdexcept>

namespace corenoise::man {
namespace {

bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_alpha(char c) { return is_lower(c) || is_upper(c); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_option_char(char c) { return is_lower(c) || is_digit(c) || c == '-'; }

// Decodes the UTF-8 sequence at `text[i]` and advances `i` past it.
char32_t decode_utf8(std::string_view text, std::size_t& i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  const int extra = lead >= 0xF8 ? -1 : lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : -1;
  if (extra < 0 || i + static_cast<std::size_t>(extra) >= text.size()) {
    throw std::invalid_argument("invalid UTF-8 in help text: '" + std::string(text) + "'");
  }
  char32_t code = lead & (0x3F >> extra);
  for (int k = 1; k <= extra; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) {
      throw std::invalid_argument("invalid UTF-8 in help text: '" + std::string(text) + "'");
    }
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  i += extra + 1;
  return code;
}

// One character (or UTF-8 sequence) at text[i], escaped; advances `i`.
std::string escape_at(std::string_view text, std::size_t& i) {
  const char c = text[i];
  if (static_cast<unsigned char>(c) >= 0x80) {
    char glyph[16];
    std::snprintf(glyph, sizeof glyph, "\\[u%04X]", static_cast<unsigned>(decode_utf8(text, i)));
    return glyph;
  }
  ++i;
  switch (c) {
    case '\\':
      return "\\e";
    case '\'':
      return "\\(aq";  // not a typographic quote: it is typed
    case '`':
      return "\\(ga";
    case '-': {
      // A hyphen inside a word ("fixed-work") may break a line; any other
      // dash ("0-3", "'-'", "-ppn") is typed as is.
      const bool in_word = i >= 2 && is_alpha(text[i - 2]) && i < text.size() && is_alpha(text[i]);
      return in_word ? "-" : "\\-";
    }
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        throw std::invalid_argument("control character in help text: '" + std::string(text) + "'");
      }
      return std::string(1, c);
  }
}

std::string escape(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) out += escape_at(text, i);
  return out;
}

// A word typed as one unit ("--name", "state-dir"): \- dashes, no
// hyphenation. Only for words of letters, digits and "_-:./$".
std::string option_word(std::string_view word) {
  std::string out = "\\%";
  for (char c : word) out += c == '-' ? std::string("\\-") : std::string(1, c);
  return out;
}

std::string bold(const std::string& roff) { return "\\fB" + roff + "\\fR"; }
std::string italic(const std::string& roff) { return "\\fI" + roff + "\\fR"; }

// The length of the option token at text[i] ("--name", or "-name" after a
// blank such as mpiexec's "-ppn"), or 0. Hyphens inside words ("node-local")
// are no options.
std::size_t option_at(std::string_view text, std::size_t i) {
  const std::size_t dashes = text.substr(i, 2) == "--" ? 2 : text.substr(i, 1) == "-" ? 1 : 0;
  if (dashes == 0 || i + dashes >= text.size() || !is_lower(text[i + dashes])) return 0;
  if (i > 0) {
    const char before = text[i - 1];
    if (dashes == 2 ? is_option_char(before) || is_upper(before) : before != ' ' && before != '(') {
      return 0;
    }
  }
  std::size_t end = i + dashes;
  while (end < text.size() && is_option_char(text[end])) ++end;
  while (text[end - 1] == '-') --end;  // "--name-" ends a sentence's dash
  return end - i;
}

std::string inline_markup(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '`') {
      const auto close = text.find('`', i + 1);
      if (close != std::string_view::npos && close > i + 1) {
        out += bold(escape(text.substr(i + 1, close - i - 1)));
        i = close + 1;
        continue;
      }
    }
    if (const std::size_t length = option_at(text, i); length > 0) {
      out += bold(option_word(text.substr(i, length)));
      i += length;
      continue;
    }
    out += escape_at(text, i);
  }
  return out;
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += (out.empty() ? "" : " ") + line;
  return out;
}

// A macro argument in double quotes.
std::string quoted_argument(const std::string& text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size();) {
    out += text[i] == '"' ? (++i, std::string("\\(dq")) : escape_at(text, i);
  }
  return out + "\"";
}

}  // namespace

std::string roff_text(std::string_view text, bool markup) {
  return markup ? inline_markup(text) : escape(text);
}

std::string roff_line(std::string_view text, bool markup) {
  const std::string out = roff_text(text, markup);
  // \& (a zero-width nothing) keeps a leading '.' or '\'' from being a request.
  return (out.starts_with('.') || out.starts_with('\'') ? "\\&" : "") + out + "\n";
}

std::string roff_term(std::string_view term) {
  std::string out;
  const auto word_char = [](char c) {
    return is_alpha(c) || is_digit(c) || c == '_' || c == '-' || c == ':' || c == '.' || c == '/' ||
           c == '$';
  };
  for (std::size_t i = 0; i < term.size();) {
    if (!word_char(term[i])) {
      out += escape_at(term, i);
      continue;
    }
    std::size_t end = i;
    while (end < term.size() && word_char(term[end])) ++end;
    const std::string_view word = term.substr(i, end - i);
    bool lower = false, upper = false;
    for (char c : word) {
      lower = lower || is_lower(c);
      upper = upper || is_upper(c);
    }
    if (word.starts_with('-') || lower) {
      out += bold(option_word(word));  // typed as is: "--listen", "corenoise", "state-dir"
    } else if (upper) {
      out += italic(escape(word));
    } else {
      out += escape(word);  // "1", "..."
    }
    i = end;
  }
  return out;
}

std::string render_blocks(const std::vector<HelpBlock>& blocks, HeadingStyle style) {
  std::string out;
  for (const auto& block : blocks) {
    switch (block.kind) {
      case HelpBlock::Kind::paragraph:
        out += ".PP\n";
        for (const auto& line : block.lines) out += roff_line(line);
        break;
      case HelpBlock::Kind::heading: {
        std::string text = join(block.lines);
        // .SS sets its text like a tag: a heading longer than a line reads
        // badly there, so it stays a bold paragraph.
        if (style == HeadingStyle::subsection && block.lines.size() == 1 && text.size() <= 72) {
          text.pop_back();  // the ':'
          out += ".SS " + quoted_argument(text) + "\n";
        } else {
          out += ".PP\n" + bold(roff_text(text, false)) + "\n";
        }
        break;
      }
      case HelpBlock::Kind::entries:
        for (const auto& entry : block.entries) {
          out += ".TP\n" + roff_term(entry.term) + "\n";
          for (const auto& line : entry.text) out += roff_line(line);
        }
        break;
    }
  }
  return out;
}

std::string render_usage(const std::vector<std::string>& usage) {
  std::string out;
  for (std::size_t i = 0; i < usage.size(); ++i) {
    out += (i > 0 ? ".br\n" : "") + roff_term(usage[i]) + "\n";
  }
  return out;
}

}  // namespace corenoise::man
