// `corenoise selftest`: injects known noise on one CPU (corenoise inject, in
// a child process), probes every usable CPU, and checks that corenoise finds
// that noise on that CPU — its size and its cause — and nothing elsewhere.
// A site runs it right after installing.
#pragma once

#include <string>
#include <vector>

namespace corenoise {

// Exit codes: 0 every check passed, 1 the tool failed or the input was bad
// (including a machine with a single usable CPU), 2 corenoise did not find
// what was injected or found noise elsewhere.
int run_selftest_command(const std::vector<std::string>& args);

}  // namespace corenoise
