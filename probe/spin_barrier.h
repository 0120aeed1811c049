// A barrier that spins instead of sleeping, so that all cores leave it
// within nanoseconds of each other (a futex wake-up would stagger them by
// tens of microseconds).
//
// Cancellation is decided once per phase by the last thread to arrive, so
// every participant gets the same answer for the same phase and none is
// left waiting for a peer that stopped.
//
// The barrier's state may live in memory shared by several processes (one
// rank per core, see Runner's SharedRound): it holds only lock-free atomics.
#pragma once

#include <immintrin.h>

#include <atomic>
#include <cstddef>

namespace corenoise {

class SpinBarrier {
 public:
  struct State {
    std::atomic<std::size_t> arrived{0};
    std::atomic<std::size_t> generation{0};
    std::atomic<bool> cancelled{false};
  };
  static_assert(std::atomic<std::size_t>::is_always_lock_free &&
                std::atomic<bool>::is_always_lock_free);

  // `cancel` may be null (never cancelled). `shared`, if set, is a State
  // that every participant's barrier uses (constructed once, before any
  // participant arrives); otherwise the barrier has its own. `abandon`, if
  // set, breaks the barrier for good: waiters stop spinning and return false
  // at once, without waiting for a peer that may never arrive (a probe
  // thread past the round's deadline); unlike `cancel`, the answer is then
  // not the same for every participant of the phase, so only a round that is
  // being given up as a whole may set it.
  SpinBarrier(std::size_t participants, const std::atomic<bool>* cancel, State* shared = nullptr,
              const std::atomic<bool>* abandon = nullptr)
      : expected_(participants),
        cancel_(cancel),
        abandon_(abandon),
        state_(shared != nullptr ? *shared : own_) {}
  SpinBarrier(const SpinBarrier&) = delete;
  SpinBarrier& operator=(const SpinBarrier&) = delete;

  // Waits for all participants; false if the round is cancelled as of this
  // phase (then for all participants alike).
  bool arrive_and_wait() {
    const std::size_t generation = state_.generation.load(std::memory_order_acquire);
    if (state_.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == expected_) {
      state_.arrived.store(0, std::memory_order_relaxed);
      state_.cancelled.store(cancel_ != nullptr && cancel_->load(std::memory_order_relaxed),
                             std::memory_order_relaxed);
      state_.generation.fetch_add(1, std::memory_order_release);
    } else {
      while (state_.generation.load(std::memory_order_acquire) == generation) {
        if (abandon_ != nullptr && abandon_->load(std::memory_order_relaxed)) return false;
        _mm_pause();
      }
    }
    return !state_.cancelled.load(std::memory_order_relaxed);
  }

 private:
  const std::size_t expected_;
  const std::atomic<bool>* cancel_;
  const std::atomic<bool>* abandon_;
  State own_;
  State& state_;
};

}  // namespace corenoise
