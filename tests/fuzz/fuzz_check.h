// FUZZ_CHECK: an invariant of a fuzz target. A failure prints the condition
// and aborts, which libFuzzer reports as a crash and saves the input that
// caused it (a plain assert would vanish under -DNDEBUG, which
// RelWithDebInfo sets).
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition)                                                                \
  do {                                                                                       \
    if (!(condition)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (false)
