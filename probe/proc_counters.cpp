#include "probe/proc_counters.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <new>

#include "probe/proc_text.h"

namespace corenoise {
namespace {

using proc_text::next_line;
using proc_text::next_token;
using proc_text::to_number;

// Reads a whole file into `out` (reusing its capacity). /proc files report
// size 0 in stat(), so read until EOF instead of sizing up front.
bool read_file(const std::string& path, std::string& out) noexcept {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = true;
  try {
    out.clear();
    constexpr std::size_t kChunk = 64 * 1024;
    for (;;) {
      std::size_t old = out.size();
      out.resize(old + kChunk);
      ssize_t n = ::read(fd, out.data() + old, kChunk);
      if (n < 0 && errno == EINTR) {
        out.resize(old);
        continue;
      }
      out.resize(old + (n > 0 ? static_cast<std::size_t>(n) : 0));
      if (n <= 0) {
        ok = n == 0;
        break;
      }
    }
  } catch (const std::bad_alloc&) {
    ok = false;
  }
  ::close(fd);
  return ok;
}

// One buffer per thread, reused across calls: a 240-CPU /proc/interrupts is
// close to a megabyte and is read around every detour window.
std::string& thread_buffer() {
  thread_local std::string buffer;
  return buffer;
}

}  // namespace

std::optional<std::uint64_t> sum_cpu_column(std::string_view text, unsigned cpu) {
  // Header: "CPU0 CPU1 CPU3 ..." — offline CPUs have no column, so the
  // column of `cpu` is its position in the header, not `cpu` itself.
  std::string_view header = next_line(text);
  std::size_t columns = 0;
  std::optional<std::size_t> column;
  for (std::string_view tok = next_token(header); !tok.empty(); tok = next_token(header)) {
    if (tok.size() < 4 || tok.substr(0, 3) != "CPU") return std::nullopt;
    auto n = to_number(tok.substr(3));
    if (!n) return std::nullopt;
    if (*n == cpu) column = columns;
    ++columns;
  }
  if (!column) return std::nullopt;

  std::uint64_t sum = 0;
  bool any_row = false;
  while (!text.empty()) {
    std::string_view line = next_line(text);
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    line.remove_prefix(colon + 1);
    // The counts come first; the description after them may hold numbers
    // too, so only the first `columns` tokens are counts.
    std::uint64_t value = 0;
    std::size_t numbers = 0;
    for (; numbers < columns; ++numbers) {
      auto n = to_number(next_token(line));
      if (!n) break;
      if (numbers == *column) value = *n;
    }
    // ERR:, MIS: and truncated rows have fewer counts than CPUs.
    if (numbers < columns) continue;
    sum += value;
    any_row = true;
  }
  // A header alone is a truncated file, not a CPU without interrupts.
  if (!any_row) return std::nullopt;
  return sum;
}

std::optional<std::uint64_t> steal_ticks(std::string_view stat_text, unsigned cpu) {
  const std::string name = "cpu" + std::to_string(cpu);
  while (!stat_text.empty()) {
    std::string_view line = next_line(stat_text);
    if (next_token(line) != name) continue;
    // user nice system idle iowait irq softirq steal: steal is the 8th.
    std::optional<std::uint64_t> value;
    for (int field = 0; field < 8; ++field) {
      value = to_number(next_token(line));
      if (!value) return std::nullopt;
    }
    return value;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> run_queue_wait_ns(std::string_view schedstat_text) {
  std::string_view line = next_line(schedstat_text);
  if (!to_number(next_token(line))) return std::nullopt;  // on-CPU time comes first
  return to_number(next_token(line));
}

ProcCounterReader::ProcCounterReader(std::string proc_root) : root_(std::move(proc_root)) {}

CpuCounters ProcCounterReader::read(unsigned cpu) const {
  CpuCounters counters;
  try {
    std::string& buffer = thread_buffer();
    if (read_file(root_ + "/interrupts", buffer)) {
      counters.interrupts = sum_cpu_column(buffer, cpu);
    }
    if (read_file(root_ + "/softirqs", buffer)) {
      counters.softirqs = sum_cpu_column(buffer, cpu);
    }
    if (read_file(root_ + "/stat", buffer)) {
      if (auto ticks = steal_ticks(buffer, cpu)) {
        static const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
        if (ticks_per_second > 0) {
          counters.steal_seconds =
              static_cast<double>(*ticks) / static_cast<double>(ticks_per_second);
        }
      }
    }
    if (read_file(root_ + "/thread-self/schedstat", buffer)) {
      if (auto ns = run_queue_wait_ns(buffer)) counters.run_queue_wait_seconds = *ns * 1e-9;
    }
  } catch (const std::bad_alloc&) {
    // Path strings only; a reader that cannot allocate reports no data.
  }
  return counters;
}

}  // namespace corenoise
