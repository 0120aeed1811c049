// The interrupt lines that fired on a node's CPUs during a job, named as
// the kernel names them, from /proc/interrupts (each IRQ with its device,
// and the architecture's lines: LOC, RES, CAL, ...) and /proc/softirqs
// (NET_RX, BLOCK, TIMER, ...): world-readable, so a rank needs no
// privilege to say which line took its CPU. Read by one rank per node at
// MPI_Init and again at each reduction (its cost: the kernel prints every
// line for every CPU, ~0.1 ms here, a few ms on a 128-CPU node).
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

// One reading of both files: every line's count per CPU.
struct InterruptTable {
  std::vector<unsigned> cpus;  // the columns' CPUs, as the header names them
  struct Line {
    std::string id;    // "41", "LOC"; a softirq's name ("NET_RX")
    std::string name;  // "mlx5_comp3", "Local timer interrupts"; "" for a softirq
    bool softirq = false;
    std::vector<std::uint64_t> counts;  // per column of `cpus`
  };
  std::vector<Line> lines;
};

// Parsers, for tests and fuzzing: anything garbled is left out (a line
// whose counts do not parse), never an error. Each appends to `table`; a
// second file's columns must match the first's CPUs, or it is left out.
void parse_interrupts(std::string_view text, InterruptTable& table);
void parse_softirqs(std::string_view text, InterruptTable& table);

// Both files under `proc_root`; empty where neither can be read.
InterruptTable read_interrupt_table(const std::string& proc_root);

// Per CPU, the lines that fired more there between `before` and `after`
// than on the node's median other CPU: at least kMinExcess more and 1.5
// times as often; the `per_cpu` most first. Empty when the two readings'
// CPUs differ (a CPU went on or off line).
inline constexpr double kMinInterruptExcess = 1000;
std::vector<RankRecord::InterruptLine> interrupt_lines_between(const InterruptTable& before,
                                                               const InterruptTable& after,
                                                               std::size_t per_cpu);

}  // namespace corenoise
