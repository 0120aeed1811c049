// A barrier that spins instead of sleeping, so that all cores leave it
// within nanoseconds of each other (a futex wake-up would stagger them by
// tens of microseconds).
//
// Cancellation is decided once per phase by the last thread to arrive, so
// every participant gets the same answer for the same phase and none is
// left waiting for a peer that stopped.
#pragma once

#include <immintrin.h>

#include <atomic>
#include <cstddef>

namespace corenoise {

class SpinBarrier {
 public:
  // `cancel` may be null (never cancelled).
  SpinBarrier(std::size_t participants, const std::atomic<bool>* cancel)
      : expected_(participants), cancel_(cancel) {}

  // Waits for all participants; false if the round is cancelled as of this
  // phase (then for all participants alike).
  bool arrive_and_wait() {
    const std::size_t generation = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == expected_) {
      arrived_.store(0, std::memory_order_relaxed);
      cancelled_.store(cancel_ != nullptr && cancel_->load(std::memory_order_relaxed),
                       std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    } else {
      while (generation_.load(std::memory_order_acquire) == generation) _mm_pause();
    }
    return !cancelled_.load(std::memory_order_relaxed);
  }

 private:
  const std::size_t expected_;
  const std::atomic<bool>* cancel_;
  std::atomic<std::size_t> arrived_{0};
  std::atomic<std::size_t> generation_{0};
  std::atomic<bool> cancelled_{false};
};

}  // namespace corenoise
