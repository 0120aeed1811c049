#include "collector/job/rank/proc_parse.h"

#include <algorithm>

#include "probe/proc_text.h"

namespace corenoise {

using proc_text::next_line;
using proc_text::next_token;
using proc_text::to_number;

std::optional<TaskStat> parse_task_stat(std::string_view text) {
  const std::size_t open = text.find('(');
  const std::size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  TaskStat stat;
  stat.comm = text.substr(open + 1, close - open - 1);
  // Fields after the comm, numbered as proc(5) does from 3 (state).
  std::string_view rest = text.substr(close + 1);
  std::optional<std::uint64_t> value;
  for (int field = 3; field <= 39; ++field) {
    const std::string_view token = next_token(rest);
    if (token.empty()) return std::nullopt;
    if (field == 3) continue;  // state, a letter
    if (field != 10 && field != 12 && field != 14 && field != 15 && field != 39) continue;
    value = to_number(token);
    if (!value) return std::nullopt;
    switch (field) {
      case 10:
        stat.minor_faults = *value;
        break;
      case 12:
        stat.major_faults = *value;
        break;
      case 14:
        stat.user_ticks = *value;
        break;
      case 15:
        stat.system_ticks = *value;
        break;
      case 39:
        stat.processor = static_cast<int>(std::min<std::uint64_t>(*value, 1u << 30));
        break;
    }
  }
  return stat;
}

std::optional<SchedStat> parse_schedstat(std::string_view text) {
  const auto run = to_number(next_token(text));
  const auto wait = to_number(next_token(text));
  if (!run || !wait) return std::nullopt;
  return SchedStat{*run, *wait};
}

CpuTicks parse_cpu_ticks(std::string_view stat_text, std::span<const unsigned> cpus) {
  CpuTicks ticks;
  while (!stat_text.empty()) {
    std::string_view line = next_line(stat_text);
    const std::string_view name = next_token(line);
    if (name.size() < 4 || name.substr(0, 3) != "cpu") {
      // The cpu lines come first; past them there is nothing of ours.
      if (ticks.cpus_found > 0) break;
      continue;
    }
    const auto cpu = to_number(name.substr(3));
    if (!cpu || std::find(cpus.begin(), cpus.end(), *cpu) == cpus.end()) continue;
    // user nice system idle iowait irq softirq steal
    std::uint64_t v[8] = {};
    bool whole = true;
    for (auto& field : v) {
      const auto n = to_number(next_token(line));
      if (!n) {
        whole = false;
        break;
      }
      field = *n;
    }
    if (!whole) continue;
    ticks.busy += v[0] + v[1] + v[2];
    ticks.interrupts += v[5] + v[6];
    ticks.steal += v[7];
    ++ticks.cpus_found;
  }
  return ticks;
}

std::optional<std::uint64_t> parse_status_counter(std::string_view status_text,
                                                  std::string_view name) {
  while (!status_text.empty()) {
    std::string_view line = next_line(status_text);
    if (line.size() > name.size() && line.substr(0, name.size()) == name &&
        line[name.size()] == ':') {
      line.remove_prefix(name.size() + 1);
      return to_number(next_token(line));
    }
  }
  return std::nullopt;
}

}  // namespace corenoise
