#include "probe/confirmation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace corenoise {
namespace {

const CoreFigures* find_cpu(const std::vector<CoreFigures>& cores, unsigned cpu) {
  for (const auto& c : cores) {
    if (c.cpu == cpu) return &c;
  }
  return nullptr;
}

}  // namespace

std::vector<ProbeKind> probes_to_confirm(CoreState state) {
  switch (state) {
    case CoreState::throttled:
      return {ProbeKind::clock};
    case CoreState::noisy:
      return {ProbeKind::detour};
    case CoreState::contended:
      return {ProbeKind::stream};
    case CoreState::slow:
      return {ProbeKind::matmul, ProbeKind::clock, ProbeKind::detour};
    default:
      return {};
  }
}

ConfirmationPlan plan_confirmation(const ModeVerdicts& screened) {
  ConfirmationPlan plan;
  // Candidates per kind, best first: healthy measured cores nearest the
  // reference.
  std::map<std::string, std::vector<const CoreFigures*>> candidates;
  for (const auto& c : screened.cores) {
    if (is_unhealthy(c.state)) {
      plan.suspects.push_back(c.cpu);
      for (ProbeKind probe : probes_to_confirm(c.state)) {
        if (std::find(plan.probes.begin(), plan.probes.end(), probe) == plan.probes.end()) {
          plan.probes.push_back(probe);
        }
      }
    } else if (c.state == CoreState::ok) {  // not a core that was bad once (transient)
      candidates[c.kind].push_back(&c);
    }
  }
  for (auto& [kind, list] : candidates) {
    std::stable_sort(list.begin(), list.end(), [](const CoreFigures* a, const CoreFigures* b) {
      return std::fabs(a->expected_slowdown.value_or(1) - 1) <
             std::fabs(b->expected_slowdown.value_or(1) - 1);
    });
  }
  std::map<std::string, std::size_t> next;
  for (unsigned cpu : plan.suspects) {
    plan.cpus.push_back(cpu);
    plan.partners.emplace_back();
    const CoreFigures* suspect = find_cpu(screened.cores, cpu);
    const auto& list = candidates[suspect->kind];
    if (list.empty()) continue;
    const std::size_t shared = std::min(list.size(), kMaxReferencesPerKind);
    const unsigned partner = list[next[suspect->kind]++ % shared]->cpu;
    plan.partners.back() = partner;
    if (std::find(plan.references.begin(), plan.references.end(), partner) ==
        plan.references.end()) {
      plan.references.push_back(partner);
      plan.cpus.push_back(partner);
    }
  }
  std::sort(plan.probes.begin(), plan.probes.end());
  return plan;
}

SuspectCount count_suspects(const ModeVerdicts& screened) {
  SuspectCount n;
  for (const auto& c : screened.cores) {
    n.suspects += is_unhealthy(c.state) ? 1 : 0;
    n.screened += c.state != CoreState::skipped ? 1 : 0;
  }
  return n;
}

double confirmation_alpha(double false_alarm_rate, std::size_t suspects, std::size_t rounds) {
  const double family = false_alarm_rate / static_cast<double>(std::max<std::size_t>(suspects, 1));
  return std::min(0.5,
                  std::pow(family, 1.0 / static_cast<double>(std::max<std::size_t>(rounds, 1))));
}

std::size_t confirmation_rounds(double false_alarm_rate, std::size_t suspects,
                                std::size_t screened) {
  if (suspects == 0) return 0;
  if (screened < kMinScreenedForSuspectRate) return 1;
  const double n = static_cast<double>(screened);
  const double phat = std::min(1.0, static_cast<double>(suspects) / n);
  constexpr double z = 1.959964;  // 95 %
  const double centre = phat + z * z / (2 * n);
  const double half = z * std::sqrt(phat * (1 - phat) / n + z * z / (4 * n * n));
  const double p = std::min(1.0, (centre + half) / (1 + z * z / n));
  if (p >= 1) return kMaxConfirmationRounds;
  const double k = std::log(false_alarm_rate / static_cast<double>(suspects)) / std::log(p);
  return std::clamp<std::size_t>(static_cast<std::size_t>(std::ceil(std::max(k, 1.0))), 1,
                                 kMaxConfirmationRounds);
}

void apply_confirmation(ModeVerdicts& screened, std::vector<CoreFigures> round,
                        const ConfirmationPlan& plan, const Thresholds& thresholds, double alpha,
                        Mode mode) {
  // Kinds whose every measured core is a suspect have no reference core:
  // their suspects are judged against each other.
  std::vector<unsigned> references = plan.references;
  for (const auto& c : round) {
    const bool partnered = std::any_of(round.begin(), round.end(), [&](const CoreFigures& r) {
      return r.kind == c.kind && std::find(plan.references.begin(), plan.references.end(), r.cpu) !=
                                     plan.references.end();
    });
    if (!partnered) references.push_back(c.cpu);
  }
  Thresholds retest = thresholds;
  retest.alpha = alpha;
  // The re-measured cores are too few to show how far healthy peers differ:
  // the screened round's spread stands in.
  const ModeVerdicts judged =
      judge(std::move(round), retest, mode, &references, &screened.references);
  for (auto& c : screened.cores) {
    if (std::find(plan.suspects.begin(), plan.suspects.end(), c.cpu) == plan.suspects.end()) {
      continue;
    }
    // A later round for a suspect already confirmed once keeps what the
    // screen said and counts the rounds passed.
    CoreFigures::Confirmation confirmation;
    confirmation.suspected = c.state;
    confirmation.rounds = (c.confirmation ? c.confirmation->rounds : 0) + 1;
    confirmation.alpha = alpha;
    const std::size_t at =
        std::find(plan.suspects.begin(), plan.suspects.end(), c.cpu) - plan.suspects.begin();
    if (at < plan.partners.size()) confirmation.reference_cpu = plan.partners[at];
    const CoreFigures* again = find_cpu(judged.cores, c.cpu);
    if (again != nullptr && again->state != CoreState::skipped) {
      confirmation.figure = test_figure(*again, c.state);
      confirmation.bound = clears(*again, c.state, retest, alpha);
      confirmation.confirmed = confirmation.bound.has_value();
    }
    // The cause stays the round's (the suspected state's figures); the
    // re-measurement is added to it.
    c.cause.confirmation =
        Cause::Confirmation{confirmation.confirmed, confirmation.rounds, confirmation.figure};
    if (!confirmation.confirmed) c.state = CoreState::transient;
    c.confirmation = std::move(confirmation);
  }
}

}  // namespace corenoise
