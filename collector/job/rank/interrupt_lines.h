// The interrupt lines that fired on a node's CPUs during a job, named as
// the kernel names them, from /proc/interrupts (each IRQ with its device,
// and the architecture's lines: LOC, RES, CAL, ...) and /proc/softirqs
// (NET_RX, BLOCK, TIMER, ...): world-readable, so a rank needs no
// privilege to say which line took its CPU. Read by one rank per node at
// MPI_Init and again at each reduction: one read of each file (the kernel
// prints every line for every CPU: 4 KB here, a few MB on a node of 256
// CPUs and a thousand IRQs).
//
// Counts, not time: the kernel keeps no time per line without tracing.
// What makes a line a culprit on a CPU is how much more it fired there
// than on the node's other CPUs (their median): a NIC's queue or a disk's
// IRQ bound to the rank's CPU, not the timer every CPU takes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collector/job/model/rank_record.h"

namespace corenoise {

// One reading of one of the files: every line's count per CPU.
struct InterruptTable {
  // The columns' CPUs, as the header names them: /proc/interrupts has the
  // online CPUs, /proc/softirqs the possible ones.
  std::vector<unsigned> cpus;
  struct Line {
    std::string id;                     // "41", "LOC"; a softirq's name ("NET_RX")
    std::string name;                   // "mlx5_comp3", "Local timer interrupts"; "" for a softirq
    std::vector<std::uint64_t> counts;  // per column of `cpus`
  };
  std::vector<Line> lines;
  bool softirqs = false;  // read from /proc/softirqs
};

// Parsers, for tests and fuzzing: anything garbled is left out (a line
// whose counts do not parse), never an error.
InterruptTable parse_interrupts(std::string_view text);
InterruptTable parse_softirqs(std::string_view text);

// Both files under `proc_root`, each its own table (empty where it cannot
// be read).
struct InterruptTables {
  InterruptTable interrupts, softirqs;
};
InterruptTables read_interrupt_tables(const std::string& proc_root);

// Per CPU, the lines that fired more there over the `seconds` between
// `before` and `after` than on the node's median other CPU: at least
// kMinInterruptExcess and kMinInterruptExcessRate a second more, and 1.5
// times as often; the `per_cpu` most first. The kernel's counts are 32
// bits a CPU and wrap (a busy NIC queue, in half a day): taken modulo
// 2^32. A table whose CPUs changed between the readings (a CPU went on or
// off line) gives nothing.
inline constexpr double kMinInterruptExcess = 1000;
inline constexpr double kMinInterruptExcessRate = 100;
std::vector<RankRecord::InterruptLine> interrupt_lines_between(const InterruptTables& before,
                                                               const InterruptTables& after,
                                                               double seconds, std::size_t per_cpu);

}  // namespace corenoise
