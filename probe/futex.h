// Sleeping on a 32-bit atomic across processes. The C++20 atomic wait and
// std::binary_semaphore use private futexes, which only wake threads of the
// same process; these use shared ones, so that ranks of one node (one
// process per core) can pace each other through memory they all map.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <ctime>

namespace corenoise {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "a futex word must be a plain 32-bit integer");

// Sleeps while `word` holds `expected`, at most `timeout`; may return early
// (a wake-up, a signal, or `word` already changed): callers re-check.
inline void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                       std::chrono::nanoseconds timeout) {
  const timespec ts{static_cast<time_t>(timeout.count() / 1000000000),
                    static_cast<long>(timeout.count() % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT, expected, &ts, nullptr,
          0);
}

// Wakes up to `count` threads sleeping on `word`, in any process.
inline void futex_wake(std::atomic<std::uint32_t>& word, int count = INT_MAX) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE, count, nullptr, nullptr,
          0);
}

}  // namespace corenoise
