#include "probe/report.h"

#include <unistd.h>

#include <optional>

namespace corenoise {

std::string local_hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

Cause unprobed_cause(const ProcessingUnit& pu) {
  return pu.usable() ? skipped_cause(SkipReason::not_probed)
                     : skipped_cause(SkipReason::other, pu.skip_reason);
}

ModeReport make_mode_report(const RoundSamples& round, const std::vector<ProcessingUnit>& pus,
                            const Thresholds& thresholds,
                            const std::map<unsigned, Cause>& skip_causes) {
  std::vector<CoreFigures> cores;
  cores.reserve(pus.size());
  for (const auto& pu : pus) {
    const CpuSamples* samples = nullptr;
    for (const auto& s : round.cpus) {
      if (s.cpu == pu.cpu) samples = &s;
    }
    if (samples != nullptr) {
      cores.push_back(summarize(*samples, pu.kind));
      cores.back().top_perf = pu.top_perf;
    } else {
      CoreFigures skipped;
      skipped.cpu = pu.cpu;
      skipped.kind = pu.kind;
      skipped.state = CoreState::skipped;
      const auto cause = skip_causes.find(pu.cpu);
      skipped.cause = cause != skip_causes.end() ? cause->second
                      : pu.usable()              ? skipped_cause(SkipReason::not_selected)
                                                 : skipped_cause(SkipReason::other, pu.skip_reason);
      cores.push_back(std::move(skipped));
    }
  }
  ModeReport report;
  report.mode = round.mode;
  report.started_unix_seconds = round.started_unix_seconds;
  report.duration_seconds = round.duration_seconds;
  report.cancelled = round.cancelled;
  report.verdicts = judge(std::move(cores), thresholds, round.mode);
  return report;
}

void confirm_mode_report(ModeReport& report, const std::vector<ProcessingUnit>& pus,
                         const ProbeSettings& settings, std::size_t suspects_judged,
                         std::size_t screened, const ConfirmationRunner& run_round) {
  if (suspects_judged == 0) return;
  ModeReport::ConfirmationRound info;
  info.suspects_judged = suspects_judged;
  info.screened = screened;
  info.rounds = confirmation_rounds(settings.false_alarm_rate, suspects_judged, screened);
  info.alpha = confirmation_alpha(settings.false_alarm_rate, suspects_judged, info.rounds);
  info.suspects = count_suspects(report.verdicts).suspects;
  for (std::size_t r = 0; r < info.rounds; ++r) {
    // After the first round, only the suspects confirmed so far.
    const ConfirmationPlan plan = plan_confirmation(report.verdicts);
    const RoundSamples round = run_round(plan);
    if (plan.empty()) continue;
    if (r == 0) info.probes = plan.probes;
    info.duration_seconds += round.duration_seconds;
    std::vector<CoreFigures> figures;
    for (const CpuSamples& samples : round.cpus) {
      for (const auto& pu : pus) {
        if (pu.cpu == samples.cpu) figures.push_back(summarize(samples, pu.kind));
      }
    }
    apply_confirmation(report.verdicts, std::move(figures), plan, settings.thresholds, info.alpha,
                       report.mode);
  }
  for (const auto& c : report.verdicts.cores) {
    info.confirmed += c.confirmation && c.confirmation->confirmed ? 1 : 0;
  }
  report.confirmation = info;
}

std::size_t NodeReport::deciding_mode(std::size_t index) const {
  // Unhealthy first, then transient (a one-off stays visible), then ok.
  const auto first = [&](auto&& wanted) -> std::optional<std::size_t> {
    for (std::size_t m = 0; m < modes.size(); ++m) {
      if (wanted(modes[m].verdicts.cores[index].state)) return m;
    }
    return std::nullopt;
  };
  if (const auto m = first(is_unhealthy)) return *m;
  if (const auto m = first([](CoreState s) { return s == CoreState::transient; })) return *m;
  return first([](CoreState s) { return s == CoreState::ok; }).value_or(0);
}

NodeReport::Overall NodeReport::overall(std::size_t index) const {
  const ModeReport& deciding = modes[deciding_mode(index)];
  return {deciding.mode, &deciding.verdicts.cores[index]};
}

CoreState NodeReport::state(std::size_t index) const {
  if (modes.empty()) return CoreState::skipped;
  return overall(index).figures->state;
}

std::size_t NodeReport::count(CoreState wanted) const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < pus.size(); ++i) n += state(i) == wanted ? 1 : 0;
  return n;
}

bool NodeReport::healthy() const {
  for (std::size_t i = 0; i < pus.size(); ++i) {
    if (is_unhealthy(state(i))) return false;
  }
  return true;
}

}  // namespace corenoise
