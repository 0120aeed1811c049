// Isolated mode with every probe thread alive at once: exactly one measures
// at a time, round-robin — cpu A sample 1, cpu B sample 1, …, cpu A sample 2
// — so that whatever drifts during a round (a hypervisor's episodes, the
// host's clock, other tenants' memory traffic) reaches every core alike,
// instead of landing on whichever core happened to be measured then. On a
// 2-vCPU VM whose noise floor moves by 5 points within a second, measuring
// one core after the other made a clean core look noisy and a noisy one
// clean; interleaved, both see the same floor.
//
// Waiting threads sleep on their own semaphore (a spinning thread on an SMT
// sibling would slow the core being measured); only the next thread is woken.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <memory>
#include <semaphore>
#include <vector>

#include "probe/tsc.h"

namespace corenoise {

class TurnTaking {
 public:
  TurnTaking(std::size_t participants, const std::atomic<bool>* cancel)
      : prepared_(static_cast<std::ptrdiff_t>(participants)), cancel_(cancel) {
    for (std::size_t i = 0; i < participants; ++i) {
      turns_.push_back(std::make_unique<std::binary_semaphore>(i == 0 ? 1 : 0));
    }
  }

  // Each participant calls this once, when ready to measure; returns when
  // all are (so that no allocation of one overlaps the measuring of another).
  void prepared() { prepared_.arrive_and_wait(); }

  // Blocks until it is `who`'s turn; false if the round is cancelled.
  bool wait_turn(std::size_t who) {
    while (!turns_[who]->try_acquire_for(std::chrono::milliseconds(20))) {
      if (cancelled()) return false;
    }
    return !cancelled();
  }

  // Hands the turn to the next participant, noting when (TSC ticks).
  void pass(std::size_t who) {
    handed_over_.store(read_tsc(), std::memory_order_release);
    turns_[(who + 1) % turns_.size()]->release();
  }

  // When the current turn was handed over (0 before the first hand-over).
  // Whatever kept the next thread from starting then — the thread the core
  // was running instead — is lost time of that core (see DetourProbe::run).
  std::uint64_t handed_over() const { return handed_over_.load(std::memory_order_acquire); }

 private:
  bool cancelled() const { return cancel_ != nullptr && cancel_->load(std::memory_order_relaxed); }

  std::atomic<std::uint64_t> handed_over_{0};
  std::latch prepared_;
  const std::atomic<bool>* cancel_;
  std::vector<std::unique_ptr<std::binary_semaphore>> turns_;
};

}  // namespace corenoise
