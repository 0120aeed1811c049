// Persistence of verdicts: the daemon calls a core unhealthy only when it
// stays bad. One VerdictHistory per CPU holds the overall verdicts of its
// last N measured rounds; a core is persistently unhealthy when at least K
// of them were unhealthy (is_unhealthy()), transient when at least one but
// fewer than K were. With independent rounds and a per-round false rate p,
// the persistent false rate is the binomial tail P(Bin(N, p) >= K): for
// N = 3, K = 2 and p = 0.5 % that is 7.5e-5, so 120 healthy cores drain a
// node 0.9 % of the time instead of 45 % (docs/verdicts.md).
//
// Pure: no I/O, no clock. Not thread-safe; the daemon's event loop owns its
// histories and publishes PersistentVerdict values in each Snapshot.
#pragma once

#include <cstddef>
#include <deque>

#include "probe/analysis.h"

namespace corenoise {

// N and K of the k-of-n rule. Invariant (checked by DaemonConfig's
// validation, assumed here): 1 <= bad <= rounds <= kMaxPersistRounds.
struct PersistenceRule {
  std::size_t rounds = 3;  // N: measured rounds remembered per CPU
  std::size_t bad = 2;     // K: unhealthy rounds among them that make it persistent
};
inline constexpr std::size_t kMaxPersistRounds = 64;

// What the daemon says about one CPU after its latest round.
struct PersistentVerdict {
  // ok, transient, an unhealthy state, or skipped: see VerdictHistory::verdict().
  CoreState state = CoreState::skipped;
  Cause cause;  // the deciding round's cause (for transient: what it was, and how often)
  CoreState round_state = CoreState::skipped;  // the latest round's own overall verdict
  Cause round_cause;
  std::size_t unhealthy_rounds = 0;  // unhealthy among the remembered measured rounds
  std::size_t rounds = 0;            // measured rounds remembered, at most N
};

class VerdictHistory {
 public:
  // Remembers the last `rounds` measured rounds (>= 1).
  explicit VerdictHistory(std::size_t rounds = PersistenceRule{}.rounds);

  // Adds the overall verdict of one round. A skipped round is not a
  // measured round: it makes the verdict skipped for now (the CPU was busy,
  // offline, …) but changes nothing that is remembered.
  void record(CoreState state, Cause cause);

  // Remembers `rounds` (>= 1) from now on; a shorter window keeps the newest.
  void resize(std::size_t rounds);

  std::size_t capacity() const { return capacity_; }
  std::size_t rounds() const { return window_.size(); }
  std::size_t unhealthy_rounds() const;

  // Under `rule` (rule.rounds is expected to equal capacity()):
  //   skipped (with this round's cause) if this round did not measure the
  //     CPU, or no round ever did; else
  //   unhealthy in >= rule.bad remembered rounds: the latest unhealthy
  //     round's state and cause, whatever this round said;
  //   unhealthy in fewer, but at least one (or this round itself said
  //     transient): transient;
  //   else ok.
  // unhealthy_rounds and rounds are the remembered ones in every case.
  PersistentVerdict verdict(const PersistenceRule& rule) const;

 private:
  struct Entry {
    CoreState state;
    Cause cause;
  };
  std::size_t capacity_;
  std::deque<Entry> window_;  // oldest first, at most capacity_ entries
  CoreState round_state_ = CoreState::skipped;
  Cause round_cause_;
};

}  // namespace corenoise
