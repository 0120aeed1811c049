#include "collector/report/table.h"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "probe/units.h"
#include "probe/verdict_text.h"

namespace corenoise {
namespace {

std::string cell(std::string text, int width) {
  if (static_cast<int>(text.size()) < width) text.insert(0, width - text.size(), ' ');
  return text;
}

bool shown(const CoreFigures& c) {
  return !(c.state == CoreState::skipped && c.cause.skipped == SkipReason::not_selected);
}

// One cell of a kind's column (ProbeDescriptor::columns).
std::optional<double> column_value(const CoreFigures& c, ProbeKind probe, Shown shown) {
  switch (shown) {
    case Shown::figure:
      return c.figure[probe];
    case Shown::work_rate:
      return c.matmul_flops_per_second;
    case Shown::expected_slowdown:
      return c.expected_slowdown;
    case Shown::detour_count:
      if (c.detour) return static_cast<double>(c.detour->count);
      return std::nullopt;
    case Shown::detour_max_seconds:
      if (c.detour) return c.detour->max_seconds;
      return std::nullopt;
  }
  return std::nullopt;
}

// Every kind's columns, in descriptor order.
template <typename Fn>
void for_each_column(Fn&& fn) {
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    for (const TableColumn& column : d.columns) {
      if (!column.header.empty()) fn(d.kind, column);
    }
  }
}

void print_mode(std::ostream& out, const NodeReport& r, const ModeReport& m) {
  out << to_string(m.mode) << " round: " << fixed(m.duration_seconds, 1) << " s"
      << (m.cancelled ? " (cancelled)" : "") << '\n';
  out << "  cpu core  pkg numa kind     ";
  for_each_column([&](ProbeKind, const TableColumn& column) {
    out << cell(std::string(column.header), column.width);
  });
  out << "  state\n";
  for (std::size_t i = 0; i < r.pus.size(); ++i) {
    const ProcessingUnit& pu = r.pus[i];
    const CoreFigures& c = m.verdicts.cores[i];
    if (!shown(c)) continue;
    std::string kind = pu.kind.substr(0, 9);
    kind.resize(9, ' ');
    out << cell(std::to_string(pu.cpu), 5) << cell(std::to_string(pu.core), 5)
        << cell(std::to_string(pu.package), 5) << cell(std::to_string(pu.numa_node), 5) << ' '
        << kind;
    for_each_column([&](ProbeKind probe, const TableColumn& column) {
      out << cell(fixed(column_value(c, probe, column.shown), column.scale, column.decimals),
                  column.width);
    });
    out << "  " << to_string(c.state)
        << (c.state == CoreState::skipped ? " (" + cause_text(c.cause) + ")" : std::string())
        << '\n';
  }
  for (std::size_t i = 0; i < r.pus.size(); ++i) {
    const CoreFigures& c = m.verdicts.cores[i];
    if (c.state == CoreState::ok || c.state == CoreState::skipped) continue;
    if (const std::string cause = cause_text(c.cause); !cause.empty())
      out << "  cpu " << c.cpu << ' ' << to_string(c.state) << ": " << cause << '\n';
  }
}

}  // namespace

void print_table(std::ostream& out, const NodeReport& r) {
  if (r.modes.empty()) {
    out << "  cpu core  pkg numa kind       state\n";
    for (const auto& pu : r.pus) {
      std::string kind = pu.kind.substr(0, 9);
      kind.resize(9, ' ');
      out << cell(std::to_string(pu.cpu), 5) << cell(std::to_string(pu.core), 5)
          << cell(std::to_string(pu.package), 5) << cell(std::to_string(pu.numa_node), 5) << ' '
          << kind << "  skipped (" << cause_text(unprobed_cause(pu)) << ")\n";
    }
    return;
  }
  for (const auto& m : r.modes) print_mode(out, r, m);
}

std::string summary_line(const NodeReport& r) {
  char head[200];
  std::string modes;
  for (const auto& m : r.modes)
    modes += (modes.empty() ? "" : "+") + std::string(to_string(m.mode));
  const std::size_t measured = r.pus.size() - r.count(CoreState::skipped);
  if (r.modes.empty()) {
    std::snprintf(head, sizeof head, "%zu PUs listed from %s, probed none of them", r.pus.size(),
                  r.topology_source.c_str());
    return std::string(head) + (r.this_system ? "" : " (not this machine)");
  }
  std::snprintf(head, sizeof head, "%zu of %zu CPUs probed (%s; %s n=%d reps=%d %s)", measured,
                r.pus.size(), modes.c_str(), std::string(to_string(r.settings.dtype)).c_str(),
                r.settings.matmul_size, r.settings.reps, std::string(to_string(r.isa)).c_str());
  std::string line = head;
  std::string counts;
  for (CoreState s : kAllCoreStates) {
    if (s == CoreState::skipped) continue;
    if (const std::size_t n = r.count(s); n > 0) {
      counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + std::string(to_string(s));
    }
  }
  line += ": " + (counts.empty() ? std::string("nothing measured") : counts);
  // The worst core: the highest expected slowdown among unhealthy ones.
  std::optional<std::size_t> worst;
  double worst_slowdown = 0;
  for (std::size_t i = 0; i < r.pus.size(); ++i) {
    const CoreState s = r.state(i);
    if (!is_unhealthy(s)) continue;
    const double slowdown = r.overall(i).figures->expected_slowdown.value_or(0);
    if (!worst || slowdown > worst_slowdown) {
      worst = i;
      worst_slowdown = slowdown;
    }
  }
  if (worst) {
    line += "; worst: cpu " + std::to_string(r.pus[*worst].cpu) + " " +
            std::string(to_string(r.state(*worst))) + ", expected slowdown " +
            fixed(worst_slowdown, 3);
  }
  return line;
}

}  // namespace corenoise
