// Isolated mode with every probe thread alive at once: exactly one measures
// at a time, round-robin — cpu A sample 1, cpu B sample 1, …, cpu A sample 2
// — so that whatever drifts during a round (a hypervisor's episodes, the
// host's clock, other tenants' memory traffic) reaches every core alike,
// instead of landing on whichever core happened to be measured then. On a
// 2-vCPU VM whose noise floor moves by 5 points within a second, measuring
// one core after the other made a clean core look noisy and a noisy one
// clean; interleaved, both see the same floor.
//
// Waiting threads sleep on their own futex word (a spinning thread on an SMT
// sibling would slow the core being measured); only the next one is woken.
// The words are shared futexes in a State that may live in memory shared by
// several processes: with one rank per core (`corenoise sweep
// --rank-per-core`) the ranks of a node take their turns exactly as the
// threads of one process do.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "probe/futex.h"
#include "probe/tsc.h"

namespace corenoise {

class TurnTaking {
 public:
  // Bytes of a State for `participants`, and its construction in `memory`
  // (suitably aligned for 8-byte atomics): once per round, by one process,
  // before any participant uses it. Participant 0 has the first turn.
  static std::size_t state_bytes(std::size_t participants) {
    return sizeof(Header) + participants * sizeof(std::atomic<std::uint32_t>);
  }
  static void construct_state(void* memory, std::size_t participants) {
    auto* header = new (memory) Header;
    auto* turns = reinterpret_cast<std::atomic<std::uint32_t>*>(header + 1);
    for (std::size_t i = 0; i < participants; ++i)
      new (turns + i) std::atomic<std::uint32_t>(i == 0);
  }

  // A ring of `participants` with its own state (one process).
  TurnTaking(std::size_t participants, const std::atomic<bool>* cancel)
      : own_(new std::max_align_t[(state_bytes(participants) + sizeof(std::max_align_t) - 1) /
                                  sizeof(std::max_align_t)]),
        participants_(participants),
        cancel_(cancel) {
    construct_state(own_.get(), participants);
    bind(own_.get());
  }
  // A ring whose state another process may share: `state` was set up with
  // construct_state(state, participants).
  TurnTaking(void* state, std::size_t participants, const std::atomic<bool>* cancel)
      : participants_(participants), cancel_(cancel) {
    bind(state);
  }
  TurnTaking(const TurnTaking&) = delete;
  TurnTaking& operator=(const TurnTaking&) = delete;

  // Each participant calls this once, when ready to measure; returns when
  // all are (so that no allocation of one overlaps the measuring of another),
  // or when the round is cancelled (a peer that never gets its CPU must not
  // hold the others here; wait_turn then says cancelled).
  void prepared() {
    auto& count = header_->prepared;
    const auto all = static_cast<std::uint32_t>(participants_);
    if (count.fetch_add(1, std::memory_order_acq_rel) + 1 == all) {
      futex_wake(count);
      return;
    }
    for (std::uint32_t seen; (seen = count.load(std::memory_order_acquire)) < all;) {
      futex_wait(count, seen, std::chrono::milliseconds(20));
      if (cancelled()) return;
    }
  }

  // Blocks until it is `who`'s turn; false if the round is cancelled.
  bool wait_turn(std::size_t who) {
    std::atomic<std::uint32_t>& mine = turns_[who];
    for (;;) {
      std::uint32_t mine_now = 1;
      if (mine.compare_exchange_strong(mine_now, 0, std::memory_order_acq_rel)) {
        return !cancelled();
      }
      futex_wait(mine, 0, std::chrono::milliseconds(20));
      if (cancelled()) return false;
    }
  }

  // Hands the turn to the next participant, noting when (TSC ticks; the
  // TSC is common to all cores and processes of a node).
  void pass(std::size_t who) {
    header_->handed_over.store(read_tsc(), std::memory_order_release);
    std::atomic<std::uint32_t>& next = turns_[(who + 1) % participants_];
    next.store(1, std::memory_order_release);
    futex_wake(next, 1);
  }

  // When the current turn was handed over (0 before the first hand-over).
  // Whatever kept the next thread from starting then — the thread the core
  // was running instead — is lost time of that core (see DetourProbe::run).
  std::uint64_t handed_over() const { return header_->handed_over.load(std::memory_order_acquire); }

 private:
  struct Header {
    std::atomic<std::uint64_t> handed_over{0};
    std::atomic<std::uint32_t> prepared{0};
  };
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

  void bind(void* state) {
    header_ = static_cast<Header*>(state);
    turns_ = reinterpret_cast<std::atomic<std::uint32_t>*>(header_ + 1);
  }
  bool cancelled() const { return cancel_ != nullptr && cancel_->load(std::memory_order_relaxed); }

  std::unique_ptr<std::max_align_t[]> own_;
  std::size_t participants_;
  const std::atomic<bool>* cancel_;
  Header* header_ = nullptr;
  std::atomic<std::uint32_t>* turns_ = nullptr;
};

}  // namespace corenoise
