// A word for /bin/sh: what a test splices into a command line that popen,
// system or run_command hands to the shell, where a path of the checkout
// or the build may hold a space ("/home/a user/src/corenoise").
#pragma once

#include <string>

namespace corenoise::testing {

// `text` as one word for /bin/sh, whatever it holds.
inline std::string shell_word(const std::string& text) {
  std::string word = "'";
  for (char c : text) word += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return word + "'";
}

}  // namespace corenoise::testing
