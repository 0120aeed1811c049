#include "collector/job/rank/interrupt_lines.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>

#include "probe/proc_text.h"

namespace corenoise {
namespace {

using proc_text::next_line;
using proc_text::next_token;
using proc_text::to_number;

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && proc_text::is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && proc_text::is_blank(s.back())) s.remove_suffix(1);
  return s;
}

// The header's "CPU0 CPU1 CPU5 ...": the columns' CPUs (offline CPUs have
// none); empty where a word is not CPU<n>.
std::vector<unsigned> header_cpus(std::string_view header) {
  std::vector<unsigned> cpus;
  for (std::string_view word = next_token(header); !word.empty(); word = next_token(header)) {
    const auto cpu = word.starts_with("CPU") ? to_number(word.substr(3)) : std::nullopt;
    if (!cpu || *cpu > 1u << 20) return {};
    cpus.push_back(static_cast<unsigned>(*cpu));
  }
  return cpus;
}

// "ID: n n n ... rest": false where fewer counts than columns parse (ERR,
// MIS: one count; the line is not per CPU).
bool parse_line(std::string_view line, std::size_t columns, InterruptTable::Line& out) {
  const std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) return false;
  out.id = std::string(trimmed(line.substr(0, colon)));
  if (out.id.empty()) return false;
  std::string_view rest = line.substr(colon + 1);
  out.counts.clear();
  for (std::size_t i = 0; i < columns; ++i) {
    const auto count = to_number(next_token(rest));
    if (!count) return false;
    out.counts.push_back(*count);
  }
  // After the counts: the chip, the hardware IRQ and trigger, and the
  // device's name last ("IO-APIC 4-edge ttyS0"); the description of an
  // architecture's line ("Local timer interrupts").
  const std::string_view tail = trimmed(rest);
  const bool numbered = to_number(out.id).has_value();
  const std::size_t last_blank = tail.find_last_of(" \t");
  out.name = std::string(
      numbered && last_blank != std::string_view::npos ? tail.substr(last_blank + 1) : tail);
  return true;
}

InterruptTable parse_table(std::string_view text, bool softirqs) {
  InterruptTable table;
  table.softirqs = softirqs;
  table.cpus = header_cpus(next_line(text));
  if (table.cpus.empty()) return table;
  while (!text.empty()) {
    InterruptTable::Line line;
    if (parse_line(next_line(text), table.cpus.size(), line)) {
      if (softirqs) line.name.clear();
      table.lines.push_back(std::move(line));
    }
  }
  return table;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();  // one read, not a character at a time
  return text.str();
}

// The median of `sorted` without its element at `skip` (the lower middle).
double median_without(const std::vector<std::uint64_t>& sorted, std::size_t skip) {
  const std::size_t k = (sorted.size() - 2) / 2;
  return static_cast<double>(sorted[k < skip ? k : k + 1]);
}

// One table's lines beyond the other CPUs', into `by_cpu` (by OS index).
void add_lines_between(const InterruptTable& before, const InterruptTable& after, double least,
                       std::map<unsigned, std::vector<RankRecord::InterruptLine>>& by_cpu) {
  const std::size_t columns = after.cpus.size();
  if (columns < 2 || before.cpus != after.cpus) return;
  std::map<std::string, const InterruptTable::Line*> earlier;
  for (const auto& line : before.lines) earlier[line.id] = &line;
  std::vector<std::uint64_t> fired(columns), sorted(columns);
  for (const auto& line : after.lines) {
    const auto found = earlier.find(line.id);
    for (std::size_t c = 0; c < columns; ++c) {
      const std::uint64_t then = found == earlier.end() ? 0 : found->second->counts[c];
      fired[c] = (line.counts[c] - then) & 0xffffffffu;  // the kernel's per-CPU counts wrap at 2^32
    }
    sorted = fired;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t c = 0; c < columns; ++c) {
      const double count = static_cast<double>(fired[c]);
      const std::size_t at = static_cast<std::size_t>(
          std::lower_bound(sorted.begin(), sorted.end(), fired[c]) - sorted.begin());
      const double others = median_without(sorted, at);
      if (count - others < least || count < 1.5 * others) continue;
      by_cpu[after.cpus[c]].push_back({static_cast<int>(after.cpus[c]), line.id, line.name,
                                       after.softirqs, count, count - others});
    }
  }
}

}  // namespace

InterruptTable parse_interrupts(std::string_view text) { return parse_table(text, false); }
InterruptTable parse_softirqs(std::string_view text) { return parse_table(text, true); }

InterruptTables read_interrupt_tables(const std::string& proc_root) {
  return {parse_interrupts(read_all(proc_root + "/interrupts")),
          parse_softirqs(read_all(proc_root + "/softirqs"))};
}

std::vector<RankRecord::InterruptLine> interrupt_lines_between(const InterruptTables& before,
                                                               const InterruptTables& after,
                                                               double seconds,
                                                               std::size_t per_cpu) {
  const double least = std::max(kMinInterruptExcess, kMinInterruptExcessRate * seconds);
  std::map<unsigned, std::vector<RankRecord::InterruptLine>> by_cpu;
  add_lines_between(before.interrupts, after.interrupts, least, by_cpu);
  add_lines_between(before.softirqs, after.softirqs, least, by_cpu);
  std::vector<RankRecord::InterruptLine> out;
  for (auto& [cpu, lines] : by_cpu) {
    const std::size_t shown = std::min(per_cpu, lines.size());
    std::partial_sort(lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(shown),
                      lines.end(),
                      [](const auto& a, const auto& b) { return a.excess > b.excess; });
    out.insert(out.end(), lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(shown));
  }
  return out;
}

}  // namespace corenoise
