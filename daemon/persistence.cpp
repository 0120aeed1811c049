#include "daemon/persistence.h"

#include <algorithm>
#include <utility>

namespace corenoise {

VerdictHistory::VerdictHistory(std::size_t rounds) : capacity_(std::max<std::size_t>(rounds, 1)) {}

void VerdictHistory::record(CoreState state, Cause cause) {
  round_state_ = state;
  round_cause_ = cause;
  // A CPU a job kept busy for an hour must neither forget that it was bad
  // before nor look healthy for it: skipped rounds are no evidence, and are
  // not remembered.
  if (state == CoreState::skipped) return;
  window_.push_back({state, std::move(cause)});
  while (window_.size() > capacity_) window_.pop_front();
}

void VerdictHistory::resize(std::size_t rounds) {
  capacity_ = std::max<std::size_t>(rounds, 1);
  while (window_.size() > capacity_) window_.pop_front();
}

std::size_t VerdictHistory::unhealthy_rounds() const {
  return static_cast<std::size_t>(std::count_if(
      window_.begin(), window_.end(), [](const Entry& e) { return is_unhealthy(e.state); }));
}

PersistentVerdict VerdictHistory::verdict(const PersistenceRule& rule) const {
  PersistentVerdict v;
  v.round_state = round_state_;
  v.round_cause = round_cause_;
  v.rounds = window_.size();
  v.unhealthy_rounds = unhealthy_rounds();
  const auto latest_bad = std::find_if(window_.rbegin(), window_.rend(),
                                       [](const Entry& e) { return is_unhealthy(e.state); });
  if (round_state_ == CoreState::skipped) {
    // Not measured now (busy, offline, overran): said so, as without
    // persistence (persist-rounds 1 must be the round's own verdict); the
    // remembered rounds stay for when it is measured again.
    v.state = CoreState::skipped;
    v.cause = round_cause_;
  } else if (v.unhealthy_rounds >= std::max<std::size_t>(rule.bad, 1)) {
    v.state = latest_bad->state;
    v.cause = latest_bad->cause;
  } else if (v.unhealthy_rounds > 0) {
    // Shown, never hidden: what it looked like, and how rarely.
    v.state = CoreState::transient;
    v.cause = latest_bad->cause;
    v.cause.recurrence =
        Cause::Recurrence{latest_bad->state, v.unhealthy_rounds, v.rounds, rule.bad};
  } else if (round_state_ == CoreState::transient) {
    // The round's own re-measurement did not bear out a suspect.
    v.state = CoreState::transient;
    v.cause = round_cause_;
  } else {
    v.state = CoreState::ok;
    v.cause = round_cause_;
  }
  return v;
}

}  // namespace corenoise
