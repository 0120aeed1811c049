#include "probe/probe_kinds.h"

#include <algorithm>
#include <cmath>

namespace corenoise {

std::string_view to_string(CoreState state) {
  switch (state) {
    case CoreState::ok:
      return "ok";
    case CoreState::transient:
      return "transient";
    case CoreState::noisy:
      return "noisy";
    case CoreState::throttled:
      return "throttled";
    case CoreState::contended:
      return "contended";
    case CoreState::slow:
      return "slow";
    case CoreState::skipped:
      return "skipped";
  }
  return "?";
}

std::optional<ProbeKind> probe_kind_named(std::string_view name) {
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    if (d.name == name) return d.kind;
  }
  return std::nullopt;
}

std::optional<double> Reference::slowdown(std::optional<double> figure) const {
  if (!figure || !value) return std::nullopt;
  switch (direction) {
    case Direction::time:
      if (!(*value > 0)) return std::nullopt;
      return *figure / *value;
    case Direction::rate:
      if (!(*figure > 0)) return std::nullopt;
      return *value / *figure;
    case Direction::share:
      if (!(*figure < 1)) return std::nullopt;
      return (1 - *value) / (1 - *figure);
  }
  return std::nullopt;
}

Uncertainty Reference::slowdown_error(double figure, const Uncertainty& figure_error) const {
  if (direction != Direction::share) return combine(figure_error, error);
  if (!value || !figure_error.known() || !error.known()) return {};
  return {Scale::log, std::hypot(figure_error.se / (1 - figure), error.se / (1 - *value)),
          std::min(figure_error.df, error.df)};
}

std::optional<double> sample_seconds(ProbeKind kind, std::optional<double> figure,
                                     const KernelWork& work) {
  const ProbeDescriptor& d = descriptor(kind);
  if (!figure) return std::nullopt;
  if (d.direction == Direction::time) return figure;
  if (d.summary != Summary::work_per_median_time || !(*figure > 0)) return std::nullopt;
  return work.*d.work / *figure;
}

}  // namespace corenoise
